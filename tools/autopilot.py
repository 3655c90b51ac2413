"""Autopilot: plays the optimizer agent for the configuration stages, through the ledger's API.

    python -m tools.autopilot --op softmax [--root .] [--max-attempts N]

Every decision is taken from the replayed ledger, so the loop is resumable: interrupt it at
any moment (Ctrl-C, a crash, a kill) and run it again; a pending attempt is measured again
(the simulator is deterministic) and verified, nothing is lost or repeated. The search space
is SPEC.md's manifest (its knobs, stages and defaults); measurements go through
`tune-ledger target --from-spec` and `tune-ledger measure`, so the ledger builds and runs the
verifier command and binds every result to the attempt's config and kernel (R11).

This module is the command; tools/pilot.py takes the protocol's steps and keeps time.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from ledger.errors import LedgerError
from ledger.shell import report_files

from .pilot import Autopilot
from .progress import Progress


@click.command()
@click.option("--root", default=".", show_default=True, help="Folder that holds custom/.")
@click.option(
    "--op",
    "ops",
    multiple=True,
    default=("softmax",),
    show_default=True,
    help="An op to tune (repeat for several, tuned one after the other).",
)
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
    help="Interpreter with pypto installed (the verifier template's {python}).",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=os.cpu_count() or 1,
    show_default="the number of cores",
    help="Verifier runs at once: the pending attempt's and, ahead of it, the configs the "
    "campaign will try next, into the measurement cache (1: one run at a time). The ledger "
    "records the same attempts and verdicts whatever the number.",
)
@click.option(
    "--warm/--cold",
    default=True,
    show_default=True,
    help="Run each PyPTO child in a fork of one process that imported pypto and torch once "
    "(tools/pypto/warm.py), or start a new process for each (as before). The ledger records "
    "the same attempts and verdicts either way.",
)
def main(
    root: str, ops: tuple[str, ...], max_attempts: int, python: str, workers: int, warm: bool
) -> None:
    """Run (or resume) an autopilot campaign on each OP and print where each ended."""
    progress = Progress()
    failed = [
        op
        for op in ops
        if not campaign(Path(root).resolve(), op, python, max_attempts, progress, workers, warm)
    ]
    if failed:
        raise SystemExit(1)


def campaign(
    root: Path,
    op: str,
    python: str,
    max_attempts: int,
    progress: Progress,
    workers: int = 1,
    warm: bool = False,
) -> bool:
    """One op's campaign to its stop; False when it did not stop."""
    progress.say(f"== {op}: campaign (the first PyPTO run builds pypto's host library, ~1 min)")
    pilot = Autopilot(root, op, python, max_attempts, progress, workers, warm)
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
    finally:
        pilot.close()
    state = pilot.state()
    best = state.best
    timing = {
        **pilot.timer.summary(),
        "workers": workers,
        "warm": pilot.warm is not None,
        "ahead_runs": pilot.ahead.runs if pilot.ahead else 0,
        "ahead_killed": pilot.ahead.killed if pilot.ahead else 0,
    }
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
        return False
    if not stopped_before:
        # The final report shows the stop; a rerun of a finished campaign writes nothing.
        written = pilot.timer.ledger(lambda: report_files.write_report(pilot.ledger))
        click.echo(f"report written: {written['path']}")
    return True


if __name__ == "__main__":
    main()
