"""MEMORY.md's managed sections, rendered from the replayed state (DESIGN §4).

`render_sections` is a pure function of the state and the effective policy; `render_memory`
splices its output into the existing file (or a fresh template) and adds a header that records
the ledger position the sections were rendered from and a digest of each section, so that
`check_memory` can tell a stale file (position differs from the ledger) from a hand-edited one
(digest differs from the bytes) without the ledger. Output is deterministic and bounded: long
lists show their most recent rows and summarise the rest, pointing at `tune-ledger log`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from attrs import frozen

from ledger import splice
from ledger.codec import canonical_json
from ledger.errors import BadInput
from ledger.events import STAGES
from ledger.formatting import (
    change_pct,
    fmt_pct,
    fmt_sci,
    fmt_speedup,
    fmt_time_us,
    md_code,
    md_json,
    md_table,
    md_text,
    plural,
    short_digest,
    short_id,
)
from ledger.state import Attempt, Evidence, Point, State

SECTION_ORDER = ("header", "activation", "target-sheet", "status", "adopted", "failed", "history")
TITLES = {
    "header": "tune-ledger header",
    "activation": "Activation evidence",
    "target-sheet": "Performance target sheet",
    "status": "Tuning status",
    "adopted": "Adopted changes",
    "failed": "Failed attempts — do not retry",
    "history": "Recent history",
}

# Bounds that keep MEMORY.md short enough for an agent's context however long the campaign
# runs (1,000 attempts stay under 32 KB); the full history stays in the ledger.
FAILED_ROWS = 25
FAILED_GROUPS = 30
ADOPTED_ROWS = 20
HISTORY_ROWS = 10
POINT_ROWS = 15
NOTES = 5
CELL = 90  # characters of user text or config per table cell
CONFIG = 600  # characters of the best config shown in status

VEC_LIMIT = 64
VEC_DESIGN_RANGE = (16, 64)
CUBE_TABLE: tuple[tuple[str, str], ...] = (
    ("M ≥ 64", "[128,128], [64,256], [256,256]"),
    ("32 ≤ M ≤ 63", "[64,64], [64,256], [128,128]"),
    ("16 ≤ M ≤ 31", "[16,16], [16,K], [128,128]"),
    ("M = 1", "[16,16], [16,K,256], [256,256]"),
)
TARGET_SOURCES = {
    "spec": "the SPEC.md performance budget",
    "upstream": "a measured comparable upstream kernel",
    "torch-eager": "measured torch eager on the NPU",
}
FAILURE_ORDER = ("rollback", "accuracy", "layout", "compile", "timeout", "oom", "runtime")
OUTCOME_ORDER = ("adopt", "target-reached", "no-gain", *FAILURE_ORDER, "abandoned", "pending")

_RENDERED = re.compile(
    r"<!-- tune-ledger:rendered-from op=(?P<op>\S+) events=(?P<events>\d+) "
    r"last=(?P<last>[0-9a-f]+|-) -->"
)
_DIGESTS = re.compile(r"<!-- tune-ledger:digest (?P<pairs>[a-z0-9=\- ]*) -->")
_DIGEST_PREFIX = "<!-- tune-ledger:digest "
_OP_SAFE = re.compile(r"[^A-Za-z0-9_.-]")
# The defaults of stages.policy, used only when a policy lacks the key (e.g. in a unit test).
_PATIENCE = {"frontend": 5, "swimlane": 8, "incore": 5}
_STAGE_INDEX: dict[str, int] = {stage: i for i, stage in enumerate(STAGES)}


@frozen
class Position:
    """Where in the ledger a rendering comes from: how many events, and the last one's id."""

    events: int
    last: str

    def describe(self) -> str:
        """`57 events, last 0123456789ab`."""
        return f"{plural(self.events, 'event')}, last {short_id(self.last or None)}"


# --- the attempts in order, with what they were compared with -------------------------------


@frozen
class Step:
    """An attempt with the best config and time it was measured against."""

    attempt: Attempt
    best_config: dict[str, Any]
    best_us: float | None


def baseline_config(state: State) -> dict[str, Any]:
    """The config the baseline was measured with (the first best, DESIGN §5)."""
    for config, measured_by in state.measured_configs.items():
        if measured_by == "baseline":
            value = json.loads(config)
            return value if isinstance(value, dict) else {}
    if state.best is not None and state.best.attempt is None:
        return dict(state.best.config)
    return {}


