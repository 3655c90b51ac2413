"""`measure`: the ledger runs the op's verifier on an attempt's config and records the result.

The command is built from the manifest's verifier template and the attempt's full config, one
argument per template token and no shell (the ledger does the quoting, never the agent). The
verifier runs in its own process group under the manifest's wall-time limit; its memory limit
is handed to it (`{memory_mb}`), since only the verifier knows which of its processes count.
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
import os
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import attrs
from attrs import frozen

from ledger import processes
from ledger.domain import devices
from ledger.domain.configs import canonical_config
from ledger.domain.hints import Fill, Step
from ledger.domain.manifest import Fallback, Manifest, Verifier
from ledger.domain.state import State
from ledger.errors import BadInput
from ledger.log import codec
from ledger.schema.values import CachedRun, Origin
from ledger.shell import harness, measure_cache, runner
from ledger.shell.manifest_file import verifier_digest
from stages import commands as cmd
from stages.binding import attempt_binding_problem, binding_problem, expected_impl_digest

BASELINE = "baseline"  # the label of a plan that measures the target sheet's baseline
_FIX = (
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
    return plan_config(
        manifest,
        attempt.config,
        attempt_id,
        expected_impl_digest(state, attempt),
        root=root,
        op=op,
        python=python,
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
    canonical = canonical_config(config)
    values = _values(manifest, canonical, root=root, op=op, python=python, verifier=verifier)
    return Plan(
        attempt=label,
        config=canonical,
        argv=verifier.command(values),
        cwd=root,
        timeout_s=verifier.timeout_s,
        impl_digest=impl_digest,
        python=python,
    )


def _values(
    manifest: Manifest | None,
    canonical: Mapping[str, Any],
    *,
    root: Path,
    op: str,
    python: str,
    verifier: Verifier,
) -> dict[str, str]:
    """What each placeholder of a command template stands for (ledger/domain/manifest.py)."""
    shape = manifest.p0_shape if manifest is not None else None
    return {
        "python": python,
        "root": os.fspath(root),
        "op": op,
        "op_dir": os.fspath(root / "custom" / op),
        "config": codec.canonical_json(dict(canonical)),
        "shape": codec.canonical_json(list(shape)) if shape else "",
        "timeout_s": f"{verifier.timeout_s:g}",
        "memory_mb": f"{verifier.memory_mb:g}",
    }


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
        else measure_cache.key_material(
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
    key = measure_cache.key_of(material)
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
    except FileNotFoundError as e:
        raise harness.harness_error(
            f"the verifier {plan.argv[0]!r} was not found ({e.strerror})",
            _FIX,
            pending=plan.pending,
        ) from e
    except PermissionError as e:
        raise harness.harness_error(
            f"the verifier {plan.argv[0]!r} is not executable ({e})", _FIX, pending=plan.pending
        ) from e
    code = done.exit_code
    killed = code < 0 and not done.timed_out
    run = runner.command_run(done, plan.recorded_command)
    return Ran(run=run, signal=-code if killed else None)


def result_command(plan: Plan, ran: Ran) -> cmd.Verify | cmd.Fail:
    """The Verify or Fail a run gives, or a harness error naming the plan (R8, R11)."""
    command = harness.command_result(
        plan.attempt, ran.run, ran.signal, plan.timeout_s, _FIX, level="measured"
    )
    if command.origin is None:
        return command
    return attrs.evolve(command, origin=ran.origin(command.origin))


def run_baseline(
    manifest: Manifest,
    label: str,
    impl_digest: str | None,
    *,
    root: Path,
    op: str,
    python: str,
    env: Mapping[str, str] | None = None,
    executor: Executor = run_here,
) -> tuple[Plan, Ran]:
    """Run the verifier on the manifest's baseline config (the target sheet's baseline, the
    activation compare), through the measurement cache, in `env` (default: this process's)."""
    plan = plan_config(
        manifest, manifest.baseline_config, label, impl_digest, root=root, op=op, python=python
    )
    return plan, run(plan, manifest, op=op, python=python, env=env, executor=executor)


@frozen
class MeasuredTarget:
    """R3's next source of a target, measured (issue 29.6): its samples, its source (upstream,
    torch-eager), the run's provenance and what the run says it measured."""

    samples: tuple[float, ...]
    source: str
    origin: Origin
    what: str


def run_fallback(
    manifest: Manifest,
    fallback: Fallback,
    *,
    root: Path,
    op: str,
    python: str,
    env: Mapping[str, str] | None = None,
    executor: Executor = run_here,
) -> MeasuredTarget:
    """Run the fallback's command on the P0 shape (never from the measurement cache: it times
    torch or another kernel on this host) and read its `times_us` (R3, R11). A run that fails
    or prints no times is bad input naming it; nothing is written."""
    values = _values(manifest, {}, root=root, op=op, python=python, verifier=fallback.verifier)
    fallback_plan = Plan(
        attempt=f"target ({fallback.source})",
        config={},
        argv=fallback.verifier.command(values),
        cwd=root,
        timeout_s=fallback.verifier.timeout_s,
        impl_digest=None,
        python=python,
    )
    ran = execute(fallback_plan, env, None, executor)
    run = ran.run
    fix = (
        f"fix SPEC.md's target_fallbacks ({fallback.source}): its command must print one JSON "
        "object with times_us, then run `target --from-spec` again"
    )
    doc = runner.last_json_object(run.output)
    if doc is None and (run.timed_out or ran.signal is not None):
        raise BadInput(
            f"the {fallback.source} reference run did not finish "
            f"({'timed out' if run.timed_out else 'killed'}): no target can be measured",
            rule="R3",
            hint=fix,
        )
    doc = harness.result_document(run, doc, fix, pending=None)
    failure = runner.failure_of(doc)
    if failure is not None:
        raise BadInput(
            f"the {fallback.source} reference run failed ({failure[0]}: {failure[1]})",
            rule="R3",
            hint=fix,
        )
    samples = runner.times_of(doc, fallback_plan.command_line)
    named = doc.get("method")
    what = f"{fallback.source}" + (f", {named}" if isinstance(named, str) else "")
    return MeasuredTarget(
        samples=samples,
        source=fallback.source,
        origin=runner.origin_of_run(run, doc, level="measured"),  # declared in SPEC.md
        what=what,
    )


def baseline_document(plan: Plan, ran: Ran) -> runner.Document:
    """The measurement of the target sheet's baseline; a failed run cannot be a baseline."""
    run = ran.run
    doc = runner.last_json_object(run.output)
    if doc is None and (run.timed_out or ran.signal is not None):
        raise BadInput(
            f"the baseline run did not finish ({'timed out' if run.timed_out else 'killed'}): "
            "no target sheet can be written from it",
            rule="R3",
            hint="fix the baseline config or the verifier's limits in SPEC.md, then run "
            "`target --from-spec` again",
        )
    doc = harness.result_document(run, doc, _FIX, pending=None)
    failure = runner.failure_of(doc)
    if failure is not None:
        raise BadInput(
            f"the baseline run failed ({failure[0]}: {failure[1]}): a baseline is a measured "
            "time of a working kernel",
            rule="R3",
            hint="fix the kernel or SPEC.md's baseline_config, then run `target --from-spec`",
        )
    return runner.Document(
        doc=doc,
        origin=ran.origin(runner.origin_of_run(run, doc, level="measured")),
        source=plan.command_line,
    )


def refuse_unbound_baseline(
    what: str, manifest: Manifest, impl_digest: str | None, doc: dict[str, Any]
) -> None:
    """Refuse a run of the manifest's baseline config whose document names another config or
    kernel (R11): nothing is written from it."""
    bound = runner.binding_of(doc)
    problem = binding_problem(
        what=what,
        expected_config=manifest.baseline_config,
        expected_digest=impl_digest,
        measured_config=bound.config if bound else None,
        measured_digest=bound.impl_digest if bound else None,
        defaults=manifest.defaults(),
    )
    if problem:
        raise BadInput(
            problem + "; nothing was written",
            rule="R11",
            hint="fix the verifier so that it runs the config and kernel it is given",
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
