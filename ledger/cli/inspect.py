"""Commands that read the ledger (log, audit, check), re-render MEMORY.md, and write the tuning
report (`status` and `resume` are in `ledger/cli/status.py`). All of them still work after the
campaign stopped (R10)."""

from __future__ import annotations

import sys
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

import click

from ledger.cli.base import OP, Ctx, count_option, event_data, load_state, pass_ctx, run_step
from ledger.domain import hints
from ledger.errors import BadInput, LedgerDamaged
from ledger.schema.vocabulary import FAILURES, STAGES

# `log` runs between most steps: what only check, audit and report need (git's merge, the
# stage machines, the audit, the report) is imported when they run.
if TYPE_CHECKING:
    from ledger.shell.api import OpLedger, StepResult


@click.command()
@click.argument("op", type=OP)
@click.option(
    "--stage",
    "stage_name",
    type=click.Choice(list(STAGES)),
    metavar="STAGE",
    help="Only this stage.",
)
@click.option(
    "--verdict",
    type=click.Choice(["rollback", "no-gain", "adopt", "target-reached"]),
    help="Only attempts with this verdict.",
)
@click.option(
    "--failure", type=click.Choice(list(FAILURES)), help="Only attempts that failed this way."
)
@click.option("--limit", type=count_option(), help="Only the last N attempts.")
@click.option(
    "--attempt",
    "attempt_id",
    metavar="ID",
    help="Show one attempt with every recorded field, texts whole (an id prefix or pending).",
)
@click.option("--notes", is_flag=True, help="Show the notes recorded in the ledger, whole.")
@pass_ctx
def log(
    ctx: Ctx,
    op: str,
    stage_name: str | None,
    verdict: str | None,
    failure: str | None,
    limit: int | None,
    attempt_id: str | None,
    notes: bool,
) -> None:
    """List the attempts of the campaign, filterable by stage, verdict and failure."""
    state, warnings = load_state(ctx, op)
    if attempt_id is not None or notes:
        _log_one(ctx, op, state, warnings, attempt_id, notes)
        return
    from ledger.projections import attempt_detail as detail
    from ledger.projections.attempt_rows import attempt_rows

    rows = attempt_rows(state, stage=stage_name, verdict=verdict, failure=failure, limit=limit)
    ctx.warn(warnings)
    ctx.emit({"op": op, "attempts": rows, "warnings": warnings}, detail.log_text(rows))


def _log_one(
    ctx: Ctx, op: str, state: Any, warnings: list[str], attempt_id: str | None, notes: bool
) -> None:
    """`log --attempt ID` or `log --notes`: the texts MEMORY.md may shorten, whole (issue 15)."""
    from ledger.projections import attempt_detail as detail

    if attempt_id is not None and notes:
        raise BadInput("give only one of --attempt, --notes", hint="each shows a view of its own")
    ctx.warn(warnings)
    if notes:
        ctx.emit(
            {"op": op, "notes": list(state.notes), "warnings": warnings},
            detail.notes_text(list(state.notes)),
        )
        return
    from ledger.projections.attempt_rows import resolve_attempt

    data = detail.attempt_detail(state, resolve_attempt(state, str(attempt_id)))
    ctx.emit({"op": op, "attempt": data, "warnings": warnings}, detail.attempt_detail_text(data))


@click.command()
@click.argument("op", type=OP)
@pass_ctx
def render(ctx: Ctx, op: str) -> None:
    """Re-render MEMORY.md's managed sections from the ledger (e.g. after a merge)."""
    changed = ctx.op(op).render_memory()
    ctx.emit(
        {"op": op, "changed": changed},
        "MEMORY.md updated" if changed else "MEMORY.md already up to date",
    )


