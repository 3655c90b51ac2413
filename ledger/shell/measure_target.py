"""The target sheet's measurements (R3, R11): the verifier on SPEC.md's baseline config, and a
target fallback's reference run (upstream, torch-eager) when SPEC.md gives no target."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from attrs import frozen

from ledger.domain.manifest import Fallback, Manifest
from ledger.errors import BadInput
from ledger.schema.values import Origin
from ledger.shell import harness, runner
from ledger.shell.measure import VERIFIER_FIX, Executor, Ran, execute, run, run_here
from ledger.shell.measure_plan import Plan, command_plan, plan_config
from stages.binding import binding_problem


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
    label = f"target ({fallback.source})"
    fallback_plan = command_plan(
        manifest, fallback.verifier, {}, label, None, root=root, op=op, python=python
    )
    ran = execute(fallback_plan, env, None, executor)
    fix = (
        f"fix SPEC.md's target_fallbacks ({fallback.source}): its command must print one JSON "
        "object with times_us, then run `target --from-spec` again"
    )
    doc = _working_result(
        ran,
        f"the {fallback.source} reference run",
        unfinished="no target can be measured",
        failed="",
        fixes=(fix, fix, fix),
    )
    samples = runner.times_of(doc, fallback_plan.command_line)
    named = doc.get("method")
    what = f"{fallback.source}" + (f", {named}" if isinstance(named, str) else "")
    return MeasuredTarget(
        samples=samples,
        source=fallback.source,
        origin=runner.origin_of_run(ran.run, doc, level="measured"),  # declared in SPEC.md
        what=what,
    )


def baseline_document(plan: Plan, ran: Ran) -> runner.Document:
    """The measurement of the target sheet's baseline; a failed run cannot be a baseline."""
    doc = _working_result(
        ran,
        "the baseline run",
        unfinished="no target sheet can be written from it",
        failed=": a baseline is a measured time of a working kernel",
        fixes=(
            "fix the baseline config or the verifier's limits in SPEC.md, then run "
            "`target --from-spec` again",
            VERIFIER_FIX,
            "fix the kernel or SPEC.md's baseline_config, then run `target --from-spec`",
        ),
    )
    return runner.Document(
        doc=doc,
        origin=ran.origin(runner.origin_of_run(ran.run, doc, level="measured")),
        source=plan.command_line,
    )


def _working_result(
    ran: Ran, name: str, *, unfinished: str, failed: str, fixes: tuple[str, str, str]
) -> dict[str, Any]:
    """The result document of a run that must time a working kernel (R3): one that did not
    finish, a harness error or a failure the result names is bad input naming the run `name`,
    each with its fix (`fixes`: unfinished, harness error, failed); nothing is written."""
    done = ran.run
    doc = runner.last_json_object(done.output)
    if doc is None and (done.timed_out or ran.signal is not None):
        raise BadInput(
            f"{name} did not finish ({'timed out' if done.timed_out else 'killed'}): {unfinished}",
            rule="R3",
            hint=fixes[0],
        )
    doc = harness.result_document(done, doc, fixes[1], pending=None)
    failure = runner.failure_of(doc)
    if failure is not None:
        raise BadInput(
            f"{name} failed ({failure[0]}: {failure[1]}){failed}", rule="R3", hint=fixes[2]
        )
    return doc


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
