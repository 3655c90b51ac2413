"""The workflows that measure through the op manifest (SPEC.md), as library calls: `measure` an
attempt, write the target sheet `from the spec`, record the activation evidence `from the spec`.

Each reads the manifest, runs the op's verifier or layout check (through the one process
runner, ledger/processes.py, and the measurement cache where it applies), turns what ran into one
protocol command and appends it with `OpLedger.execute`. `OpLedger.measure`, `.target_from_spec`
and `.evidence_from_spec` expose them; the CLI, the MCP server (which runs the CLI in its own
process) and the autopilot call them, so nothing shells out to `tune-ledger`. A retried
idempotency key returns the original result before anything runs again (DESIGN §5).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict

import attrs
from attrs import frozen

from ledger.domain import inputs
from ledger.domain.hints import Step
from ledger.domain.samples import median
from ledger.errors import BadInput
from ledger.log import codec
from ledger.projections.attempt_rows import resolve_attempt
from ledger.shell import harness, layout_check, measure_target, runner
from ledger.shell import measure as measuring
from ledger.shell import measure_plan as planning
from ledger.shell.manifest_file import file_digest_of, read_manifest
from stages import commands as cmd
from stages.remeasure import DEVICE_PRIOR
from stages.stop import stopped_refusal

if TYPE_CHECKING:
    from ledger.domain.manifest import Manifest
    from ledger.shell.api import OpLedger, StepResult

EvidenceKind = Literal["compare", "layout"]
EVIDENCE_LABEL = "evidence"  # the label of a verifier run that belongs to no attempt
_FIX_KERNEL = (
    "hand back to pypto-op-orchestrator: accuracy is not frozen until the baseline config "
    "builds and runs (fix the kernel, then record the evidence again)"
)


class Running(TypedDict, total=False):
    """How a workflow runs the op's commands, and who asks (the OpLedger methods' options)."""

    python: str  # the interpreter the verifier template's {python} stands for
    env: Mapping[str, str] | None  # the processes' environment (default: this process's)
    executor: measuring.Executor  # where the verifier runs (default: a process here)
    invocation: Invocation


@frozen
class Invocation:
    """Who asks, as idempotency and provenance record it: the idempotency key, the request it
    stands for (default: a digest of the workflow's own arguments; the CLI gives the digest
    of its command line, so a key retried through the CLI matches), the command line."""

    key: str | None = None
    request: str | None = None
    command_line: str | None = None


def measure_plan(ledger: OpLedger, attempt: str | None = None, *, python: str) -> planning.Plan:
    """What `measure` would run for `attempt` (an id, a unique prefix; None: the pending one)."""
    ledger.require()
    return _plan(ledger, read_manifest(ledger.dir), attempt, python)


def measure(
    ledger: OpLedger,
    attempt: str | None = None,
    *,
    python: str = sys.executable,
    env: Mapping[str, str] | None = None,
    executor: measuring.Executor = measuring.run_here,
    invocation: Invocation = Invocation(),  # frozen: one shared default is safe
) -> StepResult:
    """Run the manifest's verifier on the attempt's config (None: the pending one) and record
    its result: the verdict, a failure, or a harness error that writes nothing (R8, R11)."""

    def build() -> cmd.Verify | cmd.Fail:
        manifest = read_manifest(ledger.dir)
        plan = _plan(ledger, manifest, attempt, python)
        state = ledger.load().state
        best = state.best
        ran = measuring.run(
            plan, manifest, op=ledger.op, python=python, env=env, executor=executor,
            # A kept result of another device than the best's is measured again (issue 29),
            # and the best carried to another device is measured there, never read back.
            expected_device=best.measurement.device if best else measuring.ANY_DEVICE,
            fresh=state.attempts[plan.attempt].prior == DEVICE_PRIOR,
        )  # fmt: skip
        command = measuring.result_command(plan, ran)
        if manifest is not None:
            # Judge the binding by the manifest measured with, before anything is written;
            # `execute` records that manifest when the result stands under it (R11).
            measuring.refuse_unbound(ledger.load().state, command, manifest.defaults())
        return command

    return _step(ledger, build, invocation, "measure", attempt=attempt, python=python)


def target_from_spec(
    ledger: OpLedger,
    *,
    python: str = sys.executable,
    cube_m: int | None = None,
    env: Mapping[str, str] | None = None,
    executor: measuring.Executor = measuring.run_here,
    invocation: Invocation = Invocation(),
) -> StepResult:
    """Write the target sheet from SPEC.md's manifest (P0 shape, perf_target, baseline config),
    its baseline measured by the manifest's verifier (R3, R11)."""

    def build() -> cmd.SetTarget:
        manifest = read_manifest(ledger.dir)
        shape = manifest.p0_shape if manifest else None
        target_us = manifest.target_us if manifest else None
        fallback = manifest.fallback if manifest else None
        needed = {
            "p0_shapes": shape,
            # Without a budget, R3's next source is measured (`target_fallbacks`).
            "perf_target (or target_fallbacks)": target_us or fallback,
            "verifier": manifest.verifier if manifest else None,
        }
        lacking = [name for name, value in needed.items() if value is None]
        if manifest is None or shape is None or lacking:
            raise BadInput(
                f"custom/{ledger.op}/SPEC.md's manifest lacks {', '.join(lacking)}",
                rule="R3",
                hint="declare p0_shapes, perf_target {time_us, metric} (or target_fallbacks) and "
                "verifier in SPEC.md's front matter (docs/DESIGN.md §4), or give --shape, "
                "--target and the baseline",
            )
        state = ledger.load().state
        impl = ledger.dir / f"{ledger.op}_impl.py"
        digest = state.activation_digest or (
            inputs.file_digest(impl, ledger.root) if impl.is_file() else None
        )
        plan, ran = measure_target.run_baseline(
            manifest, planning.BASELINE, digest, root=ledger.root, op=ledger.op, python=python,
            env=env, executor=executor,
        )  # fmt: skip
        document = measure_target.baseline_document(plan, ran)
        measure_target.refuse_unbound_baseline("the baseline", manifest, digest, document.doc)
        samples = runner.times_of(document.doc, document.source)
        measured_target = None
        if target_us is None and fallback is not None:
            measured_target = measure_target.run_fallback(
                manifest, fallback, root=ledger.root, op=ledger.op, python=python, env=env,
                executor=executor,
            )  # fmt: skip
        source, reference = "spec", f"SPEC.md perf_target (manifest {manifest.digest})"
        target_samples: tuple[float, ...] = ()
        target_origin = None
        if measured_target is not None:
            target_samples = measured_target.samples
            target_us, target_origin = median(target_samples), measured_target.origin
            source = measured_target.source
            reference = f"measured: {measured_target.what} (manifest {manifest.digest})"
        assert target_us is not None  # a budget, or a fallback measured (checked above)
        return cmd.SetTarget(
            baseline_us=median(samples),
            shape=inputs.shape_text(shape),
            target_us=target_us,
            target_source=source,
            source_ref=reference,
            target_origin=target_origin,
            target_samples_us=target_samples,
            config=manifest.baseline_config,
            origin=document.origin,
            metric=manifest.metric or "time",
            cube_m=cube_m,
            baseline_samples_us=samples,
            util_pct=runner.percent_of(document.doc, "util_pct"),
            bubble_pct=runner.percent_of(document.doc, "bubble_pct"),
            device=runner.device_of(document.doc, document.source),
        )

    return _step(ledger, build, invocation, "target --from-spec", python=python, cube_m=cube_m)


