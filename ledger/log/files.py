"""Where an op's ledger and its lock file live, without importing the store."""

from __future__ import annotations

import os
from pathlib import Path

from ledger.errors import BadInput

LEDGER_NAME = "events.jsonl"
LOCK_SUFFIX = ".lock"


def ledger_path(root: Path | str, op: str) -> Path:
    """The ledger file of `op` under the folder that holds `custom/`."""
    return Path(root) / "custom" / op / LEDGER_NAME


def lock_path(ledger: Path) -> Path:
    """The lock file beside a ledger: writers hold it exclusively, readers shared."""
    return ledger.with_name(ledger.name + LOCK_SUFFIX)


MEMORY_NAME = "MEMORY.md"


def refuse_symlinks(ledger: Path) -> None:
    """Raise BadInput when the op's folder, its ledger, lock or MEMORY.md is a symbolic link.

    Followed, such a link sends appends to a file outside the root, or copies another file's
    bytes into the committed MEMORY.md; so these are refused, never resolved (DESIGN §4.1).
    Only files named like a ledger are checked around: git's merge driver hands the store
    temporary files, whose folder is not an op's.
    """
    if ledger.name != LEDGER_NAME:
        return
    for path in (ledger.parent, ledger, lock_path(ledger), ledger.parent / MEMORY_NAME):
        if path.is_symlink():
            kind = "folder" if path == ledger.parent else "file"
            raise BadInput(
                f"{path} is a symbolic link (to {os.readlink(path)}); tune-ledger does not "
                "follow links for an op's folder, ledger, lock or MEMORY.md",
                hint=f"replace the link with the real {kind} (e.g. copy the target in its "
                "place), then run it again",
            )
