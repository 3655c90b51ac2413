"""A disposable cache of the `status` and `resume` views, keyed by the ledger's position.

Both views are pure functions of the ledger's bytes (and of this code), but computing them
means verifying and replaying every event: O(events). Reading the ledger's position (one
stat, its last 64 KiB) and the cached output costs the same at any length, and needs none of
the modules that replay imports (attrs classes, cattrs, the stage machines).

The cache is never trusted over the ledger:

- it lives in `custom/<op>/.tune-ledger-cache/`, which ignores itself in git (a `.gitignore`
  holding `*`, like `.pytest_cache`): deleting it is always safe;
- an entry is used only when its key matches exactly: the format number, a fingerprint of the
  code (the `.py` files of `ledger/` and `stages/`, the version), the op, and the ledger's
  position (device, inode, size, mtime and ctime in ns, the id on the last line, the sha256 of
  its last 64 KiB). An append grows the file; a checkout replaces it (another inode); any
  other write moves its ctime, which no user can set back;
- any doubt (another key, an entry that does not parse, an unreadable one) means computing
  the views from the ledger as if there were no cache, then rewriting the entry (temp file and
  rename: readers see the old entry or the new one, never half of one);
- views computed from bytes that changed meanwhile, or with a warning (a torn tail), are not
  written; nor is anything when computing failed (no ledger, a damaged one), so errors stay
  exactly those of the uncached path;
- writing is best effort: a read-only checkout or a full disk costs the speed-up, not the
  command.

`audit` and `check` never read it. `TUNE_LEDGER_NO_CACHE=1` bypasses it (reading and writing).
Residual risk, stated: an in-place rewrite that keeps the size, the inode, the last 64 KiB and
lands in the same timestamp tick (a few ms) as the write before it goes unseen until `audit`.
"""

from __future__ import annotations

import hashlib
import math
import os
import sys
from collections.abc import Callable
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ledger import __version__
from ledger.log import codec
from ledger.log.files import refuse_symlinks
from ledger.log.locks import opened_for_reading
from ledger.projections.cache_file import read_cache_file, write_cache_file

if TYPE_CHECKING:
    from ledger.domain.state import State

# Bumped whenever what an entry holds changes shape (2: written in place, under its digest).
FORMAT = 2
NO_CACHE_ENV = "TUNE_LEDGER_NO_CACHE"
CACHE_DIR = ".tune-ledger-cache"
ENTRY_NAME = "views.json"
# How much of the ledger's end the key hashes: a command's batch is a few KiB, so this covers
# the last several commands; hashing it costs ~50 µs.
TAIL_BYTES = 64 * 1024

# {"status": {"json": ..., "text": ...}, "resume": {...}, "log": {"rows": ...}}: each view as
# it is printed (one JSON object with --json, else text), so that a hit decodes and encodes no
# large structure (`status` lists every optimization point: its output grows with the
# campaign); `log` as the JSON rows of the latest attempts, which `log --limit N` slices.
Rendered = dict[str, dict[str, str]]
VIEWS = ("status", "resume")
# The latest attempts the cached `log` view holds: `log --limit N` with N up to this and no
# filter prints from the cache, as `status` does (an agent reads its last few attempts).
LOG_ROWS = 20


def disabled() -> bool:
    """True when the environment asks for every view to be computed from the ledger."""
    return os.environ.get(NO_CACHE_ENV, "") not in ("", "0")


def cached_views(
    path: Path, op: str, compute: Callable[[], tuple[Rendered, list[str]]]
) -> tuple[Rendered, list[str]]:
    """The rendered views of the ledger at `path` and the warnings about it: from the cache
    when its entry matches the ledger's position and the code, else from `compute()` (whose
    errors propagate untouched), which then becomes the entry.

    Views with warnings (a torn tail) are not cached: the warning names the path as typed,
    and the next state-changing command repairs the tail anyway."""
    refuse_symlinks(path)  # a hit must refuse a linked ledger as the replay would (exit 2)
    if disabled():
        return compute()
    before = position(path)
    if before is None:  # no ledger (or none readable): compute() raises what it always raised
        return compute()
    key = _key(op, before)
    found = _read_entry(path.parent / CACHE_DIR / ENTRY_NAME, key)
    if found is not None:
        return found, []
    rendered, warnings = compute()
    # Written only when nothing moved while computing: the views are then those of `before`.
    if not warnings and position(path) == before:
        _write_entry(path.parent / CACHE_DIR, key, rendered)
    return rendered, warnings