def evidence_from_spec(
    ledger: OpLedger,
    kind: EvidenceKind,
    *,
    impl: Path | str | None = None,
    python: str = sys.executable,
    env: Mapping[str, str] | None = None,
    executor: measuring.Executor = measuring.run_here,
    invocation: Invocation = Invocation(),
) -> StepResult:
    """Record activation evidence the ledger obtains itself from the op folder (R1, R11): the
    E2E compare from one verifier run of the manifest's baseline config, or the op's layout
    check on it; `impl` is the implementation it is evidence for (default custom/OP/OP_impl.py)."""
    if kind not in ("compare", "layout"):
        raise BadInput(f"unknown evidence {kind!r}", hint="give compare or layout")

    def build() -> cmd.RecordCompare | cmd.RecordLayout:
        path, shown = impl_file(ledger, impl)
        # the op's own file may not be a link out of the root; an --impl named by the caller
        # is read as given (ledger/log/safe_files.py)
        digest = inputs.file_digest(path, None if impl else ledger.root)
        manifest = _manifest_with_verifier(ledger)
        if kind == "compare":
            checks, origin = _compare(ledger, manifest, digest, python, env, executor)
            return cmd.RecordCompare(
                outputs=checks, impl_path=shown, impl_digest=digest, origin=origin
            )
        run = _layout(ledger, manifest, python, env)
        return cmd.RecordLayout(
            exit_code=run.exit_code,
            impl_path=shown,
            impl_digest=digest,
            origin=attrs.evolve(
                runner.origin_of_run(run, level="measured"),
                verifier_digest=file_digest_of(ledger.dir / layout_check.FILE_NAME, ledger.root),
            ),
        )

    return _step(
        ledger, build, invocation, f"evidence {kind} --from-spec", impl=impl, python=python
    )


