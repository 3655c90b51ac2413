"""The file backend of the store: `events.jsonl` on disk, locked by flock on `<ledger>.lock`,
torn tails kept in quarantine files beside it; the only code that writes a ledger file."""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path

from ledger.log import safe_files
from ledger.log.files import lock_path, refuse_symlinks
from ledger.log.integrity import Finding
from ledger.log.locks import lock_exclusively, opened_for_reading
from ledger.log.quarantine import QUARANTINE_SUFFIX, quarantine_number
from ledger.log.store_interface import Store


class FileStore(Store):
    """A ledger file, locked by flock on `<ledger>.lock`, torn tails kept in quarantine files."""

    def __init__(self, path: Path | str, root: Path | str | None = None) -> None:
        """`root` (the folder holding `custom/`), when known, lets `custom/` be checked too:
        no link between it and the ledger (DESIGN §4.1)."""
        super().__init__(str(path))
        self.path = Path(path)
        refuse_symlinks(self.path, None if root is None else Path(root))
        self.lock_path = lock_path(self.path)

    def quarantine_names(self) -> list[str]:
        prefix = self.path.name + QUARANTINE_SUFFIX
        if not self.path.parent.is_dir():
            return []
        found = [p.name for p in self.path.parent.iterdir() if p.name.startswith(prefix)]
        return sorted(found, key=quarantine_number)

    def quarantine_bytes(self, name: str) -> bytes:
        return safe_files.read_bytes(
            self.path.parent / name,
            limit=safe_files.LEDGER_BYTES,
            root=self.path.parent,
            follow=False,
        )

    def quarantine_exists(self, name: str) -> bool:
        """True when a quarantine file of that name is beside the ledger (a link counts: it is
        never followed; a name no file can have, with a NUL byte, is not there)."""
        return os.path.lexists(self.path.parent / name)

    def _read_from(self, offset: int) -> tuple[object, bytes]:
        with opened_for_reading(self.path) as fd:
            if fd is None:
                return None, b""
            size = safe_files.check_size(fd, self.path, safe_files.LEDGER_BYTES)
            return _identity(fd), os.pread(fd, max(size - offset, 0), offset)

    def _session(self) -> _FileSession:
        return _FileSession(self.path, self.lock_path)


class _FileSession:
    """The primitives of one append or rewrite of a ledger file, used while its lock is held:
    a context manager that takes the lock on entry and releases it on exit."""

    def __init__(self, path: Path, lock: Path) -> None:
        self.path = path
        self.lock = lock
        self.lock_fd = -1
        self.fd: int | None = None

    def __enter__(self) -> _FileSession:
        self.lock_fd = lock_exclusively(self.lock)
        # Read and written through one descriptor, so that a file replaced meanwhile (by a
        # checkout) is never read in one version and appended to in another.
        try:
            self.fd = safe_files.open_regular(self.path, os.O_RDWR | os.O_APPEND)
        except FileNotFoundError:
            self.fd = None
        except BaseException:
            os.close(self.lock_fd)
            raise
        return self

    def __exit__(self, *_exc: object) -> None:
        try:
            if self.fd is not None:
                os.close(self.fd)
        finally:
            os.close(self.lock_fd)  # closing the descriptor releases the flock

    def data(self) -> bytes:
        return b"" if self.fd is None else _read_all(self.fd, self.path)

    def stamp(self, tail: int) -> tuple[object, int, bytes]:
        return (None, 0, b"") if self.fd is None else _stamp_of(self.fd, tail)

    def quarantine(self, name: str, torn: bytes) -> None:
        safe_files.write_new(self.path.with_name(name), torn, root=self.path.parent)

    def truncate(self, size: int) -> None:
        if self.fd is None:  # a torn tail implies the file exists; nothing to cut otherwise
            return
        os.ftruncate(self.fd, size)
        os.fsync(self.fd)

    def write(self, lines: bytes) -> None:
        created = self.fd is None
        if self.fd is None:
            flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL
            self.fd = safe_files.open_regular(self.path, flags)
        size = os.fstat(self.fd).st_size
        try:
            safe_files.write_all(self.fd, lines)
            os.fsync(self.fd)
            if created:  # the new file's entry in its folder must be durable too
                safe_files.fsync_dir(self.path.parent)
        except BaseException:
            # The append reports failure, so none of its lines may stay (all or none), and
            # a ledger it was creating must not be left behind empty.
            with suppress(OSError):
                os.ftruncate(self.fd, size)
                if created:
                    self.path.unlink()
            raise

    def replace(self, data: bytes) -> None:
        # A new file renamed over the ledger: a crash leaves the old or the new bytes, and
        # readers holding the old file (an open descriptor) finish reading the old version.
        safe_files.replace_file(self.path, data, root=self.path.parent)


def _stamp_of(fd: int, tail: int) -> tuple[object, int, bytes]:
    """An open ledger file's identity, size and last `tail` bytes."""
    stat = os.fstat(fd)
    size = stat.st_size
    start = max(size - tail, 0)
    return (stat.st_dev, stat.st_ino), size, os.pread(fd, size - start, start)


def _identity(fd: int) -> tuple[int, int]:
    """The (device, inode) of an open file: a checkout that replaced the ledger changes it."""
    stat = os.fstat(fd)
    return stat.st_dev, stat.st_ino


def _read_all(fd: int, path: Path) -> bytes:
    """The whole ledger, refused (BadInput naming it) past the bound of a ledger's size."""
    return safe_files.read_descriptor(fd, path, safe_files.LEDGER_BYTES)


def chain_findings(path: Path | str) -> list[Finding]:
    """Every integrity finding about the ledger file at `path` (for audit)."""
    return FileStore(path).findings()