@click.command()
@click.argument("op", type=OP, required=False)
@click.option("--all", "all_ops", is_flag=True, help="Check every op under custom/.")
@pass_ctx
def check(ctx: Ctx, op: str | None, all_ops: bool) -> None:
    """Fail (exit 7) when MEMORY.md is stale or a managed section was edited by hand, or the
    ledger is not in canonical order or has unresolved merge conflicts (for CI)."""
    if (op is None) == (not all_ops):
        raise BadInput("give OP or --all", hint="tune-ledger check OP, or tune-ledger check --all")
    from ledger.shell.api import list_ops

    names = list_ops(ctx.root) if all_ops else [op or ""]
    findings = [finding for name in names for finding in _check_one(ctx.op(name), name)]
    if findings:
        if not ctx.as_json:
            click.echo(hints.render_text("\n".join(findings)))
        raise LedgerDamaged(
            findings[0],
            blocking=f"{len(findings)} problem(s)",
            hint="each finding says what to do: normalize the ledger, resolve the conflict, or "
            "move hand-written text outside the tune-ledger markers and run `tune-ledger "
            "render OP`",
            details={"op": op, "ops": names, "findings": findings},
        )
    ctx.emit(
        {"op": op, "ops": names, "findings": []},
        "MEMORY.md is up to date" if op else f"{len(names)} op(s) up to date",
    )


def _check_one(ledger: OpLedger, op: str) -> list[str]:
    from ledger.git import merge
    from ledger.projections import conflicts
    from ledger.shell import audit as audit_mod

    # An order finding comes alone: the ledger must be normalized before it can be replayed.
    order = merge.order_findings(ledger.file_store, op)
    if order:
        return order
    loaded = ledger.load()
    return [*conflicts.findings(loaded.state), *audit_mod.check_memory_file(ledger, loaded)]


@click.command()
@click.argument("op", type=OP, required=False)
@click.option("--all", "all_ops", is_flag=True, help="Audit every op under custom/.")
@click.option(
    "--strict",
    is_flag=True,
    help="Also exit 9 when an adopt, target-reached or stop rests on values the ledger did "
    "not measure with the op's declared verifier, or while a guard is lowered (for CI).",
)
@click.option(
    "--remeasure",
    type=count_option(),
    metavar="N",
    help="Also run SPEC.md's verifier again on N measured attempts (the best first), each on "
    "its kept kernel and config in a temporary copy; exit 10 when one disagrees beyond the "
    "noise band. Appends nothing.",
)
@pass_ctx
def audit(ctx: Ctx, op: str | None, all_ops: bool, strict: bool, remeasure: int | None) -> None:
    """Verify integrity, legality of every step, every verdict and MEMORY.md (exit 7 if not).

    Also summarizes where measurements came from: measured (the op's declared verifier, bound
    to what it ran), unbound, ran (an ad-hoc --run command), artefact (parsed from a file whose
    digest is recorded) or reported (typed in). With --strict, exit 9 names each decision
    resting on values not measured and each lowered guard. With --remeasure N, measures N
    attempts again and exits 10 when one disagrees with the ledger.
    """
    if (op is None) == (not all_ops):
        raise BadInput("give OP or --all", hint="tune-ledger audit OP, or tune-ledger audit --all")
    if remeasure is not None and all_ops:
        raise BadInput(
            "--remeasure takes one op", hint="tune-ledger audit OP --remeasure N, once per op"
        )
    from ledger.projections.audit_text import audit_text
    from ledger.shell.api import list_ops

    names = list_ops(ctx.root) if all_ops else [op or ""]
    show_progress = not ctx.as_json and sys.stderr.isatty() and len(names) > 1
    with click.progressbar(
        names, label="auditing", file=sys.stderr, hidden=not show_progress
    ) as bar:
        reports = [_audit_one(ctx, name) for name in bar]
    findings = [f"{r['op']}: {f}" for r in reports for f in r["findings"]]
    # An open merge conflict is no finding, but the campaign is stuck until it is resolved.
    unresolved = [f"{r['op']}: {u}" for r in reports for u in r.get("unresolved", ())]
    data = {"ops": reports, "clean": not findings and not unresolved}
    human = "\n".join(audit_text(r) for r in reports) if reports else "no ops to audit"
    if findings or unresolved:
        if not ctx.as_json:
            click.echo(hints.render_text(human))
        raise LedgerDamaged(
            (findings or unresolved)[0],
            blocking=f"{len(findings)} finding(s), {len(unresolved)} unresolved merge "
            f"conflict(s) in {sum(1 for r in reports if r['findings'] or r.get('unresolved'))}"
            " op(s)",
            hint="restore the damaged file from git (`git diff` shows what changed), or "
            "re-render MEMORY.md (`tune-ledger render OP`), then audit again"
            if findings
            else "run the command each conflict names, then audit again",
            details=data,
        )
    failing = [f"{r['op']}: {s}" for r in reports for s in r.get("strict", ())]
    if strict and failing:
        from ledger.errors import NotMeasured

        if not ctx.as_json:
            click.echo(human)
        raise NotMeasured(
            failing[0],
            rule="R11",
            blocking=f"{len(failing)} strict finding(s): " + "; ".join(failing),
            hint="measure with the op's declared verifier (`tune-ledger measure OP`, "
            "`target OP --from-spec`, `evidence compare|layout OP --from-spec`) and restore "
            "each lowered guard (`tune-ledger policy OP KEY VALUE --reason TEXT`)",
            details={**data, "strict": failing},
        )
    if remeasure is not None:
        _remeasure(ctx, op or "", remeasure, data, human)
        return
    ctx.emit(data, human)