def steps(state: State, attempts: Iterable[Attempt] | None = None) -> list[Step]:
    """Every attempt in the order it started, with the best it was compared with (R8).

    `attempts` defaults to the state's own; they are ordered by their sequence number.
    """
    best_config = baseline_config(state)
    best_us = state.target.baseline_us if state.target else None
    out: list[Step] = []
    chosen = state.attempts.values() if attempts is None else attempts
    for attempt in sorted(chosen, key=lambda a: a.seq):
        compared = (attempt.verdict_data or {}).get("best_median_us")
        before = float(compared) if isinstance(compared, int | float) else best_us
        out.append(Step(attempt, best_config, before))
        if attempt.verdict in ("adopt", "target-reached") and attempt.failure is None:
            best_config = attempt.config
            if attempt.measurement is not None:
                best_us = attempt.measurement.median_us
    return out


def outcome(attempt: Attempt) -> str:
    """`pending`, `abandoned`, the failure category, or the verdict."""
    if attempt.status in ("pending", "abandoned"):
        return attempt.status
    if attempt.failure:
        return attempt.failure
    return attempt.verdict or attempt.status


def is_failed(attempt: Attempt) -> bool:
    """True for a failed or rolled-back attempt (the seed's "do not retry" list)."""
    return attempt.failure is not None or attempt.verdict == "rollback"


def config_diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """The keys of `after` that differ from `before`, as `key=json`; removed keys as `-key`."""
    parts = [
        f"{key}={canonical_json(after[key])}"
        for key in sorted(after)
        if key not in before or canonical_json(before[key]) != canonical_json(after[key])
    ]
    parts += [f"-{key}" for key in sorted(before) if key not in after]
    return ", ".join(parts) or "(same config)"


def change_text(step: Step, limit: int = CELL) -> str:
    """What an attempt changed, as Markdown for one table cell."""
    attempt = step.attempt
    if attempt.kind == "mutation":
        return md_code(f"{attempt.param}={canonical_json(attempt.value)}", limit)
    if attempt.kind == "algorithm":
        text = "algorithm: " + md_text(attempt.description or "", limit)
        if attempt.impl_digest:
            text += f" (impl {md_code(short_digest(attempt.impl_digest))})"
        return text
    prior = md_text(attempt.prior or "unknown prior", 40)
    return f"candidate ({prior}): {md_code(config_diff(step.best_config, attempt.config), limit)}"


def time_text(step: Step) -> str:
    """The attempt's median time and its change against the best it was compared with."""
    measurement = step.attempt.measurement
    if measurement is None:
        return "-"
    text = fmt_time_us(measurement.median_us)
    if step.best_us:
        text += f" ({fmt_pct(change_pct(measurement.median_us, step.best_us), signed=True)})"
    return text


def _point(name: str | None) -> str:
    return md_code(name, 40) if name else "-"


def _policy_number(policy: Mapping[str, Any], key: str, default: float) -> float:
    value = policy.get(key, default)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else (
        default
    )


def patience(policy: Mapping[str, Any], stage: str) -> int | None:
    """N: consecutive mutants without gain that exhaust a point of `stage` (R7 policy)."""
    default = _PATIENCE.get(stage)
    value = int(_policy_number(policy, f"patience.{stage}", default or 0))
    return value or None


def alternates(state: State, policy: Mapping[str, Any]) -> list[Attempt]:
    """The runner-up candidates (policy `alternates`) of the latest point with candidates (R7).

    Valid candidates only (failed ones are never compared), fastest first, the best excluded.
    """
    keep = int(_policy_number(policy, "alternates", 3))
    candidates = [a for a in state.attempts.values() if a.kind == "candidate"]
    if not candidates or keep <= 0:
        return []
    latest = max(candidates, key=lambda a: a.seq)
    best = state.best.attempt if state.best else None
    valid = [
        a for a in candidates
        if a.point == latest.point and a.stage == latest.stage and a.id != best
        and a.status == "verified" and a.failure is None and a.measurement is not None
    ]
    valid.sort(key=lambda a: (a.measurement.median_us if a.measurement else 0.0, a.seq))
    return valid[:keep]


# --- sections -------------------------------------------------------------------------------


def _heading(name: str) -> str:
    return f"## {TITLES[name]}\n"