def remember(
    path: Path, op: str, state: State, head: str, now: dict[str, Any] | None = None
) -> bool:
    """Cache the views of `state`, the state of the ledger at `path` whose last event is
    `head` (just appended by this process), so that the next `status` is a hit; True when
    written. Nothing is written when the file no longer ends with that event's complete line
    (another writer got in, or left a torn tail). `now`: the ledger's `position` read after
    the append, when the caller read it already (the state snapshot's seal needs it too)."""
    if disabled():
        return False
    try:
        rendered = render(state, [])
    except Exception:  # noqa: BLE001 - see below
        # The command's events are durable already: a view that cannot be rendered must not
        # make it look failed. `status` renders on its own and reports the bug there.
        return False
    if now is None:
        now = position(path)
    if now is None or now["head"] != head:
        return False
    _write_entry(path.parent / CACHE_DIR, _key(op, now), rendered)
    return True


def render(state: State, warnings: list[str]) -> Rendered:
    """`status` and `resume` of a replayed state, as printed (`warnings`: about the file)."""
    from ledger.projections import views

    status = _json_safe({**views.status(state), "warnings": warnings})
    # `status` is JSON-safe already: only the fields resume adds are made so.
    resume = {**status, **_json_safe(views.resume_fields(state, status["allowed"]))}
    return {
        "status": {"json": codec.canonical_json(status), "text": views.status_text(status)},
        "resume": {"json": codec.canonical_json(resume), "text": views.resume_text(resume)},
        "log": {"rows": _log_rows_json(state)},
    }


_ROWS = "log-rows"  # the key of the settled attempts' encoded rows in State.derived


def _log_rows_json(state: State) -> str:
    """`canonical_json(views.attempt_rows(state, limit=LOG_ROWS))`, with the row of each
    settled attempt encoded once: only a merge changes it again, and that bumps
    `finished_revision`, with which the kept rows are dropped."""
    from ledger.projections import views

    kept = state.derived.get(_ROWS)
    earlier: dict[str, str] = {}
    if isinstance(kept, tuple) and kept[0] == state.finished_revision:
        earlier = kept[1]
    latest = list(islice(reversed(state.attempts.values()), LOG_ROWS))  # as attempt_rows
    latest.reverse()
    rows, settled = [], {}
    for attempt in latest:
        row = earlier.get(attempt.id) if attempt.status != "pending" else None
        if row is None:
            row = codec.canonical_json(views.attempt_row(attempt))
        if attempt.status != "pending":
            settled[attempt.id] = row
        rows.append(row)
    state.derived[_ROWS] = (state.finished_revision, settled)
    return "[" + ",".join(rows) + "]"


def latest_rows(rendered: Rendered, limit: int) -> list[dict[str, Any]] | None:
    """`log --limit LIMIT`'s rows from rendered views, or None when they do not hold them
    (more than LOG_ROWS asked, an entry of older code)."""
    log = rendered.get("log")
    rows = log.get("rows") if isinstance(log, dict) else None
    if limit > LOG_ROWS or not isinstance(rows, str):
        return None
    try:
        found = codec.loads(rows)
    except ValueError:
        return None  # an entry that does not parse is no entry (as in `_read_entry`)
    if not isinstance(found, list) or not all(isinstance(row, dict) for row in found):
        return None
    return found[-limit:]


def _json_safe(value: Any) -> Any:
    """`value` with every float JSON cannot carry (an infinity, NaN) as null: a value an older
    release recorded (a target so small that Baseline/Target overflows) must never make a read
    command fail (R11)."""
    kind = type(value)  # the usual plain types first: status walks a few hundred values
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


def torn_warning(path: Path | str, line: int, byte_count: int, reason: str) -> str:
    """The warning about a torn tail awaiting repair (none torn: a newline to restore)."""
    if byte_count == 0:
        return f"{path}:{line}: {reason}"
    return (
        f"{path}:{line}: torn tail of {byte_count} bytes ({reason}); the next "
        "state-changing command quarantines it"
    )


