"""`audit OP --remeasure N` (issue 27.8): measure again what the ledger says was measured.

A binding proves which config and kernel a verifier claims it ran, not that its times are
true. Here the manifest's verifier runs again on N measured attempts (the best first, then
the latest measured ones), each on its kept kernel (custom/OP/kernels/, ledger/shell/
kernels.py) and its config, in a temporary copy of the root: the op folder copied with the
kernel written as `<op>_impl.py`, every other entry of the root linked, so the user's files
are never touched. The measurement cache is bypassed (a cached result would be the claim
again). The new samples are compared with the recorded ones by the regression loop's own
comparison and noise policy (stages/remeasure.py `recheck`): within the noise band the
attempt agrees; faster or slower, a now failing run, or a run bound to another config or
kernel disagrees. Nothing is appended to the ledger.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attrs import frozen

from ledger.domain.configs import canonical_config
from ledger.domain.replay import replay
from ledger.errors import BadInput
from ledger.log import safe_files
from ledger.projections.kernels import attempt_kernels
from ledger.shell import kernels
from ledger.shell import measure as measuring
from ledger.shell import measure_plan as planning
from ledger.shell.manifest_file import read_manifest
from stages import commands as cmd
from stages import remeasure as rules
from stages.binding import binding_problem
from stages.policy import effective_policy

if TYPE_CHECKING:
    from ledger.domain.manifest import Manifest
    from ledger.domain.state import State
    from ledger.shell.api import OpLedger

# What is never copied into the temporary op folder: the kept kernels, caches, locks.
_LEFT_OUT = ("kernels", ".tune-ledger-cache", "__pycache__", "*.lock")


@frozen
class Measured:
    """One measured attempt (or the target sheet's baseline) to measure again."""

    attempt: str
    config: dict[str, Any]
    impl_digest: str | None
    times_us: tuple[float, ...]


def chosen(state: State, events_kernels: Mapping[str, str], count: int) -> list[Measured]:
    """The best first (an attempt, or the baseline while no attempt was adopted), then the
    other attempts measured by the ledger, latest first; `count` of them at most."""
    picked: list[Measured] = []
    best = state.best
    if best is not None and best.measurement.origin_level == "measured":
        label = best.attempt or planning.BASELINE
        digest = events_kernels.get(best.attempt) if best.attempt else state.activation_digest
        picked.append(Measured(label, best.config, digest, tuple(best.measurement.times_us)))
    ordered = sorted(state.attempts.values(), key=lambda a: a.seq, reverse=True)
    for attempt in ordered:
        measurement = attempt.measurement
        if (
            attempt.status != "verified"
            or measurement is None
            or measurement.origin_level != "measured"
            or not measurement.times_us
            or any(m.attempt == attempt.id for m in picked)
        ):
            continue
        digest = events_kernels.get(attempt.id)
        picked.append(Measured(attempt.id, attempt.config, digest, tuple(measurement.times_us)))
    return picked[:count]


def remeasure(
    ledger: OpLedger,
    count: int,
    *,
    python: str = sys.executable,
    env: Mapping[str, str] | None = None,
    executor: measuring.Executor = measuring.run_here,
) -> dict[str, Any]:
    """Measure `count` measured attempts again; each one's comparison and whether it agrees."""
    ledger.require()
    manifest = read_manifest(ledger.dir)
    planning.require_verifier(manifest, ledger.op)
    assert manifest is not None  # require_verifier refuses None
    log = ledger.store.read()
    state = replay(log.events)  # audit trusts the ledger's bytes only
    picked = chosen(state, attempt_kernels(log.events), count)
    if not picked:
        raise BadInput(
            f"op {ledger.op!r} has no attempt measured by the ledger to measure again",
            hint=f"`tune-ledger measure {ledger.op}` measures with SPEC.md's verifier",
        )
    policy = effective_policy(state)
    results = [_again(ledger, manifest, m, policy, python, env, executor) for m in picked]
    return {
        "op": ledger.op,
        "remeasured": results,
        "disagree": [r["attempt"] for r in results if not r["agrees"]],
    }


def _again(
    ledger: OpLedger,
    manifest: Manifest,
    measured: Measured,
    policy: Mapping[str, Any],
    python: str,
    env: Mapping[str, str] | None,
    executor: measuring.Executor,
) -> dict[str, Any]:
    if measured.impl_digest is None:
        raise BadInput(
            f"attempt {measured.attempt} is bound to no kernel, so it cannot be measured again",
            hint="re-measure fewer attempts (`--remeasure N`), or measure it again by hand",
        )
    source = kernels.kept(ledger, measured.impl_digest)  # exit 2 missing, 7 edited
    with _copy(ledger, source) as root:
        plan = planning.plan_config(
            manifest,
            measured.config,
            measured.attempt,
            measured.impl_digest,
            root=root,
            op=ledger.op,
            python=python,
        )
        ran = measuring.execute(plan, env, None, executor)
        command = measuring.result_command(plan, ran)
    shown: dict[str, Any] = {
        "attempt": measured.attempt,
        "config": canonical_config(measured.config),
        "impl_digest": measured.impl_digest,
        "recorded_us": list(measured.times_us),
    }
    if isinstance(command, cmd.Fail):
        return {
            **shown,
            "again_us": [],
            "agrees": False,
            "why": f"the verifier now reports a {command.category} failure: {command.detail}",
        }
    problem = None
    if command.binding is not None:
        problem = binding_problem(
            what=f"attempt {measured.attempt}",
            expected_config=measured.config,
            expected_digest=measured.impl_digest,
            measured_config=command.binding.config,
            measured_digest=command.binding.impl_digest,
            defaults=manifest.defaults(),
        )
    comparison = rules.recheck(measured.times_us, command.times_us, policy, measured.attempt)
    agrees = problem is None and rules.agrees(comparison)
    band = (
        f"interval {comparison.low:.3f}..{comparison.high:.3f}"
        if comparison.method == "bootstrap"
        else f"threshold ±{comparison.threshold:g}"
    )
    why = problem or (
        f"median {comparison.attempt_median_us:g} us measured again against "
        f"{comparison.best_median_us:g} us recorded (ratio {comparison.ratio:.3f}, {band}): "
        + ("within the noise band" if agrees else "beyond the noise band")
    )
    return {
        **shown,
        "again_us": list(command.times_us),
        "ratio": comparison.ratio,
        "method": comparison.method,
        "agrees": agrees,
        "why": why,
    }


@contextmanager
def _copy(ledger: OpLedger, kernel: bytes) -> Iterator[Path]:
    """A temporary root: the op folder copied with `kernel` as its implementation, every
    other entry of the root a link to the original (the verifier's own code, a package)."""
    base = Path(tempfile.mkdtemp(prefix="tune-ledger-remeasure-"))
    try:
        root = base / "root"
        op_dir = root / "custom" / ledger.op
        shutil.copytree(
            ledger.dir, op_dir, symlinks=True, ignore=shutil.ignore_patterns(*_LEFT_OUT)
        )
        _relink(ledger.dir, op_dir)
        for entry in ledger.root.iterdir():
            if entry.name != "custom":
                os.symlink(entry.resolve(), root / entry.name)
        impl = op_dir / f"{ledger.op}_impl.py"
        if impl.is_symlink():
            impl.unlink()
        safe_files.replace_file(impl, kernel, root=root, durable_rename=False)
        yield root
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _relink(source: Path, copy: Path) -> None:
    """The links copied from the op folder, pointed at what they lead to in the real root (a
    SPEC.md shared by two ops is `../other/SPEC.md`, which the copy does not hold)."""
    for folder, names, files in os.walk(copy):
        for name in (*names, *files):
            link = Path(folder) / name
            if link.is_symlink():
                original = source / link.relative_to(copy)
                link.unlink()
                os.symlink(os.path.realpath(original), link)