def _blocks(parts: Sequence[str]) -> str:
    """Markdown blocks separated by one blank line, ending in one newline."""
    return "\n".join(part.rstrip("\n") + "\n" for part in parts if part)


def render_activation(state: State, op: str = "OP") -> str:
    """Activation evidence: the latest compare and layout checks and the gate's result (R1)."""
    parts = [_heading("activation")]
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
    parts.append(md_table(
        ["check", "result", "implementation", "detail", "event", "provenance"], rows
    ))
    return _blocks(parts)


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


def render_target_sheet(state: State, op: str = "OP") -> str:
    """The Performance target sheet: baseline, target, speed-up, tile limits, relaxations (R3)."""
    parts = [_heading("target-sheet")]
    sheet = state.target
    if sheet is None:
        parts.append(
            "Not written yet. On first activation write it before any tune skill is loaded or "
            f"any stage entered (R3): `tune-ledger target {op} --baseline TIME --shape SHAPE "
            "--target TIME --target-source spec|upstream|torch-eager`."
        )
        return _blocks(parts)
    tool = md_code(sheet.tool, 60) if sheet.tool else "a tool not recorded"
    reference = f" ({md_text(sheet.source_ref, CELL)})" if sheet.source_ref else ""
    vec = _vec_limit(state)
    rows = [
        ["Baseline", fmt_time_us(sheet.baseline_us),
         f"measured on the P0 shape {md_code(sheet.shape, 60)} with {tool} "
         f"(provenance: {md_text(sheet.origin_level)})"],
        ["Target", fmt_time_us(sheet.target_us),
         f"{TARGET_SOURCES.get(sheet.target_source, md_text(sheet.target_source))}{reference}; "
         "precedence: SPEC budget, else upstream kernel, else torch eager"],
        ["Required speedup", fmt_speedup(sheet.required_speedup),
         "Baseline / Target: how many times faster the kernel must become (the seed's "
         "\"Target / Baseline\" is inverted)"],
        ["Metric", md_text(sheet.metric, 60), "the execution time every verdict compares"],
        ["Vec tile upper limit", vec,
         f"each vec tile axis; design range [{VEC_DESIGN_RANGE[0]}, {VEC_DESIGN_RANGE[1]}]"],
        ["Cube tile shapes", _cube_limit(state), "M-based table (`[mL0,mL1]` etc.)"],
    ]
    parts.append(md_table(["field", "value", "source"], rows))
    if not state.relaxations:
        parts.append(
            "Relaxations: none. A config beyond an unrelaxed limit is refused (R3); relax a "
            f"limit only with its basis in profiling data: `tune-ledger relax {op} --what "
            "vec|cube --limit VALUE --basis TEXT`."
        )
    else:
        parts.append("Relaxations, each with its basis (R3):\n")
        parts.append(md_table(
            ["#", "tile", "new limit", "basis", "event"],
            [
                [str(i), md_text(r.what), md_json(r.limit, 60), md_text(r.basis, 200),
                 md_code(short_id(r.event))]
                for i, r in enumerate(state.relaxations, 1)
            ],
            align="rllll",
        ))
    return _blocks(parts)


def _vec_limit(state: State) -> str:
    relaxed = [r for r in state.relaxations if r.what == "vec"]
    if relaxed:
        return f"relaxed: {md_json(relaxed[-1].limit, 60)} (see the relaxations below)"
    return f"≤ {VEC_LIMIT} per axis"


def _cube_limit(state: State) -> str:
    sheet = state.target
    relaxed = [r for r in state.relaxations if r.what == "cube"]
    if relaxed:
        return f"relaxed: {md_json(relaxed[-1].limit, 80)} (see the relaxations below)"
    m = sheet.cube_m if sheet else None
    if m is None:
        rows = "; ".join(f"{when}: {shapes}" for when, shapes in CUBE_TABLE)
        return f"M not recorded, so not applied. Table: {rows}"
    row = _cube_row(m)
    if row is None:
        return f"M = {m}: no row of the table applies"
    return f"M = {m} ({row[0]}): {row[1]}"


def _cube_row(m: int) -> tuple[str, str] | None:
    if m >= 64:
        return CUBE_TABLE[0]
    if 32 <= m <= 63:
        return CUBE_TABLE[1]
    if 16 <= m <= 31:
        return CUBE_TABLE[2]
    if m == 1:
        return CUBE_TABLE[3]
    return None


