"""The protocol's steps before tuning: init, the accuracy evidence and activation (R1)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import click

from ledger.cli.base import (
    EXIT_STATUS,
    OP,
    Ctx,
    StrictGroup,
    event_data,
    one_source,
    output_options,
    pass_ctx,
    run_step,
    run_workflow,
)
from ledger.domain import inputs
from ledger.domain.hints import Fill, arg
from ledger.errors import BadInput
from ledger.schema.events import Origin
from ledger.shell.api import OpLedger, StepResult
from stages import commands as cmd


@click.command()
@click.argument("op", type=OP)
@pass_ctx
def init(ctx: Ctx, op: str) -> None:
    """Create custom/OP/events.jsonl and MEMORY.md for a new op."""

    def present(_outcome: StepResult) -> tuple[dict[str, Any], str]:
        # resume's next steps: the evidence with the sources this op's SPEC.md accepts.
        from ledger.projections.resume_view import next_steps

        steps = next_steps(ctx.op(op).load().state)
        return {"created": True, "next": steps}, "\n  ".join([f"initialized {op}; next:", *steps])

    run_step(ctx, op, lambda _ledger: cmd.Init(op=op), present, must_exist=False)


@click.group(cls=StrictGroup)
def evidence() -> None:
    """Record accuracy evidence for the current implementation (R1)."""


_IMPL = click.option(
    "--impl", metavar="PATH", help="Implementation file (default custom/OP/OP_impl.py)."
)
_FROM_SPEC = click.option(
    "--from-spec",
    is_flag=True,
    help="Run it from the op folder on SPEC.md's baseline config (the verifier, or "
    "layout_check.py --before-tuning): provenance measured.",
)
_PYTHON = click.option(
    "--python",
    "python",
    default=sys.executable,
    show_default=True,
    help="With --from-spec: the interpreter that runs the check.",
)


@evidence.command("compare")
@click.argument("op", type=OP)
@output_options
@click.option(
    "--from-json",
    "from_json",
    metavar="FILE",
    help="Read outputs [{name, all_close, max_diff}] from a JSON file.",
)
@click.option(
    "--run",
    "run_cmd",
    metavar="CMD",
    help="Run CMD; it prints a JSON object with outputs (its exit code is recorded).",
)
@_FROM_SPEC
@_PYTHON
@_IMPL
@pass_ctx
def evidence_compare(
    ctx: Ctx,
    op: str,
    outputs: Sequence[str],
    max_diffs: Sequence[str],
    from_json: str | None,
    run_cmd: str | None,
    from_spec: bool,
    python: str,
    impl: str | None,
) -> None:
    """Record an E2E tensor compare: every output's all_close (R1)."""
    one_source(output=bool(outputs), from_json=from_json, run=run_cmd, from_spec=from_spec)
    if not (outputs or from_json or run_cmd or from_spec):
        raise BadInput(
            f"no outputs given: give {arg('from_spec')}, {arg('run', Fill('CMD'))}, "
            f"{arg('from_json', Fill('FILE'))} or {arg('output', [Fill('NAME=true|false')])}",
            hint=f"{arg('from_spec')} runs SPEC.md's verifier on its baseline config (R11: "
            "measured)",
        )

    def build(ledger: OpLedger) -> Any:
        shown, digest = ledger.implementation(impl)
        if from_json or run_cmd:
            from ledger.shell import documents  # subprocess: only for evidence read or run

            document = documents.given_document(from_json, run_cmd, ctx.root, "outputs")
            checks = inputs.outputs_from_document(document.doc, document.source)
            origin = document.origin
        else:
            checks, origin = inputs.parse_outputs(outputs, max_diffs), Origin(level="reported")
        return cmd.RecordCompare(outputs=checks, impl_path=shown, impl_digest=digest, origin=origin)

    def present(outcome: StepResult) -> tuple[dict[str, Any], str]:
        data = event_data(outcome, "evidence.compare")
        passed = all(o["all_close"] for o in data.get("outputs", ()))
        failing = [o["name"] for o in data.get("outputs", ()) if not o["all_close"]]
        human = (
            "compare evidence recorded: every output all_close"
            if passed
            else f"compare evidence recorded: NOT all_close: {', '.join(failing)}"
        )
        return {"passed": passed, "impl_digest": data.get("impl_digest")}, human

    if from_spec:
        run_workflow(
            ctx,
            op,
            lambda ledger, asked: ledger.evidence_from_spec(
                "compare", impl=impl, python=python, invocation=asked
            ),
            present,
        )
        return
    run_step(ctx, op, build, present)


@evidence.command("layout")
@click.argument("op", type=OP)
@click.option("--exit-code", "exit_code", type=EXIT_STATUS, help="The layout check's exit code.")
@click.option("--run", "run_cmd", metavar="CMD", help="Run the layout check; record its exit code.")
@_FROM_SPEC
@_PYTHON
@_IMPL
@pass_ctx
def evidence_layout(
    ctx: Ctx,
    op: str,
    exit_code: int | None,
    run_cmd: str | None,
    from_spec: bool,
    python: str,
    impl: str | None,
) -> None:
    """Record a layout check's exit code (R1)."""
    if [exit_code is not None, run_cmd is not None, from_spec].count(True) != 1:
        raise BadInput(
            f"give exactly one of {arg('from_spec')}, {arg('run', Fill('CMD'))} or "
            f"{arg('exit_code', Fill('N'))}",
            hint=f"{arg('from_spec')} runs the op's layout_check.py on SPEC.md's baseline config; "
            "the ledger records the real exit code (R11)",
        )

    def build(ledger: OpLedger) -> Any:
        shown, digest = ledger.implementation(impl)
        if run_cmd is not None:
            from ledger.shell import runner  # subprocess: only for a check the ledger runs

            run = runner.run_command(run_cmd, ctx.root)
            code, origin = run.exit_code, runner.origin_of_run(run)
        else:
            code, origin = int(exit_code or 0), Origin(level="reported")
        return cmd.RecordLayout(exit_code=code, impl_path=shown, impl_digest=digest, origin=origin)

    def present(outcome: StepResult) -> tuple[dict[str, Any], str]:
        data = event_data(outcome, "evidence.layout")
        code = data.get("exit_code")
        return (
            {"exit_code": code, "passed": code == 0, "impl_digest": data.get("impl_digest")},
            f"layout evidence recorded: exit {code}",
        )

    if from_spec:
        run_workflow(
            ctx,
            op,
            lambda ledger, asked: ledger.evidence_from_spec(
                "layout", impl=impl, python=python, invocation=asked
            ),
            present,
        )
        return
    run_step(ctx, op, build, present)


@click.command()
@click.argument("op", type=OP)
@_IMPL
@pass_ctx
def activate(ctx: Ctx, op: str, impl: str | None) -> None:
    """Open tuning once both pieces of evidence pass for the current implementation (R1).

    On failure the failed check is recorded and the exit code is 5: hand back to the
    orchestrator.
    """
    run_step(
        ctx,
        op,
        lambda ledger: cmd.Activate(impl_digest=ledger.implementation(impl)[1]),
        lambda _outcome: (
            {"activated": True},
            "activation passed: next, write the target sheet (tune-ledger target)",
        ),
    )


COMMANDS = (init, evidence, activate)
