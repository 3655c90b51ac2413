"""Autopilot: plays the optimizer agent for the configuration stages, through the ledger's API.

    python -m tools.autopilot --op softmax [--root .] [--max-attempts N]

Every decision is taken from the replayed ledger, so the loop is resumable: interrupt it at
any moment (Ctrl-C, a crash, a kill) and run it again; a pending attempt is measured again
(the simulator is deterministic) and verified, nothing is lost or repeated. Measurements come
from the PyPTO adapter (`python -m tools.pypto.run`), run by the ledger itself (`--run`), so
every verdict is recorded with provenance "measured".

This module is the command; tools/pilot.py takes the protocol's steps and keeps time.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ledger.errors import LedgerError
from ledger.shell import report_files
from tools.pilot import Autopilot


@click.command()
@click.option("--root", default=".", show_default=True, help="Folder that holds custom/.")
@click.option("--op", default="softmax", show_default=True, help="The op to tune.")
@click.option(
    "--max-attempts",
    default=80,
    show_default=True,
    help="Attempt budget; the campaign stops when it is used up.",
)
@click.option(
    "--python",
    default=sys.executable,
    show_default=True,
    help="Interpreter with pypto installed (runs the adapter).",
)
@click.option("--adapter-args", default="", help="Extra options for tools.pypto.run.")
def main(root: str, op: str, max_attempts: int, python: str, adapter_args: str) -> None:
    """Run (or resume) an autopilot campaign on OP and print where it ended."""
    pilot = Autopilot(Path(root).resolve(), op, python, max_attempts, click.echo, adapter_args)
    stopped_before = pilot.state().stopped is not None
    try:
        while pilot.step():
            pass
    except KeyboardInterrupt:
        click.echo("interrupted: run the same command again to resume from the ledger", err=True)
        raise SystemExit(130) from None
    except LedgerError as e:
        click.echo(e.human(), err=True)
        raise SystemExit(e.code) from None
    state = pilot.state()
    best = state.best
    timing = pilot.timer.summary()
    click.echo(
        json.dumps(
            {
                "op": op,
                "stopped": state.stopped,
                "best_us": best.time_us if best else None,
                "best_config": best.config if best else None,
                "attempts": len(state.attempts),
                "timing": timing,
            },
            sort_keys=True,
        )
    )
    if state.stopped is None:
        raise SystemExit(1)
    if not stopped_before:
        # The final report shows the stop; a rerun of a finished campaign writes nothing.
        written = pilot.timer.ledger(lambda: report_files.write_report(pilot.ledger))
        click.echo(f"report written: {written['path']}")


if __name__ == "__main__":
    main()