def render_status(state: State, policy: Mapping[str, Any], op: str = "OP") -> str:
    """Tuning status: stage, skills, pending attempt, best, target, stop, points, alternates."""
    parts = [_heading("status")]
    lines = [
        f"- Stages: {_stages_text(state)}",
        "- Skills loaded: "
        + (", ".join(md_code(s, 40) for s in state.skills) or "none")
        + " (at most 2 base + 1 tune skill, R2)",
        f"- Pending attempt: {_pending_text(state)}",
        f"- Best: {_best_text(state)}",
        f"- Target: {_target_text(state)}",
        f"- Stop: {_stop_text(state, policy)}",
        f"- Attempts: {counts_text(state)}",
    ]
    if state.best is not None:
        lines.append(f"- Best config: {md_json(state.best.config, CONFIG, in_table=False)}")
    if state.overrides:
        lines.append(f"- Retry overrides (R9): {len(state.overrides)}, listed by "
                     f"`tune-ledger audit {op}`")
    if state.repairs:
        lines.append(f"- Ledger repairs: {plural(len(state.repairs), 'torn tail')} quarantined "
                     f"(see `tune-ledger audit {op}`)")
    lines.extend(f"- **Merge conflict**: {md_text(c, 200)}" for c in state.conflicts)
    lines.append(f"- Next: `tune-ledger resume {op}` lists the steps allowed now.")
    parts.append("\n".join(lines) + "\n")
    parts.append("### Optimization points\n\n" + points_table(state, policy, POINT_ROWS))
    alternates_md = _alternates_table(state, policy)
    if alternates_md:
        parts.append(alternates_md)
    return _blocks(parts)


def _stages_text(state: State) -> str:
    if not state.entered:
        return "none entered yet (frontend → swimlane → incore → algorithm, R4)"
    items = []
    for stage in state.entered:
        if stage in state.exited:
            items.append(f"{stage} (exited: {md_text(state.exited[stage])})")
        else:
            items.append(f"**{stage}** (current)")
    return " → ".join(items)


def _pending_text(state: State) -> str:
    if state.pending is None:
        return "none"
    attempt = state.attempts.get(state.pending)
    if attempt is None:
        return md_code(state.pending)
    step = Step(attempt, state.best.config if state.best else {}, None)
    where = f" in point {_point(attempt.point)}" if attempt.point else ""
    return (f"{md_code(attempt.id)}: {attempt.kind} {change_text(step)}{where}; verify, fail "
            "or abandon it before anything else (R6)")


def _best_text(state: State) -> str:
    best = state.best
    if best is None:
        return "none yet (the baseline becomes the first best when the target sheet is written)"
    source = f"attempt {md_code(best.attempt)}" if best.attempt else "the baseline"
    text = f"**{fmt_time_us(best.time_us)}** from {source}"
    if state.target is not None and best.attempt:
        speedup = fmt_speedup(state.target.baseline_us / best.time_us)
        text += f", a speed-up of {speedup} over the baseline"
    m = best.measurement
    metrics = [f"{label} {fmt_pct(value)}" for label, value in
               (("core utilization", m.util_pct), ("bubble rate", m.bubble_pct))
               if value is not None]
    return text + "".join(f"; {metric}" for metric in metrics)


def _target_text(state: State) -> str:
    sheet = state.target
    if sheet is None:
        return "not set (no target sheet)"
    text = fmt_time_us(sheet.target_us)
    if state.best is None:
        return text
    best = state.best.time_us
    gap = change_pct(best, sheet.target_us)
    if best <= sheet.target_us:
        return f"{text}, **met** (best is {fmt_pct(-gap)} below it)"
    return (f"{text}, not met: best is {fmt_pct(gap)} above it (a further "
            f"{fmt_speedup(best / sheet.target_us)} is needed)")


def _stop_text(state: State, policy: Mapping[str, Any]) -> str:
    if state.stopped is None:
        util = _policy_number(policy, "util_stop_pct", 80.0)
        bubble = _policy_number(policy, "bubble_stop_pct", 10.0)
        return (f"running; tuning stops when the target is met, when core utilization > "
                f"{util:g}% and bubble rate < {bubble:g}%, or when the user stops it (R10)")
    detail = f": {md_text(state.stop_detail, 200)}" if state.stop_detail else ""
    return f"**stopped ({md_text(state.stopped)})**{detail}; further tuning steps are refused"


