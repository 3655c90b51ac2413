"""`accept-rollback`: a person confirms that the ledger lost the events MEMORY.md was rendered
from, which is recorded as an event, and MEMORY.md is re-rendered (DESIGN §7.5)."""

from __future__ import annotations

import click

from ledger.cli.base import OP, Ctx, event_data, pass_ctx, person_option, report_events, request_of


@click.command("accept-rollback")
@click.argument("op", type=OP)
@click.option(
    "--reason",
    required=True,
    help="Why the older ledger is the right one (recorded in the ledger).",
)
@person_option
@pass_ctx
def accept_rollback(ctx: Ctx, op: str, reason: str, person: str | None) -> None:
    """Accept a rollback or truncation of the ledger that MEMORY.md shows, and write again.

    A person's decision: --person NAME is required (exit 3 without it). Refused (exit 2) when
    the ledger still holds the last event MEMORY.md was rendered from.
    """
    from ledger.shell import rollback

    ledger = ctx.op(op)
    request = request_of(click.get_current_context())
    # A retried key returns the original result: the rollback it accepted is gone by then.
    outcome = ledger.earlier(ctx.key, request) if ctx.key is not None else None
    if outcome is None:
        command = rollback.acceptance(ledger.rolled_back(), op, reason, person)
        outcome = ledger.execute(
            command,
            key=ctx.key,
            decider=rollback.decide,
            request=request,
            command_line=ctx.command_line(),
        )
    missing = event_data(outcome, "ledger.rollback_accepted").get("missing")
    report_events(
        ctx,
        op,
        outcome,
        {"missing": missing, "ledger_last": outcome.state.last_event},
        f"accepted the rollback: {missing} is no longer in the ledger; MEMORY.md re-rendered",
    )


COMMANDS = (accept_rollback,)
