"""Where an op's ledger and its lock file live, without importing the store."""

from __future__ import annotations

from pathlib import Path

LEDGER_NAME = "events.jsonl"
LOCK_SUFFIX = ".lock"


def ledger_path(root: Path | str, op: str) -> Path:
    """The ledger file of `op` under the folder that holds `custom/`."""
    return Path(root) / "custom" / op / LEDGER_NAME


def lock_path(ledger: Path) -> Path:
    """The lock file beside a ledger: writers hold it exclusively, readers shared."""
    return ledger.with_name(ledger.name + LOCK_SUFFIX)