def counts_text(state: State) -> str:
    counts: dict[str, int] = {}
    for attempt in state.attempts.values():
        key = outcome(attempt)
        counts[key] = counts.get(key, 0) + 1
    known = [k for k in OUTCOME_ORDER if counts.get(k)]
    other = sorted(k for k in counts if k not in OUTCOME_ORDER)
    detail = ", ".join(f"{k} {counts[k]}" for k in known + other)
    return f"{len(state.attempts)}" + (f" ({detail})" if detail else "")


def points_table(state: State, policy: Mapping[str, Any], limit: int | None = None) -> str:
    """The optimization points with their state and no-gain streaks (R7), as Markdown.

    With a `limit`, only the current stage's most recent `limit` points (and any open one)
    get a row; the others are counted per stage under the table.
    """
    if not state.points:
        return "None opened yet (R7).\n"
    points = sorted(state.points.values(),
                    key=lambda p: _STAGE_INDEX.get(p.stage, len(_STAGE_INDEX)))
    shown = points
    if limit is not None:
        current = [p for p in points if p.stage == state.stage or p.is_open]
        shown = current[-limit:] if current else points[-limit:]
    rows = [_point_row(point, policy) for point in shown]
    table = md_table(
        ["stage", "point", "state", "candidates", "mutations", "no-gain streak", "attempts"],
        rows,
        align="lllrrrr",
    )
    text = ("A point is exhausted after N consecutive mutants without gain; failures do not "
            "count (R7).\n\n" + table)
    rest = [p for p in points if p not in shown]
    if rest:
        summary = []
        for stage in dict.fromkeys(p.stage for p in rest):
            members = [p for p in rest if p.stage == stage]
            outcomes: dict[str, int] = {}
            for point in members:
                key = "open" if point.is_open else point.outcome or "closed"
                outcomes[key] = outcomes.get(key, 0) + 1
            detail = ", ".join(f"{k} {outcomes[k]}" for k in sorted(outcomes))
            summary.append(f"{stage} {plural(len(members), 'point')} ({detail})")
        text += "\nNot listed: " + "; ".join(summary) + ".\n"
    return text


def _point_row(point: Point, policy: Mapping[str, Any]) -> list[str]:
    limit = patience(policy, point.stage)
    if point.is_open:
        condition = "**open**"
    else:
        condition = md_text(point.outcome or "closed")
        if point.reason:
            condition += ": " + md_text(point.reason, 60)
    return [
        point.stage,
        _point(point.name),
        condition,
        str(point.candidates),
        str(point.mutations),
        f"{point.streak} / {limit}" if limit else str(point.streak),
        str(len(point.attempts)),
    ]


def _alternates_table(state: State, policy: Mapping[str, Any]) -> str:
    chosen = alternates(state, policy)
    if not chosen:
        return ""
    best_config = state.best.config if state.best else {}
    best_us = state.best.time_us if state.best else None
    rows = []
    for attempt in chosen:
        step = Step(attempt, best_config, best_us)
        rows.append([md_code(attempt.id), _point(attempt.point), time_text(step),
                     md_code(config_diff(best_config, attempt.config), CELL)])
    return ("### Alternates\n\nThe best valid candidates besides the best (R7), as changes to "
            "the best config:\n\n"
            + md_table(["attempt", "point", "time (vs best)", "config vs best"], rows))


