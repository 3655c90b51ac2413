"""MEMORY.md's Activation evidence section: the latest checks and the gate's result (R1)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ledger.domain.state import Evidence, State
from ledger.projections.formatting import (
    fmt_sci,
    md_code,
    md_table,
    md_text,
    short_digest,
    short_id,
)
from ledger.projections.memory_layout import heading, join_blocks


def render_activation(state: State, op: str) -> str:
    """Activation evidence: the latest compare and layout checks and the gate's result (R1)."""
    parts = [heading("activation")]
    if state.activated:
        parts.append(
            "Activation **passed** for implementation "
            f"{md_code(short_digest(state.activation_digest))}: every output all_close and "
            "layout check exit 0 (R1)."
        )
    elif state.handed_back:
        problems = "; ".join(md_text(p, 200) for p in state.activation_problems) or "-"
        parts.append(
            "Activation **failed**; control went back to pypto-op-orchestrator (exit 5). "
            f"Problems: {problems}. Nothing else may happen until it passes (R1)."
        )
    else:
        parts.append(
            "Activation has **not passed** yet. Record an E2E tensor compare "
            f"(`tune-ledger evidence compare {op} --output NAME=true|false`) and a layout check "
            f"(`tune-ledger evidence layout {op} --exit-code N`), then `tune-ledger activate {op}` "
            "(R1). No skill may be loaded before it passes (R2)."
        )
    rows = [
        _evidence_row("E2E tensor compare", state.compare, state),
        _evidence_row("layout check", state.layout, state),
    ]
    parts.append(
        md_table(["check", "result", "implementation", "detail", "event", "provenance"], rows)
    )
    return join_blocks(parts)


def _evidence_row(check: str, evidence: Evidence | None, state: State) -> list[str]:
    if evidence is None:
        return [check, "missing", "-", "-", "-", "-"]
    digest = md_code(short_digest(evidence.impl_digest))
    implementation = f"{md_code(evidence.impl_path, 60)} {digest}"
    if state.activation_digest and evidence.impl_digest != state.activation_digest:
        implementation += " (older implementation: does not count)"
    if evidence.exit_code is not None and not evidence.outputs:
        detail = f"exit {evidence.exit_code}"
    else:
        detail = _outputs_text(evidence.outputs)
    return [
        check,
        "pass" if evidence.passed else "**FAIL**",
        implementation,
        detail,
        md_code(short_id(evidence.event)),
        md_text(evidence.origin_level),
    ]


def _outputs_text(outputs: Sequence[Mapping[str, Any]]) -> str:
    if not outputs:
        return "-"
    failing = [o for o in outputs if not o.get("all_close")]
    if len(outputs) > 6:
        if not failing:
            return f"all {len(outputs)} outputs all_close"
        names = ", ".join(md_code(str(o.get("name")), 30) for o in failing[:6])
        return f"{len(failing)} of {len(outputs)} outputs not all_close: {names}"
    items = []
    for output in outputs:
        close = "true" if output.get("all_close") else "false"
        item = f"{md_code(str(output.get('name')), 30)}: all_close {close}"
        max_diff = output.get("max_diff")
        if isinstance(max_diff, int | float):
            item += f", max diff {fmt_sci(float(max_diff))}"
        items.append(item)
    return "; ".join(items)
