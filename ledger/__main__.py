"""`python -m ledger`: the same as the `tune-ledger` console script."""

from ledger.cli import run

run()