def render_adopted(state: State, op: str = "OP", walk: Sequence[Step] | None = None) -> str:
    """Adopted changes from the baseline to the best, most recent last (R8)."""
    parts = [_heading("adopted")]
    adopted = [s for s in (steps(state) if walk is None else walk)
               if s.attempt.verdict in ("adopt", "target-reached") and s.attempt.failure is None]
    sheet = state.target
    if not adopted:
        parts.append(f"None yet: the best is still the baseline ({fmt_time_us(sheet.baseline_us)})."
                     if sheet else "None yet.")
        return _blocks(parts)
    if sheet is not None and state.best is not None:
        parts.append(
            f"Baseline {fmt_time_us(sheet.baseline_us)} → best {fmt_time_us(state.best.time_us)} "
            f"({fmt_speedup(sheet.baseline_us / state.best.time_us)}) in "
            f"{plural(len(adopted), 'adoption')}."
        )
    shown = adopted[-ADOPTED_ROWS:]
    rows = []
    if len(shown) == len(adopted):
        rows.append(["0", "baseline", "-", "-", md_json(baseline_config(state), CELL),
                     fmt_time_us(sheet.baseline_us if sheet else None)])
    else:
        earlier = len(adopted) - len(shown)
        parts.append(
            f"The {len(shown)} most recent are listed; {plural(earlier, 'earlier adoption')} "
            f"are in `tune-ledger log {op} --verdict adopt`."
        )
    first = len(adopted) - len(shown) + 1
    for number, step in enumerate(shown, first):
        rows.append([str(number), md_code(step.attempt.id), step.attempt.stage,
                     _point(step.attempt.point), change_text(step), time_text(step)])
    parts.append(md_table(["#", "attempt", "stage", "point", "change", "time (vs best then)"],
                          rows, align="rlllll"))
    return _blocks(parts)


def render_failed(state: State, op: str = "OP", walk: Sequence[Step] | None = None) -> str:
    """Every failed or rolled-back attempt: the ledger refuses to retry them (R8, R9)."""
    parts = [_heading("failed")]
    all_steps = steps(state) if walk is None else walk
    failed = [s for s in all_steps if is_failed(s.attempt)]
    no_gain = sum(1 for s in all_steps if s.attempt.verdict == "no-gain"
                  and s.attempt.failure is None)
    if not failed:
        parts.append("None yet. A failed or rolled-back attempt is listed here, and the ledger "
                     "refuses to measure its config again (R9, exit 4).")
    else:
        shown = failed[-FAILED_ROWS:]
        intro = (f"{plural(len(failed), 'attempt')} failed or were rolled back; the ledger "
                 "refuses to measure the same config again (R9, exit 4).")
        if len(shown) < len(failed):
            intro += (f" The {len(shown)} most recent are listed (oldest first), the "
                      f"{len(failed) - len(shown)} earlier ones are grouped below; every one "
                      f"is in `tune-ledger log {op} --verdict rollback`.")
        parts.append(intro)
        parts.append(md_table(
            ["attempt", "stage", "point", "change", "outcome", "reason"],
            [[md_code(s.attempt.id), s.attempt.stage, _point(s.attempt.point), change_text(s),
              outcome(s.attempt), reason_text(s)] for s in shown],
        ))
        earlier = failed[: len(failed) - len(shown)]
        if earlier:
            parts.append(failed_groups(earlier, op))
    if no_gain:
        parts.append(f"Also measured without gain (not retried either, R9): "
                     f"{plural(no_gain, 'attempt')}; `tune-ledger log {op} --verdict no-gain`.")
    return _blocks(parts)


def reason_text(step: Step) -> str:
    attempt = step.attempt
    if attempt.failure is None and attempt.measurement is not None:
        return f"slower: {time_text(step)} vs best {fmt_time_us(step.best_us)}"
    detail = md_text(attempt.detail, CELL) if attempt.detail else ""
    if attempt.measurement is not None and attempt.failure in ("accuracy", "layout"):
        m = attempt.measurement
        check = f"layout exit {m.layout_exit}" if attempt.failure == "layout" else "not all_close"
        return f"{check}; {detail}" if detail else check
    return detail or "-"


def _group_key(attempt: Attempt) -> tuple[str, str]:
    if attempt.kind == "mutation":
        return attempt.stage, f"param {md_code(attempt.param or '?', 40)}"
    if attempt.kind == "candidate":
        return attempt.stage, f"candidates from {md_text(attempt.prior or 'unknown prior', 40)}"
    return attempt.stage, "algorithm ideas" if attempt.kind == "algorithm" else attempt.kind


def _idea(step: Step) -> str:
    """What a failed attempt tried, as a key: equal keys are the same idea in a group."""
    attempt = step.attempt
    if attempt.kind == "mutation":
        return canonical_json(attempt.value)
    if attempt.kind == "algorithm":
        return attempt.description or ""
    return attempt.id  # a candidate's full config is never measured twice (R9)


def _example(step: Step) -> str:
    attempt = step.attempt
    if attempt.kind == "mutation":
        return md_code(canonical_json(attempt.value), 30)
    if attempt.kind == "algorithm":
        return md_text(attempt.description or "", 50)
    return md_code(config_diff(step.best_config, attempt.config), 50)


