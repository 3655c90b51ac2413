"""Autopilot: plays the optimizer agent for the configuration stages, through the ledger's API.

    python -m tools.autopilot --op softmax [--root .] [--max-attempts N]
        [--workers N | --devices 0,1,... | --executor ray [--ray-address ADDR]]
        [--max-evaluations N] [--max-device-seconds S] [--max-wall-seconds S]

Every decision is taken from the replayed ledger, so the loop is resumable: interrupt it at
any moment (Ctrl-C, a crash, a kill) and run it again; a pending attempt is measured again
(the simulator is deterministic) and verified, nothing is lost or repeated. The search space
is SPEC.md's manifest (its knobs, stages and defaults); measurements go through
`tune-ledger target --from-spec` and `tune-ledger measure`, so the ledger builds and runs the
verifier command and binds every result to the attempt's config and kernel (R11).

Where the verifier runs (tools/dispatch.py): processes of this host (`--workers N`), this
host's NPUs one measurement at a time each (`--devices`), or a Ray cluster's NPUs (`--executor
ray`, the `farm` extra). This process alone writes the ledger, wherever the runs go.

This module is the command; tools/pilot.py takes the protocol's steps and keeps time.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ledger.domain import hints
from ledger.errors import LedgerError
from ledger.shell import report_files

from . import devices, farm
from .dispatch import ONE_WORKER, ExecutorName, Placement
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
    default=None,
    show_default="the number of cores; with --executor ray, the cluster's NPUs",
    help="Verifier runs at once: the pending attempt's and, ahead of it, the configs the "
    "campaign will try next, into the measurement cache (1: one run at a time). The ledger "
    "records the same attempts and verdicts whatever the number.",
)
@click.option(
    "--devices",
    metavar="0,1,...",
    default=None,
    help="Pin the verifier runs to these NPUs of this host, one measurement at a time on each "
    "(ASCEND_RT_VISIBLE_DEVICES=n, TILE_FWK_DEVICE_ID=0): one worker per NPU, two when the "
    "verifier is the PyPTO adapter (one prepares on the CPU while the other measures). "
    "Instead of --workers.",
)
@click.option(
    "--executor",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="local: processes of this host; ray: one Ray task per run, on a cluster's NPUs (the "
    "`farm` extra; the checkout and Python environment at the same paths on every node).",
)
@click.option(
    "--ray-address",
    default=None,
    help="With --executor ray: the cluster to join (default: $RAY_ADDRESS, else a new local one).",
)
@click.option(
    "--warm/--cold",
    default=True,
    show_default=True,
    help="Run each PyPTO child in a fork of one process that imported pypto and torch once "
    "(tools/pypto/warm.py), or start a new process for each (as before). The ledger records "
    "the same attempts and verdicts either way.",
)
@click.option(
    "--max-evaluations",
    type=click.IntRange(min=1),
    default=None,
    help="R10 budget, recorded as the op's policy: the campaign stops after N verifier results "
    "(upstream's tuners: 300). Default off.",
)
@click.option(
    "--max-device-seconds",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="R10 budget: stop after S seconds of verifier runs (their recorded durations). "
    "Default off.",
)
@click.option(
    "--max-wall-seconds",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="R10 budget: stop S seconds after the target sheet (recorded event times; upstream's "
    "tuners: 12-24 h). Default off.",
)
def main(
    root: str,
    ops: tuple[str, ...],
    max_attempts: int,
    python: str,
    workers: int | None,
    devices: str | None,
    executor: ExecutorName,
    ray_address: str | None,
    warm: bool,
    max_evaluations: int | None,
    max_device_seconds: float | None,
    max_wall_seconds: float | None,
) -> None:
    """Run (or resume) an autopilot campaign on each OP and print where each ended."""
    placement = _placement(workers, devices, executor, ray_address)
    progress = Progress()
    asked = {
        "max_evaluations": max_evaluations,
        "max_device_seconds": max_device_seconds,
        "max_wall_seconds": max_wall_seconds,
    }
    budgets = {key: value for key, value in asked.items() if value is not None}
    failed = [
        op
        for op in ops
        if not campaign(
            Path(root).resolve(), op, python, max_attempts, progress, placement, warm, budgets
        )
    ]
    if failed:
        raise SystemExit(1)


def _placement(
    workers: int | None, npus: str | None, executor: ExecutorName, ray_address: str | None
) -> Placement:
    """Where the runs go, from the options; a usage error (exit 2) for a combination that
    cannot be, or Ray asked for and not installed."""
    pinned = None
    if npus is not None:
        if workers is not None or executor != "local":
            raise click.UsageError(
                "--devices gives one worker per NPU of this host: leave out --workers and "
                "--executor ray (Ray hands each task its NPU)"
            )
        try:
            pinned = devices.parse_devices(npus)
        except ValueError as e:
            raise click.BadParameter(str(e), param_hint="--devices") from e
    if ray_address is not None and executor != "ray":
        raise click.UsageError("--ray-address goes with --executor ray")
    if executor == "ray":
        try:
            farm.require_ray()
        except farm.FarmUnavailable as e:
            raise click.UsageError(str(e)) from e
    return Placement(workers=workers, devices=pinned, executor=executor, ray_address=ray_address)


def campaign(
    root: Path,
    op: str,
    python: str,
    max_attempts: int,
    progress: Progress,
    placement: Placement = ONE_WORKER,
    warm: bool = False,
    budgets: dict[str, float] | None = None,
) -> bool:
    """One op's campaign to its stop; False when it did not stop."""
    progress.say(f"== {op}: campaign (the first PyPTO run builds pypto's host library, ~1 min)")
    try:
        pilot = Autopilot(root, op, python, max_attempts, progress, placement, warm, budgets)
    except farm.FarmUnavailable as e:
        click.echo(f"error: {e}", err=True)
        raise SystemExit(2) from None
    stopped_before = pilot.state().stopped is not None
    try:
        while pilot.step():
            pass
    except KeyboardInterrupt:
        click.echo("interrupted: run the same command again to resume from the ledger", err=True)
        raise SystemExit(130) from None
    except LedgerError as e:
        click.echo(hints.render_text(e.human(), "cli"), err=True)  # its steps as commands
        raise SystemExit(e.code) from None
    finally:
        pilot.close()
    state = pilot.state()
    best = state.best
    timing = {
        **pilot.timer.summary(),
        "workers": len(pilot.dispatch.workers),
        "executor": pilot.dispatch.label,
        # Where the Ray tasks ran (host/NPU: runs); empty off Ray.
        "placements": dict(pilot.dispatch.ray.placements) if pilot.dispatch.ray else {},
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
