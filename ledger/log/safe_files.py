"""The file operations of the ledger: read only regular files, with a size bound, and never
write through a symbolic link; a file replaced atomically, folders made and fsynced.

Once cloned, a repository is input from strangers (STYLE.md): a committed link can send a
write outside it, and a link to /dev/zero or a FIFO can make a read run until the kernel
kills it, or hang. So every file the ledger reads or writes goes through here:

- A write never follows a link: the file and every folder between the root and it must not be
  links (the root itself is the user's choice of place), and a new file is made beside its
  final name and renamed over it.
- A read takes only a regular file (opened without blocking, then checked with fstat), at
  most `limit` bytes. With `root`, the file is one of the repository's: a link is followed
  only while everything it leads through stays inside the root (`follow=False`: never, for a
  file the ledger also writes). Without `root`, the caller named the file (an option's value):
  links are followed, and the rest holds.

Every refusal is BadInput (exit 2) naming the file and what to do.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from pathlib import Path

from ledger.errors import BadInput

# Bounds per kind of file, generous: a campaign's ledger is a few MiB; the texts people and
# the ledger write (SPEC.md, MEMORY.md, a kernel, a report) and a verifier's JSON document
# are kilobytes.
LEDGER_BYTES = 1 << 30
TEXT_BYTES = 8 << 20
JSON_BYTES = 8 << 20

_READ = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
_CHUNK = 1 << 20
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


# --- refusals ----------------------------------------------------------------------------------


def _link_error(path: Path | str, what: str) -> BadInput:
    try:
        target = f" (to {os.readlink(path)})"
    except OSError:
        target = ""
    return BadInput(
        f"{path} is a symbolic link{target}; tune-ledger does not follow links where it reads "
        "or writes its own files",
        hint=f"replace the link with the real {what} (e.g. copy the target in its place), "
        "then run it again",
    )


def _not_regular(path: Path | str, mode: int) -> BadInput:
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return BadInput(
        f"{path} is {kind}, not a regular file; tune-ledger reads and writes regular files only",
        hint="replace it with a regular file (or remove it), then run it again",
    )


def _too_large(path: Path | str, limit: int) -> BadInput:
    return BadInput(
        f"{path} is larger than {limit >> 20} MiB, the most tune-ledger reads of such a file",
        hint="this is not a file tune-ledger or a verifier writes at that size: check it "
        "(restore it from git, or point to the right file), then run it again",
    )


def _outside(path: Path | str, root: Path | str, real: str) -> BadInput:
    return BadInput(
        f"{path} is a symbolic link leading outside {root} (to {real}); tune-ledger follows "
        "links only inside the repository",
        hint="replace the link with the real file, then run it again",
    )


def refuse_links(path: Path | str, root: Path | str | None) -> None:
    """Raise BadInput when `path`, or a folder between `root` and it, is a symbolic link.

    `root` itself (and what lies above it) is taken as given; without `root`, or for a path
    outside it, only the file's own name is checked."""
    found = _first_link(os.fspath(path), None if root is None else os.fspath(root))
    if found is not None:
        raise _link_error(found, "file" if found == os.fspath(path) else "folder")


def _first_link(path: str, root: str | None) -> str | None:
    """The first entry from `root` down to `path` that is a symbolic link, or None (string
    operations and one lstat per entry: this runs for every file of every command)."""
    base, parts = os.path.dirname(path), [os.path.basename(path)]
    if root is not None:
        prefix = root.rstrip(os.sep) + os.sep
        if path.startswith(prefix):
            base, parts = root, path[len(prefix) :].split(os.sep)
    current = base
    for part in parts:
        current = os.path.join(current, part)
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            return None  # nothing below a missing entry exists
        if stat.S_ISLNK(mode):
            return current
    return None


# --- reading -----------------------------------------------------------------------------------


def open_regular(
    path: Path | str,
    flags: int = os.O_RDONLY,
    mode: int = 0o644,
    *,
    follow: bool = False,
    shown: Path | str | None = None,
) -> int:
    """A descriptor of the regular file `path`, opened without blocking (a FIFO) and, unless
    `follow`, without following a link at its name; BadInput (naming `shown`, default `path`)
    for a link or anything but a regular file."""
    shown = path if shown is None else shown
    flags |= os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags, mode)
    except OSError as e:
        if e.errno == errno.ELOOP and not follow:
            raise _link_error(shown, "file") from None
        if e.errno == errno.ENXIO:  # a socket, or a FIFO opened for writing that nobody reads
            raise _not_regular(shown, os.stat(path).st_mode) from None
        raise
    try:
        found = os.fstat(fd).st_mode
        if not stat.S_ISREG(found):
            raise _not_regular(shown, found)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_for_reading(path: Path, root: Path | str | None, follow: bool) -> int:
    if not follow:
        refuse_links(path, root)
        return open_regular(path)
    if root is None:
        return open_regular(path, follow=True)
    if ".." not in path.parts and _first_link(os.fspath(path), os.fspath(root)) is None:
        return open_regular(path)  # no link on the way: inside the root as written
    real = os.path.realpath(path)
    real_root = os.path.realpath(root)
    if os.path.commonpath([real, real_root]) != real_root:
        raise _outside(path, root, real)
    return open_regular(real, shown=path)