# How many distinct ideas a group shows, by the kind of its attempts (cells stay short).
_EXAMPLES = {"mutation": 6, "algorithm": 3, "candidate": 2}


def failed_groups(earlier: Sequence[Step], op: str) -> str:
    """Earlier failures grouped by stage and what was changed, with the values tried (R9)."""
    groups: dict[tuple[str, str], list[Step]] = {}
    for step in earlier:
        groups.setdefault(_group_key(step.attempt), []).append(step)
    keys = sorted(groups, key=lambda k: (_STAGE_INDEX.get(k[0], len(_STAGE_INDEX)),
                                         groups[k][0].attempt.seq))
    shown, hidden = keys[:FAILED_GROUPS], keys[FAILED_GROUPS:]
    rows = []
    for key in shown:
        members = groups[key]
        counts: dict[str, int] = {}
        for step in members:
            counts[outcome(step.attempt)] = counts.get(outcome(step.attempt), 0) + 1
        outcomes = ", ".join(f"{k} {counts[k]}" for k in sorted(
            counts, key=lambda k: (FAILURE_ORDER.index(k) if k in FAILURE_ORDER else 99, k)))
        distinct = list(dict.fromkeys(_idea(step) for step in reversed(members)))
        keep = _EXAMPLES.get(members[0].attempt.kind, 2)
        shown_steps: dict[str, Step] = {}
        for step in reversed(members):
            idea = _idea(step)
            if idea in distinct[:keep] and idea not in shown_steps:
                shown_steps[idea] = step
        examples = [_example(shown_steps[idea]) for idea in distinct[:keep]]
        if len(distinct) > keep:
            examples.append(f"+{len(distinct) - keep} more")
        rows.append([key[0], key[1], str(len(members)), outcomes, ", ".join(examples)])
    text = (
        "### Earlier failed attempts, grouped\n\n"
        "By stage and what was changed; values most recent first.\n\n"
        + md_table(["stage", "change", "count", "outcomes", "values tried"], rows,
                   align="llrll")
    )
    if hidden:
        count = sum(len(groups[k]) for k in hidden)
        text += (f"\n{plural(len(hidden), 'more group')} ({plural(count, 'attempt')}) are in "
                 f"`tune-ledger log {op} --verdict rollback`.\n")
    return text


def render_history(state: State, op: str = "OP", walk: Sequence[Step] | None = None) -> str:
    """The most recent attempts and notes; the full history is `tune-ledger log`."""
    parts = [_heading("history")]
    recent = list(steps(state) if walk is None else walk)[-HISTORY_ROWS:]
    if not recent:
        parts.append("No attempts yet.")
    else:
        parts.append(f"The {plural(len(recent), 'most recent attempt')} (oldest first); the "
                     f"full history: `tune-ledger log {op}`.")
        parts.append(md_table(
            ["#", "attempt", "stage", "point", "change", "result", "time (vs best then)"],
            [[str(s.attempt.seq), md_code(s.attempt.id), s.attempt.stage,
              _point(s.attempt.point), change_text(s), outcome(s.attempt), time_text(s)]
             for s in recent],
            align="rllllll",
        ))
    if state.notes:
        shown = state.notes[-NOTES:]
        head = "### Notes recorded in the ledger"
        if len(shown) < len(state.notes):
            head += f" (the {len(shown)} most recent of {len(state.notes)})"
        parts.append(head + "\n\n" + "\n".join(f"- {md_text(n, 300)}" for n in shown) + "\n")
    return _blocks(parts)


def render_sections(state: State, policy: Mapping[str, Any]) -> dict[str, str]:
    """The bodies of the managed sections (all but the header) for `state`, LF line ends."""
    op = _op_name(state.op)
    walk = steps(state)
    bodies = {
        "activation": render_activation(state, op),
        "target-sheet": render_target_sheet(state, op),
        "status": render_status(state, policy, op),
        "adopted": render_adopted(state, op, walk),
        "failed": render_failed(state, op, walk),
        "history": render_history(state, op, walk),
    }
    return {name: _ending(body) for name, body in bodies.items()}


def _ending(body: str) -> str:
    return body.rstrip("\n") + "\n"


def _op_name(op: str | None) -> str:
    return _OP_SAFE.sub("_", op) if op else "OP"


