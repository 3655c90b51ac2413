"""`tune-ledger-pypto`: the PyPTO side of tune-ledger as one command with subcommands.

    tune-ledger-pypto run --op-dir custom/OP --config JSON --json     (the adapter)
    tune-ledger-pypto layout --op-dir custom/OP [--before-tuning]     (the generic layout check)
    tune-ledger-pypto autopilot --op OP                               (a campaign)

Installed from the wheel these modules are the package `tune_ledger_tools` (no clash with a
kernel repository's own `tools`); in this checkout they are `tools`.
"""

from __future__ import annotations

import sys

import click

from . import autopilot
from .pypto import layout
from .pypto import run as adapter


@click.command(
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    add_help_option=False,
)
@click.pass_context
def layout_check(context: click.Context) -> None:
    """The generic layout check of an op folder (exit 0 ok, 1 a rule fails, 2 bad input)."""
    sys.exit(layout.main(list(context.args)))


@click.group()
def main() -> None:
    """The PyPTO adapter, the generic layout check and the autopilot of tune-ledger."""


main.add_command(adapter.main, "run")
main.add_command(layout_check, "layout")
main.add_command(autopilot.main, "autopilot")


if __name__ == "__main__":
    main()