# --- the key -------------------------------------------------------------------------------


def position(path: Path) -> dict[str, Any] | None:
    """Where the ledger at `path` stands, or None when it cannot be read or changed while
    being read. Read under the store's shared lock, so no append is seen half written."""
    try:
        with opened_for_reading(path) as fd:
            if fd is None:
                return None
            before = os.fstat(fd)
            start = max(before.st_size - TAIL_BYTES, 0)
            tail = os.pread(fd, before.st_size - start, start)
            after = os.fstat(fd)
    except OSError:
        return None
    stamp = _stamp(before)
    if stamp != _stamp(after) or len(tail) != before.st_size - start:
        return None  # written to meanwhile (a writer that does not take the lock)
    device, inode, size, mtime_ns, ctime_ns = stamp
    return {
        "device": device,
        "inode": inode,
        "size": size,
        "mtime_ns": mtime_ns,
        "ctime_ns": ctime_ns,
        "head": _last_id(tail),
        "tail_sha256": hashlib.sha256(tail).hexdigest(),
    }


def _stamp(stat: os.stat_result) -> tuple[int, int, int, int, int]:
    return stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns


def _last_id(tail: bytes) -> str | None:
    """The id on the ledger's last line when the file ends with a complete line."""
    if not tail.endswith(b"\n"):
        return None  # empty, or a torn tail
    start = tail.rfind(b"\n", 0, len(tail) - 1) + 1
    line = tail[start:]
    end = len(codec.ID_PREFIX) + codec.ID_HEX
    if not line.startswith(codec.ID_PREFIX) or len(line) < end:
        return None
    return line[len(codec.ID_PREFIX) : end].decode("ascii", errors="replace")


def _key(op: str, where: dict[str, Any]) -> dict[str, Any]:
    return {"format": FORMAT, "code": code_fingerprint(), "op": op, "ledger": where}


_fingerprint: str | None = None


def code_fingerprint() -> str:
    """A digest of what shapes the views: the name, size and mtime of every `.py` file of the
    `ledger` and `stages` packages, the version and the interpreter (computed once)."""
    global _fingerprint
    if _fingerprint is None:
        package = Path(__file__).resolve().parents[1]
        digest = hashlib.sha256(f"{FORMAT}|{__version__}|{sys.implementation.cache_tag}".encode())
        # Every subpackage of the layout counts: a change in any layer may change a view.
        folders = [
            package,
            *sorted(p for p in package.iterdir() if (p / "__init__.py").is_file()),
            package.parent / "stages",
        ]
        for folder in folders:
            digest.update(repr((folder.name, _py_files(folder))).encode("utf-8"))
        _fingerprint = digest.hexdigest()
    return _fingerprint


def _py_files(folder: Path) -> list[tuple[str, int, int]]:
    try:
        with os.scandir(folder) as entries:
            found = []
            for entry in entries:
                if entry.name.endswith(".py") and entry.is_file():
                    stat = entry.stat()
                    found.append((entry.name, stat.st_size, stat.st_mtime_ns))
    except OSError:
        return []
    return sorted(found)


# --- the entry -----------------------------------------------------------------------------


def _read_entry(path: Path, key: dict[str, Any]) -> Rendered | None:
    """The entry's views when it exists, is whole, parses, has the expected shape and matches
    `key`."""
    data = read_cache_file(path)
    if data is None:
        return None
    try:
        entry = codec.loads(data)
    except ValueError:
        return None
    if not isinstance(entry, dict) or entry.get("key") != key:
        return None
    views = entry.get("views")
    if not isinstance(views, dict) or not all(_is_rendered(views.get(v)) for v in VIEWS):
        return None
    return views


def _is_rendered(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(value.get(k), str) for k in ("json", "text"))


def _write_entry(directory: Path, key: dict[str, Any], views: Rendered) -> None:
    """Replace the entry atomically; any OSError (read-only, full disk) leaves it as it was."""
    text = codec.canonical_json({"key": key, "views": views})
    write_cache_file(directory, ENTRY_NAME, text.encode("utf-8"))
