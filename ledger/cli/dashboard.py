"""`tune-ledger dashboard`: the static site of every op (ledger/shell/dashboard.py)."""

from __future__ import annotations

from pathlib import Path

import click

from ledger.cli.base import Ctx, pass_ctx
from ledger.errors import LedgerDamaged


@click.command()
@click.option(
    "--out",
    "out",
    metavar="DIR",
    help="Folder to write the site into (default: ROOT/tune-ledger-dashboard); it must be "
    "new, empty, or a dashboard written before.",
)
@pass_ctx
def dashboard(ctx: Ctx, out: str | None) -> None:
    """Write a static HTML dashboard of every op under custom/ (index.html and a page per op;
    no server, no network) from the same replay as `audit`; exit 7, after writing it, when
    audit finds a problem in any op (the damaged op's row names it)."""
    from ledger.projections.dashboard_markup import page_name
    from ledger.shell import dashboard as site_mod

    folder = Path(out) if out is not None else ctx.root / site_mod.DEFAULT_OUT
    site = site_mod.build(ctx.root, folder)
    data = {
        "out": str(site.out),
        "index": str(site.index),
        "clean": site.clean,
        "ops": [
            {
                "op": view.op,
                "health": view.health,
                "page": str(site.out / page_name(view.op)) if view.has_page else None,
                "problems": list(view.problems),
                "code": view.code,
                "rule": view.rule,
            }
            for view in site.views
        ],
    }
    line = site_mod.summary_line(site)
    if site.clean:
        ctx.emit(data, line)
        return
    if not ctx.as_json:
        click.echo(line)
    problems = site_mod.problems(site)
    raise LedgerDamaged(
        f"{len(problems)} op(s) with audit problems; first: {problems[0]}",
        blocking="; ".join(problems),
        hint=f"open {site.index} (each damaged row names its problem), fix each as "
        "`tune-ledger audit OP` says, then run the dashboard again",
        details=data,
    )


COMMANDS = (dashboard,)
