"""The locks of a ledger: writers hold `<ledger>.lock` exclusively, readers hold it shared.

One flock on one lock file beside the ledger serializes every writer (append, rewrite) and
keeps readers from seeing a write half done. It imports neither the store nor the event
classes.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ledger.log.files import lock_path
from ledger.log.safe_files import make_dirs, open_regular


@contextmanager
def exclusive_lock(lock: Path | str) -> Iterator[None]:
    """Hold the writer lock `lock`, creating it (and its folders, durably) if missing."""
    fd = lock_exclusively(lock)
    try:
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def lock_exclusively(lock: Path | str) -> int:
    """Take the writer lock `lock` (created with its folders, durably, if missing); the
    descriptor that holds it: closing it releases the lock."""
    # Never through a link, and never blocking on a FIFO planted in its place (safe_files).
    flags = os.O_RDWR | os.O_CREAT
    try:
        fd = open_regular(lock, flags)
    except FileNotFoundError:  # the op's folder does not exist yet: the first append
        make_dirs(Path(lock).parent)
        fd = open_regular(lock, flags)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextmanager
def shared_lock(lock: Path | str) -> Iterator[None]:
    """Hold a shared flock while reading, so a reader never sees a write half done."""
    try:
        fd = open_regular(lock)
    except FileNotFoundError:
        # No writer has run yet; a read must not create files (a read-only checkout).
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)


@contextmanager
def opened_for_reading(ledger: Path) -> Iterator[int | None]:
    """A read-only descriptor of the ledger (None when it does not exist), held open under
    the reader lock, so what is read through it is never a write half done."""
    with shared_lock(lock_path(ledger)):
        try:
            fd = open_regular(ledger)
        except FileNotFoundError:
            yield None
            return
        try:
            yield fd
        finally:
            os.close(fd)