def impl_file(ledger: OpLedger, impl: Path | str | None) -> tuple[Path, str]:
    """The implementation file (`impl`, else custom/OP/OP_impl.py) and its name as recorded."""
    path = Path(impl) if impl else ledger.dir / f"{ledger.op}_impl.py"
    return path, inputs.recorded_path(path, ledger.root)


# --- the steps' parts ------------------------------------------------------------------------


def _step(
    ledger: OpLedger,
    build: Callable[[], Any],
    invocation: Invocation,
    workflow: str,
    **arguments: Any,
) -> StepResult:
    """The original result of a retried key, else build the command (running what it measures)
    and append it."""
    ledger.require()
    request = invocation.request or _request_digest(workflow, arguments)
    if invocation.key is not None:
        earlier = ledger.earlier(invocation.key, request)
        if earlier is not None:
            return earlier
    return ledger.execute(
        build(), key=invocation.key, request=request, command_line=invocation.command_line
    )


def _request_digest(workflow: str, arguments: Mapping[str, Any]) -> str:
    shown = {name: None if value is None else str(value) for name, value in arguments.items()}
    body = codec.canonical_json({"workflow": workflow, "arguments": shown})
    return codec.digest(body.encode("utf-8"))[:32]


def _plan(
    ledger: OpLedger, manifest: Manifest | None, attempt: str | None, python: str
) -> planning.Plan:
    """The verifier command for the attempt `attempt` names; after a stop, the stop's refusal
    comes first (R10, exit 6)."""
    state = ledger.load().state
    refusal = stopped_refusal(state)
    if refusal is not None:
        raise refusal.to_error()
    attempt_id = resolve_attempt(state, attempt or "pending")
    return planning.plan(state, manifest, attempt_id, root=ledger.root, op=ledger.op, python=python)


def _manifest_with_verifier(ledger: OpLedger) -> Manifest:
    manifest = read_manifest(ledger.dir)
    if manifest is None or manifest.verifier is None:
        raise BadInput(
            f"custom/{ledger.op}/SPEC.md declares no verifier, so the ledger cannot run the "
            "check itself",
            rule="R11",
            hint="declare `verifier` in SPEC.md's front matter (docs/OP_FOLDER.md), or give "
            "--run CMD or --output NAME=true|false",
        )
    return manifest


def _compare(
    ledger: OpLedger,
    manifest: Manifest,
    impl_digest: str,
    python: str,
    env: Mapping[str, str] | None,
    executor: measuring.Executor,
) -> tuple[tuple[Any, ...], Any]:
    """Every output's all_close from one verifier run of the baseline config, bound to it."""
    plan, ran = measure_target.run_baseline(
        manifest, EVIDENCE_LABEL, impl_digest, root=ledger.root, op=ledger.op, python=python,
        env=env, executor=executor,
    )  # fmt: skip
    fix = f"check the verifier with {Step('measure', ledger.op, dry_run=True)}, then record again"
    doc = harness.result_document(
        ran.run, runner.last_json_object(ran.run.output), fix, pending=None
    )
    measure_target.refuse_unbound_baseline("the compare", manifest, impl_digest, doc)
    failure = runner.failure_of(doc)
    if failure is not None and not isinstance(doc.get("outputs"), list):
        raise BadInput(
            f"the baseline config did not run ({failure[0]}: {failure[1]}), so no output "
            "could be compared; nothing was written",
            rule="R1",
            hint=_FIX_KERNEL,
        )
    checks = inputs.outputs_from_document(doc, plan.command_line)
    return checks, ran.origin(runner.origin_of_run(ran.run, doc, level="measured"))


def _layout(
    ledger: OpLedger, manifest: Manifest, python: str, env: Mapping[str, str] | None
) -> runner.CommandRun:
    """The op's layout check on the baseline config, before tuning (docs/OP_FOLDER.md)."""
    if not (ledger.dir / layout_check.FILE_NAME).is_file():
        raise BadInput(
            f"custom/{ledger.op}/{layout_check.FILE_NAME} is missing",
            rule="R1",
            hint=f"`tune-ledger check-op {ledger.op}` lists what the op folder lacks",
        )
    timeout_s = manifest.verifier.timeout_s if manifest.verifier else layout_check.TIMEOUT_S
    try:
        done = layout_check.run(
            ledger.dir,
            manifest.baseline_config,
            cwd=ledger.root,
            python=python,
            env=env,
            timeout_s=timeout_s,
        )
    except OSError as e:
        raise BadInput(
            f"cannot run custom/{ledger.op}/{layout_check.FILE_NAME} with {python}: {e}",
            hint="check --python (the interpreter that runs the op's checks)",
        ) from e
    return runner.command_run(done)