# --- the header: position and digests -------------------------------------------------------


def section_digest(name: str, body: str) -> str:
    """A short digest of one managed body (LF line ends); the header records one per section."""
    data = f"{name}\n{splice.normalize_newlines(body)}".encode()
    return hashlib.sha256(data).hexdigest()[:12]


def _header_digest_body(body: str) -> str:
    lines = splice.split_lines(splice.normalize_newlines(body))
    return "".join(line for line in lines if not line.startswith(_DIGEST_PREFIX))


def render_header(op: str | None, position: Position, sections: Mapping[str, str]) -> str:
    """The header body: the ledger position rendered from, a digest per section, a notice."""
    name = _op_name(op)
    rendered = (f"<!-- tune-ledger:rendered-from op={name} events={position.events} "
                f"last={position.last or '-'} -->\n")
    notice = (
        f"> Generated by tune-ledger from `custom/{name}/events.jsonl`: the sections between the\n"
        "> `tune-ledger` markers are rewritten after every ledger command, so edit only outside\n"
        f"> them. The full history is in the ledger: `tune-ledger log {name}`.\n"
    )
    digests = {"header": section_digest("header", rendered + notice)}
    digests.update({n: section_digest(n, sections[n]) for n in SECTION_ORDER if n in sections})
    pairs = " ".join(f"{n}={d}" for n, d in digests.items())
    return rendered + f"{_DIGEST_PREFIX}{pairs} -->\n" + notice


def render_memory(
    existing_text: str | None,
    state: State,
    policy: Mapping[str, Any],
    position: Position,
) -> str:
    """MEMORY.md with its managed sections rendered from `state`; other bytes kept (DESIGN §4).

    Without an existing file a fresh template is used. Raises BadInput when the existing
    file's markers are malformed (with line numbers and what to do).
    """
    sections = render_sections(state, policy)
    bodies = {"header": render_header(state.op, position, sections), **sections}
    text = existing_text
    if text is None:
        text = splice.template(_op_name(state.op), SECTION_ORDER)
    return splice.splice(text, bodies, SECTION_ORDER)


def check_memory(text: str, position: Position) -> list[str]:
    """Findings about MEMORY.md against the ledger position: stale, hand-edited, missing."""
    try:
        found = splice.find_sections(text)
    except BadInput as error:
        return [f"{error.message}; {error.hint}" if error.hint else error.message]
    if not found:
        return ["no managed sections; run `tune-ledger render OP` to add them"]
    sections = {s.name: s for s in found}
    bodies = {s.name: splice.normalize_newlines(s.body) for s in found}
    op = "OP"
    findings: list[str] = []
    header = bodies.get("header")
    rendered = _RENDERED.search(header) if header is not None else None
    digests = _DIGESTS.search(header) if header is not None else None
    if rendered is not None:
        op = rendered.group("op")
    render_hint = f"run `tune-ledger render {op}`"
    for name in SECTION_ORDER:
        if name not in sections:
            findings.append(f"managed section {name!r} ({TITLES[name]}) is missing; "
                            f"{render_hint}")
    for name, section in sections.items():
        if name not in SECTION_ORDER:
            findings.append(f"line {section.line}: unknown managed section {name!r}; delete it "
                            f"(markers included), then {render_hint}")
    if header is None:
        return findings
    if rendered is None or digests is None:
        findings.append(f"line {sections['header'].line}: the managed header does not record "
                        f"the ledger position and digests; {render_hint}")
        return findings
    recorded = dict(
        pair.split("=", 1) for pair in digests.group("pairs").split() if "=" in pair
    )
    for name in SECTION_ORDER:
        if name not in bodies:
            continue
        body = _header_digest_body(bodies[name]) if name == "header" else bodies[name]
        if recorded.get(name) != section_digest(name, body):
            findings.append(
                f"line {sections[name].line}: managed section {name!r} was edited by hand (it "
                "no longer matches the digest in the header); move your text outside the "
                f"markers, then {render_hint}"
            )
    events = int(rendered.group("events"))
    last = rendered.group("last")
    last = "" if last == "-" else last
    if (events, last) != (position.events, position.last):
        was = Position(events, last)
        findings.append(f"stale: rendered from {was.describe()}, but the ledger has "
                        f"{position.describe()}; {render_hint}")
    return findings