def _remeasure(ctx: Ctx, op: str, count: int, data: dict[str, Any], human: str) -> None:
    """Measure `count` attempts again (ledger/shell/remeasure.py); exit 10 on a disagreement."""
    from ledger.errors import RemeasureDisagrees
    from ledger.shell import remeasure as remeasuring

    again = remeasuring.remeasure(ctx.op(op), count)
    data = {**data, "remeasure": again}
    lines = [human, f"re-measured {len(again['remeasured'])} attempt(s) of {op}:"]
    lines += [
        f"  {r['attempt']}: {'agrees' if r['agrees'] else 'DISAGREES'}: {r['why']}"
        for r in again["remeasured"]
    ]
    if again["disagree"]:
        first = next(r for r in again["remeasured"] if not r["agrees"])
        if not ctx.as_json:
            click.echo("\n".join(lines))
        raise RemeasureDisagrees(
            f"attempt {first['attempt']} measured again disagrees with the ledger: {first['why']}",
            blocking=f"{len(again['disagree'])} of {len(again['remeasured'])} re-measured "
            f"attempt(s) disagree: {', '.join(again['disagree'])}",
            hint="the recorded times are not what the verifier measures now: check the "
            "verifier (SPEC.md `verifier`) and the machine, then measure the attempts again",
            details=data,
        )
    ctx.emit(data, "\n".join(lines))


def _audit_one(ctx: Ctx, name: str) -> dict[str, Any]:
    try:
        ledger = ctx.op(name)
    except BadInput as e:  # a folder under custom/ that is not a usable op
        return {"op": name, "events": 0, "findings": [e.message], "provenance": {}}
    from ledger.shell import audit as audit_mod

    return audit_mod.audit_op(ledger)


@click.command()
@click.argument("op", type=OP)
@pass_ctx
def report(ctx: Ctx, op: str) -> None:
    """Write custom/OP/OP_tuning_report.md and its chart, and record the report (R4)."""

    from ledger.projections import report as report_mod
    from ledger.shell.report_files import write_files

    def present(outcome: StepResult) -> tuple[dict[str, Any], str]:
        data = event_data(outcome, "report.generated")
        path = str(data.get("path", ""))
        chart = str(PurePosixPath(path).with_name(report_mod.chart_name(op)))
        return (
            {"path": path, "chart": chart, "digest": data.get("digest")},
            f"report written: {path} (chart {chart})",
        )

    run_step(ctx, op, write_files, present)


# The commands this module adds to `tune-ledger` (ledger.cli names them, to load them lazily).
COMMANDS = (log, render, check, audit, report)
