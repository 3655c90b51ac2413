"""What `measure` will run: the verifier command for a config, one argument per template token
and no shell (the ledger does the quoting, never the agent), and what its result must be bound
to (R11)."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from attrs import frozen

from ledger.domain.configs import canonical_config
from ledger.domain.manifest import Manifest, Verifier
from ledger.domain.state import State
from ledger.errors import BadInput
from ledger.log import codec
from stages.binding import expected_impl_digest

BASELINE = "baseline"  # the label of a plan that measures the target sheet's baseline


@frozen
class Plan:
    """What `measure` will run for one attempt, and what its result must be bound to."""

    attempt: str
    config: dict[str, Any]
    argv: tuple[str, ...]
    cwd: Path
    timeout_s: float
    impl_digest: str | None
    python: str = sys.executable  # the interpreter {python} stood for

    @property
    def recorded_command(self) -> str:
        """The command as the ledger records it, and the measurement cache keeps it: the
        root, the op folder and the interpreter written as their placeholders (issue 27.7)."""
        from ledger.shell.portable import portable

        return portable(self.command_line, self.cwd, self.python)

    @property
    def pending(self) -> str | None:
        """The attempt that stays pending when the run is refused (None: the baseline)."""
        return None if self.attempt == BASELINE else self.attempt

    @property
    def command_line(self) -> str:
        """The exact command, quoted for a POSIX shell (what `--dry-run` prints)."""
        return shlex.join(self.argv)


def require_verifier(manifest: Manifest | None, op: str) -> Verifier:
    """The manifest's verifier; without one, say how to declare it (R11)."""
    if manifest is None or manifest.verifier is None:
        raise BadInput(
            f"custom/{op}/SPEC.md declares no verifier, so the ledger cannot measure",
            rule="R11",
            hint="add `verifier: {command: [...], timeout_s: N}` to SPEC.md's front matter "
            "(docs/DESIGN.md §4), or give the result with `tune-ledger verify`",
        )
    return manifest.verifier


def plan(
    state: State,
    manifest: Manifest | None,
    attempt_id: str,
    *,
    root: Path,
    op: str,
    python: str = sys.executable,
) -> Plan:
    """The verifier command for an attempt's full config."""
    attempt = state.attempts[attempt_id]
    digest = expected_impl_digest(state, attempt)
    return plan_config(
        manifest, attempt.config, attempt_id, digest, root=root, op=op, python=python
    )


def plan_config(
    manifest: Manifest | None,
    config: Mapping[str, Any],
    label: str,
    impl_digest: str | None,
    *,
    root: Path,
    op: str,
    python: str = sys.executable,
) -> Plan:
    """The verifier command for `config` (an attempt's, or the target sheet's baseline)."""
    verifier = require_verifier(manifest, op)
    return command_plan(
        manifest, verifier, config, label, impl_digest, root=root, op=op, python=python
    )


def command_plan(
    manifest: Manifest | None,
    verifier: Verifier,
    config: Mapping[str, Any],
    label: str,
    impl_digest: str | None,
    *,
    root: Path,
    op: str,
    python: str,
) -> Plan:
    """`verifier`'s command template (the verifier's, or a target fallback's) for `config`,
    each placeholder replaced by what it stands for (ledger/domain/manifest.py)."""
    canonical = canonical_config(config)
    shape = manifest.p0_shape if manifest is not None else None
    values = {
        "python": python,
        "root": os.fspath(root),
        "op": op,
        "op_dir": os.fspath(root / "custom" / op),
        "config": codec.canonical_json(canonical),
        "shape": codec.canonical_json(list(shape)) if shape else "",
        "timeout_s": f"{verifier.timeout_s:g}",
        "memory_mb": f"{verifier.memory_mb:g}",
    }
    return Plan(
        attempt=label,
        config=canonical,
        argv=verifier.command(values),
        cwd=root,
        timeout_s=verifier.timeout_s,
        impl_digest=impl_digest,
        python=python,
    )


def dry_run(plan: Plan) -> dict[str, Any]:
    """What `measure --dry-run` prints: the exact command and what it is bound to."""
    return {
        "attempt": plan.attempt,
        "command": plan.command_line,
        "argv": list(plan.argv),
        "cwd": os.fspath(plan.cwd),
        "config": plan.config,
        "impl_digest": plan.impl_digest,
        "timeout_s": plan.timeout_s,
    }
