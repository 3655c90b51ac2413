"""Files of an op's disposable cache folder (`custom/<op>/.tune-ledger-cache/`): the view
cache, the state snapshot and its seal, MEMORY.md's marker record all write and read through
here.

A small file is rewritten in place under a first line that holds the sha256 of the rest, and a
reader takes a file whose digest does not match as a miss; the snapshot, which a reader keeps
open, is replaced by a rename. Writing is best effort: a read-only checkout or a full disk
costs the speed-up, never the command.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path


def write_cache_file(folder: Path, name: str, data: bytes, *, in_place: bool = True) -> bool:
    """Write `data` as `folder/name`, `folder` being an op's disposable cache folder
    (CACHE_DIR, which ignores itself in git); False when it could not be written. Every cache
    beside a ledger (these views, the state snapshot and its seal, MEMORY.md's marker record)
    writes through here: a read-only checkout or a full disk costs the speed-up, never the
    command.

    A small file is rewritten in place under a first line that holds the sha256 of the rest
    (read it with `read_cache_file`), so a reader that meets it half written, or written by
    two writers at once, finds the digest wrong and takes it as a miss: no temporary file and
    rename, which cost ~0.2 ms each (about 1 ms on a busy disk) and a write command wrote
    three. `in_place=False` replaces the file by a rename instead, as given (the snapshot,
    which a reader keeps open and reads from in parts)."""
    try:
        # Not parents=True: the op's folder holds the ledger, and must not be created here.
        folder.mkdir(exist_ok=True)
        ignore = folder / ".gitignore"
        if not ignore.exists():
            _replace(ignore, b"# disposable tune-ledger cache (never committed)\n*\n")
        if in_place:
            _overwrite(folder / name, _sealed(data))
        else:
            _replace(folder / name, data)
    except OSError:
        return False
    return True


# The first line of a cache file written in place: this prefix, then the sha256 of the rest.
_SEAL = b"tune-ledger cache sha256="


def _sealed(data: bytes) -> bytes:
    return b"%s%s\n%s" % (_SEAL, hashlib.sha256(data).hexdigest().encode("ascii"), data)


def read_cache_file(path: Path) -> bytes | None:
    """The data `write_cache_file` wrote in place as `path`, or None when the file is missing,
    unreadable, or not whole (its digest line does not match what follows)."""
    try:
        found = path.read_bytes()
    except OSError:
        return None
    first, newline, data = found.partition(b"\n")
    if not newline or not first.startswith(_SEAL):
        return None
    if first[len(_SEAL) :] != hashlib.sha256(data).hexdigest().encode("ascii"):
        return None
    return data


def _overwrite(path: Path, data: bytes) -> None:
    """Write `data` over `path` in place, never through a link: a link planted in the cache
    folder (by a clone, by another user) is replaced by a rename rather than written through."""
    try:
        fd = os.open(
            path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644
        )
    except OSError:  # a symbolic link (ELOOP), a FIFO without a reader, ...
        _replace(path, data)
        return
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode) or found.st_nlink != 1:
            os.close(fd)
            fd = -1
            _replace(path, data)
            return
        written = 0
        while written < len(data):
            written += os.pwrite(fd, memoryview(data)[written:], written)
        os.ftruncate(fd, len(data))
    finally:
        if fd >= 0:
            os.close(fd)


def _replace(path: Path, data: bytes) -> None:
    # A name of its own per writer, so concurrent writers never write into one temp file.
    temp = path.with_name(f".{path.name}.{os.getpid()}-{os.urandom(4).hex()}.tmp")
    try:
        temp.write_bytes(data)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
