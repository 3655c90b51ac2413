"""Durable file system changes: a file replaced atomically, folders made and fsynced."""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path


def replace_file(path: Path, data: bytes, *, durable_rename: bool = True) -> None:
    """Write `data` as `path` so a crash leaves the old or the new file, never a mix.

    The file keeps its permission bits. With `durable_rename` the folder is fsynced too, so
    the rename itself survives a crash; without it, a crash may bring back the old file
    (whole: its bytes were durable before), which suits a file regenerated from the ledger.
    """
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o644
    path.parent.mkdir(parents=True, exist_ok=True)
    # As tempfile.mkstemp makes it (a new name, O_EXCL, mode 0600), without importing tempfile
    # (and shutil and random with it) into every command that writes MEMORY.md.
    temporary = os.path.join(path.parent, f".{path.name}.{os.urandom(6).hex()}.tmp")
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    if durable_rename:
        fsync_dir(path.parent)


def fsync_dir(folder: Path | str) -> None:
    """Make the entries of `folder` (a create, a rename) durable; a file system that cannot
    sync a folder (EINVAL) is skipped, and every other error propagates."""
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(descriptor)
    except OSError as e:
        # Some file systems (certain network and FUSE mounts) do not implement fsync on a
        # folder and say so with EINVAL: there is nothing more durable to ask them for. Any
        # other error (EIO, ENOSPC) means the entry may not be on disk and must be reported.
        if e.errno != errno.EINVAL:
            raise
    finally:
        os.close(descriptor)


def make_dirs(folder: Path) -> None:
    """Create missing folders top-down, fsyncing each parent so the new entries are durable."""
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for created in reversed(missing):
        try:
            created.mkdir()
        except FileExistsError:
            continue  # another writer made it first
        fsync_dir(created.parent)
