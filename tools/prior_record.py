"""How the priors' candidates fared in finished campaigns, read from their ledgers.

    python -m tools.prior_record --root ROOT --op softmax --op matmul_bias_relu [--json]

For each op: "prior candidates: N measured, A adopted, G no-gain, R rolled back, F failed"
(ledger/priors/record.py), the figure docs/DESIGN.md gives for the bundled campaigns.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from ledger.errors import LedgerError
from ledger.priors.record import TrackRecord, track_record
from ledger.shell.api import OpLedger


def record_of(root: Path, op: str) -> TrackRecord:
    """The track record of `op`'s prior candidates, replayed from its ledger under `root`."""
    return track_record(OpLedger(root, op).load().state)


@click.command()
@click.option("--root", default=".", show_default=True, help="Folder that holds custom/.")
@click.option("--op", "ops", multiple=True, required=True, help="An op (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per op.")
def main(root: str, ops: tuple[str, ...], as_json: bool) -> None:
    """Print how each op's prior candidates fared: adopted, no gain, rolled back, failed."""
    for op in ops:
        try:
            record = record_of(Path(root), op)
        except LedgerError as e:
            click.echo(e.human(), err=True)
            raise SystemExit(e.code) from None
        if as_json:
            click.echo(json.dumps({"op": op, **record.as_json()}, sort_keys=True))
        else:
            click.echo(f"{op}: {record.text()}")


if __name__ == "__main__":
    main()