def read_bytes(
    path: Path | str, *, limit: int, root: Path | str | None = None, follow: bool = True
) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them (see the module's rules
    for `root` and `follow`); FileNotFoundError when it does not exist."""
    path = Path(path)
    fd = _open_for_reading(path, root, follow)
    try:
        return read_descriptor(fd, path, limit)
    finally:
        os.close(fd)


def read_optional(
    path: Path | str, *, limit: int, root: Path | str | None = None, follow: bool = True
) -> bytes | None:
    """`read_bytes`, or None when the file does not exist."""
    try:
        return read_bytes(path, limit=limit, root=root, follow=follow)
    except FileNotFoundError:
        return None


def read_text(
    path: Path | str, *, limit: int, root: Path | str | None = None, follow: bool = True
) -> str:
    """`read_bytes` decoded as UTF-8; BadInput naming the file when it is not UTF-8."""
    data = read_bytes(path, limit=limit, root=root, follow=follow)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(
            f"{path}: not UTF-8 text (byte {e.start})",
            hint="save the file as UTF-8 (or restore it from git), then run it again",
        ) from e


def check_size(fd: int, path: Path | str, limit: int) -> int:
    """The size of an open file; BadInput naming `path` when it is over `limit`."""
    size = os.fstat(fd).st_size
    if size > limit:
        raise _too_large(path, limit)
    return size


def read_descriptor(fd: int, path: Path | str, limit: int) -> bytes:
    """Every byte of an open regular file from its start, at most `limit` of them."""
    size = check_size(fd, path, limit)
    chunks = []
    total = 0
    # The whole file in one read when it does not grow meanwhile (the ledger's replay reads
    # it so); past the bound by one byte at most.
    while chunk := os.pread(fd, min(max(size - total, _CHUNK), limit + 1 - total), total):
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise _too_large(path, limit)
    return b"".join(chunks)


def digest(
    path: Path | str, *, limit: int, root: Path | str | None = None, follow: bool = True
) -> str:
    """sha256 (hex) of a regular file's bytes, read in chunks, at most `limit` of them."""
    path = Path(path)
    fd = _open_for_reading(path, root, follow)
    try:
        check_size(fd, path, limit)
        total = hashlib.sha256()
        size = 0
        while chunk := os.read(fd, _CHUNK):
            size += len(chunk)
            if size > limit:
                raise _too_large(path, limit)
            total.update(chunk)
        return total.hexdigest()
    finally:
        os.close(fd)


# --- writing -----------------------------------------------------------------------------------


def replace_file(
    path: Path | str, data: bytes, *, root: Path | str | None, durable_rename: bool = True
) -> None:
    """Write `data` as `path` so a crash leaves the old or the new file, never a mix.

    Refused (BadInput, nothing written) when `path` or a folder between `root` and it is a
    link, or `path` is not a regular file. The file keeps its permission bits. With
    `durable_rename` the folder is fsynced too, so the rename itself survives a crash;
    without it, a crash may bring back the old file (whole: its bytes were durable before),
    which suits a file regenerated from the ledger.
    """
    path = Path(path)
    refuse_links(path, root)
    try:
        found = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = 0o644
    else:
        if not stat.S_ISREG(found):
            raise _not_regular(path, found)
        mode = stat.S_IMODE(found)
    make_dirs(path.parent, root=root)
    # As tempfile.mkstemp makes it (a new name, O_EXCL, mode 0600), without importing tempfile
    # (and shutil and random with it) into every command that writes MEMORY.md.
    temporary = os.path.join(path.parent, f".{path.name}.{os.urandom(6).hex()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    handle = os.open(temporary, flags, 0o600)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fchmod(stream.fileno(), mode)
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    if durable_rename:
        fsync_dir(path.parent)


def write_new(path: Path | str, data: bytes, *, root: Path | str | None) -> None:
    """Create `path`, which must not exist (not even as a link), holding `data`, durably
    (file and folder); FileExistsError when it exists."""
    path = Path(path)
    refuse_links(path.parent, root)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(path, flags, 0o644)
    try:
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(path.parent)


def write_all(fd: int, data: bytes) -> None:
    """Write `data` with one os.write; loop only if the kernel writes less (a signal, ENOSPC)."""
    written = os.write(fd, data)
    while written < len(data):
        written += os.write(fd, memoryview(data)[written:])


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


def make_dirs(folder: Path | str, *, root: Path | str | None = None) -> None:
    """Create missing folders top-down, fsyncing each parent so the new entries are durable;
    BadInput when one between `root` and `folder` is a link (mkdir never follows one)."""
    folder = Path(folder)
    refuse_links(folder, root)
    missing = []
    while not os.path.lexists(folder):
        missing.append(folder)
        folder = folder.parent
    for created in reversed(missing):
        try:
            created.mkdir()
        except FileExistsError:
            continue  # another writer made it first
        fsync_dir(created.parent)
