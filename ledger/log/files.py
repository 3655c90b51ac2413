"""Where an op's ledger lives and how a reader locks it, without importing the store.

The store (`ledger/log/store.py`) is the only code that reads or writes `events.jsonl`; the view
cache only fingerprints it, under the same reader lock. Both take the names and the lock from
here, so the cheap path of `status` needs neither the store nor the event classes it imports.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LEDGER_NAME = "events.jsonl"
LOCK_SUFFIX = ".lock"


def ledger_path(root: Path | str, op: str) -> Path:
    """The ledger file of `op` under the folder that holds `custom/`."""
    return Path(root) / "custom" / op / LEDGER_NAME


def lock_path(ledger: Path) -> Path:
    """The lock file beside a ledger: writers hold it exclusively, readers shared."""
    return ledger.with_name(ledger.name + LOCK_SUFFIX)


@contextmanager
def opened_for_reading(ledger: Path) -> Iterator[int | None]:
    """A read-only descriptor of the ledger (None when it does not exist), held open under
    the reader lock, so what is read through it is never an append half written."""
    with shared_lock(lock_path(ledger)):
        try:
            fd = os.open(ledger, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            yield None
            return
        try:
            yield fd
        finally:
            os.close(fd)


@contextmanager
def shared_lock(lock: Path | str) -> Iterator[None]:
    """Hold a shared flock while reading, so a reader never sees an append half written."""
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        # No writer has run yet; a read must not create files (a read-only checkout).
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)
