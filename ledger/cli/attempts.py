"""Attempts: candidates, single-parameter tries and algorithm changes, their verification
(the ledger computes the verdict), failures and abandonment."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import click

from ledger.cli.base import (
    EXIT_STATUS,
    OP,
    Ctx,
    event_data,
    one_source,
    output_options,
    pass_ctx,
    run_step,
    run_workflow,
)
from ledger.domain import inputs
from ledger.domain.hints import Fill, arg
from ledger.domain.keys import attempt_id
from ledger.errors import BadInput
from ledger.projections.verdict_result import attempt_result, describe_result
from ledger.schema.events import FAILURES, Origin
from ledger.shell.api import OpLedger, StepResult
from stages import commands as cmd


def _started(op: str) -> Any:
    def present(outcome: StepResult) -> tuple[dict[str, Any], str]:
        attempt = next(
            (attempt_id(e.id) for e in outcome.events if e.type == "attempt.started"), None
        )
        if attempt is None:
            raise BadInput(
                "the idempotency key names a command that started no attempt",
                hint="use a new key for a new command",
            )
        return {"attempt": attempt}, (
            f"attempt {attempt} started: measure it, then tune-ledger verify {op} {attempt}"
        )

    return present


def _result(outcome: StepResult) -> tuple[dict[str, Any], str]:
    result = attempt_result(outcome.events)
    attempt = next((e.data["attempt"] for e in outcome.events if "attempt" in e.data), None)
    result["attempt"] = attempt
    return result, describe_result(str(attempt), result)


_OVERRIDE = click.option(
    "--override-retry",
    metavar="REASON",
    help="Measure an idea again anyway; the reason is recorded (R9).",
)


@click.command()
@click.argument("op", type=OP)
@click.option("--config", "config", metavar="JSON", required=True, help="The full config.")
@click.option(
    "--prior",
    metavar="SOURCE",
    required=True,
    help="Where the candidate comes from (a kernel file:line, another op's ledger...).",
)
@_OVERRIDE
@pass_ctx
def candidate(ctx: Ctx, op: str, config: str, prior: str, override_retry: str | None) -> None:
    """Start a candidate: a full config from a prior (R7 candidate phase)."""
    value = inputs.parse_json_object(config, "--config")
    run_step(
        ctx,
        op,
        lambda ledger: cmd.ProposeCandidate(
            config=value, prior=prior, override=override_retry, **ledger.on_disk()
        ),
        _started(op),
    )


@click.command("try")
@click.argument("op", type=OP)
@click.option(
    "--set",
    "assignment",
    metavar="PARAM=VALUE",
    help="Change one parameter of the best config (VALUE is JSON).",
)
@click.option("--algorithm", metavar="TEXT", help="Describe an algorithm change (algorithm stage).")
@click.option("--impl", metavar="PATH", help="The changed implementation (algorithm changes).")
@_OVERRIDE
@pass_ctx
def try_(
    ctx: Ctx,
    op: str,
    assignment: str | None,
    algorithm: str | None,
    impl: str | None,
    override_retry: str | None,
) -> None:
    """Start one change: a single-parameter mutation or an algorithm change (R5, R6)."""
    if (assignment is None) == (algorithm is None):
        raise BadInput(
            f"give exactly one of {arg('change', Fill('PARAM=VALUE'))} or "
            f"{arg('algorithm', Fill('TEXT'))}",
            hint=f"e.g. {arg('change', 'vec_tile_shape=[1,32,1,256]')}",
        )
    if assignment is not None:
        param, text = inputs.split_assignment(assignment, "--set")
        value = inputs.parse_json_value(text, "--set")

        def build(ledger: OpLedger) -> Any:
            return cmd.TryMutation(
                param=param, value=value, override=override_retry, **ledger.on_disk()
            )
    else:

        def build(ledger: OpLedger) -> Any:
            digest = ledger.implementation(impl)[1] if impl else None
            return cmd.TryAlgorithm(
                description=algorithm or "", impl_digest=digest, override=override_retry
            )

    run_step(ctx, op, build, _started(op))


@click.command()
@click.argument("op", type=OP)
@click.argument("attempt")
@output_options
@click.option("--layout-exit", type=EXIT_STATUS, help="The layout check's exit code.")
@click.option(
    "--time",
    "times",
    multiple=True,
    metavar="TIME",
    help="A measured time (repeat for samples; 71.1us, 0.07ms, 1e-4s; bare = ms).",
)
@click.option("--util", metavar="PCT", help="Core utilization %.")
@click.option("--bubble", metavar="PCT", help="Bubble rate %.")
@click.option(
    "--perf-dir",
    metavar="DIR",
    help="A measurement folder: DIR/measurement.json, or a raw PyPTO output folder (parsed by "
    "the adapter). With --output and --layout-exit, only its times count.",
)
@click.option("--from-json", "from_json", metavar="FILE", help="Read a measurement JSON file.")
@click.option(
    "--run",
    "run_cmd",
    metavar="CMD",
    help="Run CMD as the verifier; it prints a measurement (provenance ran: a command nobody "
    "declared; under a manifest with a verifier, use `measure`).",
)
@click.option(
    "--timeout",
    "timeout",
    metavar="SECONDS",
    help="Wall-time limit for --run; past it the attempt fails with timeout.",
)
@pass_ctx
def verify(
    ctx: Ctx,
    op: str,
    attempt: str,
    outputs: Sequence[str],
    max_diffs: Sequence[str],
    layout_exit: int | None,
    times: Sequence[str],
    util: str | None,
    bubble: str | None,
    perf_dir: str | None,
    from_json: str | None,
    run_cmd: str | None,
    timeout: str | None,
) -> None:
    """Record the verifier's result; the ledger computes the verdict (R8).

    ATTEMPT is an attempt id, a unique prefix of one (4+ characters), or `pending`. Give the
    result by hand (--output, --layout-exit, --time: provenance "reported"), from a file
    (--from-json, --perf-dir: "artefact"), or let the ledger run the verifier (--run:
    "measured").
    """
    # Accuracy (outputs, layout exit) may come by hand beside a perf folder: two runs, each
    # piece with its own provenance. Times have exactly one source.
    split = perf_dir is not None and bool(outputs or layout_exit is not None) and not times
    one_source(
        output=bool(outputs or times or layout_exit is not None) and not split,
        perf_dir=perf_dir,
        from_json=from_json,
        run=run_cmd,
    )
    timeout_s = inputs.parse_seconds(timeout, "--timeout")
    if timeout_s is not None and not run_cmd:
        raise BadInput(
            f"{arg('timeout')} applies to {arg('run')} only",
            hint=f"drop {arg('timeout')}, or let the ledger run the verifier with "
            f"{arg('run', Fill('CMD'))}",
        )
    manual = not (run_cmd or perf_dir or from_json)
    if split:
        if layout_exit is None or not outputs:
            raise BadInput(
                "with --perf-dir, give the accuracy evidence whole: --output NAME=true|false "
                "for every output and --layout-exit N",
                hint="or let the perf folder's measurement carry both",
            )
        checks = inputs.parse_outputs(outputs, max_diffs)
    if manual:
        if layout_exit is None:
            raise BadInput(
                f"give {arg('layout_exit', Fill('N'))} (the layout check's exit code)",
                hint=f"or {arg('run', Fill('CMD'))}, {arg('from_json', Fill('FILE'))}, "
                f"{arg('perf_dir', Fill('DIR'))}",
            )
        checks = inputs.parse_outputs(outputs, max_diffs)
        samples = inputs.parse_times(times)
        util_pct = inputs.parse_percent(util, "--util")
        bubble_pct = inputs.parse_percent(bubble, "--bubble")

    def build(ledger: OpLedger) -> Any:
        # The verifier's harness and the document readers (subprocess, signals: ~5-8 ms of a
        # process) are imported only by the verifications that use them, not by a verify
        # given by hand, the common one.
        attempt_id = ledger.attempt_to_record(attempt)
        if run_cmd:
            from ledger.shell import harness

            return harness.run_verifier(attempt_id, run_cmd, ctx.root, timeout_s)
        if perf_dir:
            from ledger.shell import documents, runner

            document = documents.dir_document(perf_dir, ctx.root)
            if split:
                return runner.split_verify_command(
                    attempt_id, document, checks, int(layout_exit or 0)
                )
            return runner.verify_command(attempt_id, document)
        if from_json:
            from ledger.shell import documents, runner

            return runner.verify_command(attempt_id, documents.file_document(from_json))
        return cmd.Verify(
            attempt=attempt_id,
            outputs=checks,
            layout_exit=int(layout_exit or 0),
            times_us=samples,
            origin=Origin(level="reported"),
            util_pct=util_pct,
            bubble_pct=bubble_pct,
        )

    run_step(ctx, op, build, _result)


@click.command()
@click.argument("op", type=OP)
@click.argument("attempt")
@click.option(
    "--category", type=click.Choice(list(FAILURES)), required=True, help="What kind of failure."
)
@click.option("--detail", default="", help="What failed (error message, log excerpt).")
@pass_ctx
def fail(ctx: Ctx, op: str, attempt: str, category: str, detail: str) -> None:
    """Record that the pending attempt failed; the verdict is rollback (R8)."""
    run_step(
        ctx,
        op,
        lambda ledger: cmd.Fail(
            attempt=ledger.attempt_to_record(attempt), category=category, detail=detail
        ),
        _result,
    )


@click.command()
@click.argument("op", type=OP)
@click.argument("attempt")
@click.option("--reason", required=True, help="Why the attempt is given up (e.g. interrupted).")
@pass_ctx
def abandon(ctx: Ctx, op: str, attempt: str, reason: str) -> None:
    """Give up the pending attempt without a result (e.g. after a crash) (R6)."""

    def present(outcome: StepResult) -> tuple[dict[str, Any], str]:
        attempt_id = event_data(outcome, "attempt.abandoned").get("attempt")
        return {"attempt": attempt_id, "abandoned": True}, f"attempt {attempt_id} abandoned"

    run_step(
        ctx,
        op,
        lambda ledger: cmd.Abandon(attempt=ledger.attempt_to_record(attempt), reason=reason),
        present,
    )


@click.command()
@click.argument("op", type=OP)
@click.argument("attempt", default="pending")
@click.option(
    "--dry-run", is_flag=True, help="Print the exact command and run nothing, write nothing."
)
@click.option(
    "--python",
    "python",
    default=sys.executable,
    show_default=True,
    help="The interpreter the template's {python} stands for.",
)
@pass_ctx
def measure(ctx: Ctx, op: str, attempt: str, dry_run: bool, python: str) -> None:
    """Run the manifest's verifier on an attempt's config and record the result (R8, R11).

    ATTEMPT defaults to the pending one. The command comes from SPEC.md's `verifier`, with
    the attempt's full config (one argument, quoted by the ledger); the result is recorded
    with provenance "measured" and must name the config and implementation it ran. A
    verifier that cannot start or reports its own error writes nothing (exit 2).
    """
    if dry_run:
        from ledger.shell.measure_plan import dry_run as dry_run_of
        from ledger.shell.workflows import measure_plan

        plan = measure_plan(ctx.op(op), attempt, python=python)
        ctx.emit(dry_run_of(plan), plan.command_line)
        return
    run_workflow(
        ctx,
        op,
        lambda ledger, asked: ledger.measure(attempt, python=python, invocation=asked),
        _result,
    )


COMMANDS = (candidate, try_, verify, fail, abandon, measure)
