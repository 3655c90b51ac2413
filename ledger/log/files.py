"""Where an op's ledger and its lock file live, without importing the store."""

from __future__ import annotations

from pathlib import Path

from ledger.log.safe_files import refuse_links

LEDGER_NAME = "events.jsonl"
LOCK_SUFFIX = ".lock"


def ledger_path(root: Path | str, op: str) -> Path:
    """The ledger file of `op` under the folder that holds `custom/`."""
    return Path(root) / "custom" / op / LEDGER_NAME


def lock_path(ledger: Path) -> Path:
    """The lock file beside a ledger: writers hold it exclusively, readers shared."""
    return ledger.with_name(ledger.name + LOCK_SUFFIX)


MEMORY_NAME = "MEMORY.md"


def refuse_symlinks(ledger: Path, root: Path | None = None) -> None:
    """Raise BadInput when the op's folder (or `custom/` between `root` and it), its ledger,
    lock or MEMORY.md is a symbolic link.

    Followed, such a link sends appends to a file outside the root, or copies another file's
    bytes into the committed MEMORY.md; so these are refused, never resolved (DESIGN §4.1).
    Only files named like a ledger are checked around: git's merge driver hands the store
    temporary files, whose folder is not an op's.
    """
    if ledger.name != LEDGER_NAME:
        return
    folder = ledger.parent
    refuse_links(folder, root if root is not None else folder.parent)
    for path in (ledger, lock_path(ledger), folder / MEMORY_NAME):
        refuse_links(path, folder)
