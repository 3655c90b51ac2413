"""`status` and `resume`: where the campaign stands, served from the view cache.

Both are pure functions of the ledger's bytes, run before and after nearly every step, and
must not cost more on a long ledger than on a short one: they read
`ledger.projections.view_cache` first and replay the ledger only on a miss. This module
imports nothing heavy at its top, so a hit loads neither the events' classes nor the stage machines.
"""

from __future__ import annotations

import click

from ledger.cli.base import Ctx, load_state, pass_ctx
from ledger.domain.units import check_op_name
from ledger.log.files import ledger_path
from ledger.projections import view_cache


@click.command()
@click.argument("op")
@pass_ctx
def status(ctx: Ctx, op: str) -> None:
    """Show where the campaign stands and which commands are allowed next."""
    _show(ctx, op, "status")


@click.command()
@click.argument("op")
@pass_ctx
def resume(ctx: Ctx, op: str) -> None:
    """Tell an interrupted agent exactly where it stopped, what to reload and what to run next."""
    _show(ctx, op, "resume")


def _show(ctx: Ctx, op: str, view: str) -> None:
    """Print one of the op's views, cached or replayed from its ledger, and its warnings."""
    path = ledger_path(ctx.root, check_op_name(op))

    def replayed() -> tuple[view_cache.Rendered, list[str]]:
        # Also the path taken when there is no ledger: `ctx.op` refuses it as it always did.
        state, warnings = load_state(ctx, op)
        return view_cache.render(state, warnings), warnings

    rendered, warnings = view_cache.cached_views(path, op, replayed)
    ctx.warn(warnings)
    ctx.echo_rendered(rendered[view])


# The commands this module adds to `tune-ledger` (ledger.cli names them, to load them lazily).
COMMANDS = (status, resume)
