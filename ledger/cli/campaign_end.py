"""How a stopped campaign ends or goes on (R10): `handback` records that the result went back
to the orchestrator with its report; `resume-campaign` records a person's decision to go past
a utilization or budget stop."""

from __future__ import annotations

from typing import Any

import click

from ledger.cli.base import OP, Ctx, event_data, pass_ctx, person_option, run_step
from ledger.shell.api import StepResult
from stages import commands as cmd


@click.command()
@click.argument("op", type=OP)
@click.option("--summary", default="", help="What the orchestrator should know about the result.")
@pass_ctx
def handback(ctx: Ctx, op: str, summary: str) -> None:
    """Hand a stopped campaign's result back to the orchestrator with its report (R10)."""

    def present(outcome: StepResult) -> tuple[dict[str, Any], str]:
        data = event_data(outcome, "campaign.handed_back")
        report = str(data.get("report", ""))
        return (
            {"handed_back": True, "report": report, "stop": data.get("stop")},
            f"handed back to the orchestrator with {report}",
        )

    run_step(ctx, op, lambda _ledger: cmd.HandBack(summary=summary), present)


@click.command(name="resume-campaign")
@click.argument("op", type=OP)
@click.option("--reason", required=True, help="The user's reason to go past the stop.")
@person_option
@pass_ctx
def resume_campaign(ctx: Ctx, op: str, reason: str, person: str | None) -> None:
    """Lift a utilization stop, or a budget stop once the budget no longer holds, by a
    person's decision (R10, --person NAME); no other stop can be lifted."""

    def present(outcome: StepResult) -> tuple[dict[str, Any], str]:
        lifted = str(event_data(outcome, "campaign.resumed").get("lifted", ""))
        return {
            "resumed": True
        }, f"stop lifted ({lifted}): tuning goes on (tune-ledger status {op})"

    run_step(ctx, op, lambda _ledger: cmd.ResumeCampaign(reason=reason, person=person), present)


COMMANDS = (handback, resume_campaign)
