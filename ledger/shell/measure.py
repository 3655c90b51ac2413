"""`measure`: the ledger runs the op's verifier on an attempt's config and records the result.

The command is built from the manifest's verifier template and the attempt's full config
(ledger/shell/measure_plan.py). The verifier runs in its own process group under the manifest's
wall-time limit; its memory limit is handed to it (`{memory_mb}`), since only the verifier knows
which of its processes count.
Where it runs is the caller's choice (an `Executor`: here by default; the autopilot pins it to
an NPU or sends it to a Ray cluster); what comes back is sorted the same way wherever it ran.

What comes back is sorted three ways (R11):
- a harness error (the verifier could not start, exit 126/127; its usage error, exit 2; its own
  bug, exit 1 without a result; a result that reports an error and measured nothing): refused
  as bad input, nothing written, the attempt stays pending;
- a failure of the kernel (the result names compile, timeout, oom, accuracy, layout or
  runtime, or the verifier ran past its wall-time limit or was killed by a signal): recorded;
- a measurement: recorded with provenance "measured" and the config and implementation digest
  the verifier says it ran, which the stage machine compares with the attempt's (bound).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import attrs
from attrs import frozen

from ledger import processes
from ledger.domain import devices
from ledger.domain.hints import Fill, Step
from ledger.domain.manifest import Manifest
from ledger.domain.state import State
from ledger.errors import BadInput
from ledger.schema.values import CachedRun, Origin
from ledger.shell import harness, measure_cache, measure_key, runner
from ledger.shell.manifest_file import verifier_digest
from ledger.shell.measure_plan import Plan
from stages import commands as cmd
from stages.binding import attempt_binding_problem

VERIFIER_FIX = (
    "fix the verifier (SPEC.md `verifier`), check it with "
    f"{Step('measure', Fill('OP'), dry_run=True)}, then measure again"
)


# `run`'s default `expected_device`: a kept result serves any device (measure-ahead, baselines).
ANY_DEVICE: Any = object()

# Handed to a run's `on_start`: stops that run from another thread (measure-ahead's cancel).
Cancel = Callable[[], None]


class Executor(Protocol):
    """Runs a verifier's argv to its end or a limit, as `processes.run` does, and hands
    `on_start` the means to cancel it. The default runs it here; the autopilot's device pinning
    and Ray farm (tools/devices.py, tools/farm.py) run it on an NPU of this host or a cluster's.
    FileNotFoundError / PermissionError: the program could not start."""

    def __call__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str] | None,
        limits: processes.Limits,
        on_start: Callable[[Cancel], None] | None,
    ) -> processes.Finished: ...


def run_here(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None,
    limits: processes.Limits,
    on_start: Callable[[Cancel], None] | None,
) -> processes.Finished:
    """The default executor: a process of this host, in its own group (its kill is the cancel)."""

    def started(group: int) -> None:
        if on_start is not None:
            on_start(functools.partial(processes.kill_group, group))

    return processes.run(argv, cwd=cwd, env=env, limits=limits, on_start=started)


@frozen
class Ran:
    """One run of a verifier: what really happened (R11); `cached` names the cache entry when
    the run was made earlier and read from the measurement cache."""

    run: runner.CommandRun
    signal: int | None
    cached: CachedRun | None = None
    verifier_digest: str | None = None  # the declared verifier's, as it stood for this run

    def origin(self, origin: Origin) -> Origin:
        """`origin` (of this run) with the verifier's digest, marked as read from the cache
        when it was."""
        return attrs.evolve(
            origin,
            verifier_digest=self.verifier_digest or origin.verifier_digest,
            cached=self.cached or origin.cached,
        )


def run(
    plan: Plan,
    manifest: Manifest | None,
    *,
    op: str,
    python: str = sys.executable,
    env: Mapping[str, str] | None = None,
    on_start: Callable[[Cancel], None] | None = None,
    executor: Executor = run_here,
    expected_device: Any = ANY_DEVICE,
    fresh: bool = False,
) -> Ran:
    """The plan's result: read from the measurement cache when this config ran before with
    everything else equal, else run by `executor` and kept in the cache when the simulator
    decided it (ledger/shell/measure_cache.py). One config is never run twice at once. The
    run carries the declared verifier's digest (R8, R11).

    `expected_device` (the best's device, None: unknown) makes a kept result that names another
    kind of device a miss: the config is measured again here, never served across devices.
    `fresh` measures it again whatever is kept (the best carried to another device)."""
    digest = None if manifest is None else verifier_digest(manifest, plan.cwd, op)
    ran = _run(
        plan, manifest, op=op, python=python, env=env, on_start=on_start, executor=executor,
        expected_device=expected_device, fresh=fresh,
    )  # fmt: skip
    return attrs.evolve(ran, verifier_digest=digest)


def _run(
    plan: Plan,
    manifest: Manifest | None,
    *,
    op: str,
    python: str,
    env: Mapping[str, str] | None,
    on_start: Callable[[Cancel], None] | None,
    executor: Executor,
    expected_device: Any,
    fresh: bool,
) -> Ran:
    folder = measure_cache.folder(env)
    material = (
        None
        if folder is None or manifest is None
        else measure_key.key_material(
            manifest,
            plan.config,
            plan.argv,
            op_dir=plan.cwd / "custom" / op,
            op=op,
            python=python,
            cwd=plan.cwd,
            env=env,
        )
    )
    if folder is None or material is None:
        return execute(plan, env, on_start, executor)
    cache = measure_cache.MeasurementCache(folder)
    key = measure_key.key_of(material)
    with cache.claim(key):
        entry = None if fresh else cache.lookup(key, material)
        if entry is not None and _on_device(entry.run, expected_device):
            return Ran(run=entry.run, signal=entry.signal, cached=entry.source)
        ran = execute(plan, env, on_start, executor)
        cache.store(key, material, ran.run, ran.signal)
        return ran


def _on_device(run: runner.CommandRun, expected: Any) -> bool:
    """True when a kept run may stand for a run on the `expected` device (any, by default)."""
    if expected is ANY_DEVICE:
        return True
    doc = runner.last_json_object(run.output)
    try:
        named = runner.device_of(doc) if doc is not None else None
    except BadInput:
        return False
    return devices.same_kind(named, expected)


def execute(
    plan: Plan,
    env: Mapping[str, str] | None = None,
    on_start: Callable[[Cancel], None] | None = None,
    executor: Executor = run_here,
) -> Ran:
    """Run the plan's argv (no shell) with `executor` (default: in its own process group here)
    under the wall-time limit, in `env` (default: this process's environment); `on_start` is
    handed the run's cancel."""
    try:
        done = executor(
            plan.argv,
            cwd=plan.cwd,
            env=env,
            limits=processes.Limits(wall_s=plan.timeout_s),
            on_start=on_start,
        )
    except (FileNotFoundError, PermissionError) as e:
        why = (
            f"was not found ({e.strerror})"
            if isinstance(e, FileNotFoundError)
            else f"is not executable ({e})"
        )
        raise harness.harness_error(
            f"the verifier {plan.argv[0]!r} {why}", VERIFIER_FIX, pending=plan.pending
        ) from e
    code = done.exit_code
    killed = code < 0 and not done.timed_out
    run = runner.command_run(done, plan.recorded_command)
    return Ran(run=run, signal=-code if killed else None)


def result_command(plan: Plan, ran: Ran) -> cmd.Verify | cmd.Fail:
    """The Verify or Fail a run gives, or a harness error naming the plan (R8, R11)."""
    command = harness.command_result(
        plan.attempt, ran.run, ran.signal, plan.timeout_s, VERIFIER_FIX, level="measured"
    )
    if command.origin is None:
        return command
    return attrs.evolve(command, origin=ran.origin(command.origin))


def refuse_unbound(state: State, command: cmd.Verify | cmd.Fail, defaults: dict[str, Any]) -> None:
    """Raise the decider's R11 refusal for a result bound to something else, judged with the
    manifest's `defaults`, before the manifest or anything else is recorded."""
    if not isinstance(command, cmd.Verify) or command.binding is None:
        return
    attempt = state.attempts[command.attempt]
    problem = attempt_binding_problem(
        state, attempt, command.binding.config, command.binding.impl_digest, defaults
    )
    if problem:
        raise BadInput(
            f"{problem}; nothing was written and attempt {attempt.id} stays pending",
            rule="R11",
            hint="fix the verifier so that it runs the config it is given "
            f"({Step('measure', state.op, dry_run=True)} shows the command)",
        )
