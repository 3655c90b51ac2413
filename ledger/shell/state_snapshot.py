"""A disposable snapshot of an op's replayed state, so that a command folds only the tail.

Replaying verifies and folds every event: O(events), 1-2 s at 100k events, for every command
of a process that lives for one command. The snapshot keeps, beside the ledger, the state
replayed from a prefix of it and the verifier's position there (the tip and its walker); a
command then verifies and folds only the bytes appended after that prefix.

It is never trusted over the ledger, like the view cache (ledger/projections/view_cache.py,
whose key and file helpers it reuses):

- it lives in `custom/<op>/.tune-ledger-cache/` (ignored by git, safe to delete); `audit` and
  `check` never read it (`OpLedger.load(snapshot=False)`); `TUNE_LEDGER_NO_CACHE=1` bypasses
  it, reading and writing;
- `state.pickle` holds the state at a prefix of `base` bytes and the ledger's position when
  it was written (device, inode, size, mtime and ctime in ns, last id, sha256 of the last
  64 KiB); it is used only with the same format, code fingerprint and op;
- the prefix is trusted only when the ledger's position now is exactly that one (nothing
  written since), or exactly the one in `state-seal.json`, which a command of this code
  writes after its own append: that command had trusted the prefix and appended after it
  under the store's lock, and any other write moves the file's ctime (no user can set it
  back) or replaces it (a checkout, `normalize`, a merge: another inode). Anything else (no
  seal, another one, a file rewritten, truncated, rolled back or tampered with) means a full
  replay, which then writes a new snapshot;
- the tail after the prefix is verified as a full replay verifies it (content ids, parents,
  Lamport counters, batches) by the walker saved with the prefix, which remembers every id;
  bytes that do not resume cleanly (a torn tail, damage, a quarantine file) mean a full
  replay, which reports them as before;
- a snapshot or seal that does not load, or has another shape, is ignored; writing is best
  effort (a read-only checkout costs the speed-up, not the command);
- a snapshot is a pickle, and unpickling runs code: it is unpickled only when it carries the
  HMAC of this user's own key (`~/.cache/tune-ledger/snapshot.key`, or under $XDG_CACHE_HOME,
  made on first use, mode 0600, outside every repository), so a file that came with a
  clone, or was written by anyone else, is never loaded. Without a usable key, no snapshots.

Residual risk, stated (the view cache's): a rewrite in place of the prefix that keeps the
size, the inode and the last 64 KiB, within the same timestamp tick as the write before it,
goes unseen until `audit`.

Cost, measured at 100k events (32k attempts): the snapshot is ~14.5 MB (a 4.8 MB header, of
which the walker's seen ids are 2.4 MB; R9's key texts, 5.2 MB, and the attempts, 4.5 MB, in
parts of 500 after it); restoring it takes ~0.025 s (0.036 s with R9's keys in the header),
and neither the file's bytes nor the attempts and key texts a command does not read are held:
the header is unpickled as it is read, after its tag was checked by streaming through it,
and each part is read from the open file and unpickled when one of its attempts or keys is
first read (ledger/domain/lazy_attempts.py, ledger/domain/lazy_measured.py; a write reads a
part or two of each). A write's peak RSS at 100k events is then ~1.5 times that at 100
events. Writing a snapshot takes ~0.5 s, so after an append only the seal is written while
the tail stays below `TAIL_LIMIT`, and a new snapshot past it.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import pickle
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from attrs import evolve as attrs_evolve

import ledger.shell.snapshot_parts as snapshot_parts
from ledger.domain import lazy_measured
from ledger.domain.compact_attempts import compact_attempts
from ledger.domain.state import State
from ledger.log import codec
from ledger.log.chain import Tip, paused_gc
from ledger.log.store import FileStore
from ledger.log.tip_stamp import Stamp
from ledger.projections import cache_file, view_cache

# Bumped whenever what a snapshot holds changes shape (2: the walker's seen ids packed, the
# attempts compacted and written after the rest: ledger/log/lamport_table.py,
# ledger/domain/compact_attempts.py, ledger/shell/snapshot_parts.py; 3: the header gives each
# part's size; 4: and each part's own tag, so a part is read from the file only when one of
# its attempts is; 5: R9's keys as a digest table in the header, their texts in parts before
# the attempts': ledger/domain/lazy_measured.py).
FORMAT = 5
SNAPSHOT_NAME = "state.pickle"
SEAL_NAME = "state-seal.json"
# How many bytes after the prefix a command folds before a new snapshot is written: ~300
# events, ~10 ms of verifying and folding, against ~0.6 s to write a 100k-event snapshot.
TAIL_LIMIT = 256 * 1024
# A snapshot file: this magic line, the HMAC-SHA256 under the user's key of what follows up
# to the header's end, the header's length (LENGTH_BYTES, big-endian), the header (a pickle
# of the state without its attempts and R9's key texts, the tip, R9's digest table, and each
# part's size, HMAC and CRC-32), then R9's key texts and the attempts in parts (pickles).
# The header's tag is checked before it is unpickled; each part's CRC when reading through
# the parts before the state is used (a damaged part means no snapshot, as a damaged header
# does), and its tag when the part is read from the still open file and unpickled: a
# process holds neither the parts' bytes (~9.7 MB at 100k events) nor the attempts and key
# texts it never reads.
MAGIC = b"tune-ledger state snapshot 2\n"
TAG_BYTES = 32
LENGTH_BYTES = 8
HEADER_AT = len(MAGIC) + TAG_BYTES + LENGTH_BYTES


class Restored:
    """A state and tip restored from the snapshot, and which snapshot it came from."""

    def __init__(self, state: State, tip: Tip, nonce: str, base: int) -> None:
        self.state = state
        self.tip = tip
        self.nonce = nonce  # the snapshot's own id, named by the seals that extend it
        self.base = base  # the byte count of the prefix the snapshot covers


def enabled(store: object) -> bool:
    """True when snapshots may be used for `store` (a ledger file, caches not disabled)."""
    return isinstance(store, FileStore) and not view_cache.disabled() and _key_bytes() is not None


def restore(store: FileStore, op: str, evolve: Callable[[State, Any], object]) -> Restored | None:
    """The state of the ledger in `store`, from the snapshot plus the tail after it; None when
    there is no usable snapshot (the caller then replays the whole ledger)."""
    folder = store.path.parent / view_cache.CACHE_DIR
    now = view_cache.position(store.path)
    if now is None:
        return None
    found = _read_snapshot(folder / SNAPSHOT_NAME, op)
    if found is None:
        return None
    if now != found["position"] and now != _read_seal(folder / SEAL_NAME, found["nonce"]):
        return None
    state, tip = found["state"], found["tip"]
    assert isinstance(state, State) and isinstance(tip, Tip)
    tip = attrs_evolve(tip, name=store.name)  # messages name the path as typed now
    resumed = store.stream_after(tip, lambda event: evolve(state, event))
    if resumed is None:
        return None
    return Restored(state, resumed, found["nonce"], found["base"])


def remember(
    store: FileStore,
    op: str,
    state: State,
    tip: Tip | None,
    restored: Restored | None,
    warm: Callable[[State], None] | None = None,
    now: dict[str, Any] | None = None,
) -> Restored | None:
    """After this process verified (or appended) up to `tip`, with `state` the ledger's state
    there: keep it for the next command. Writes the seal when `restored`'s snapshot covers all
    but a short tail, else a new snapshot, after `warm` built the indexes it should carry in
    `state.derived`. Returns what the next call should extend. `now`: the ledger's position
    (`view_cache.position`) when the caller read it already."""
    if tip is None or not isinstance(tip.stamp, Stamp) or tip.cursor is None:
        return None  # a tip that cannot be resumed from (a torn tail, a repair to make)
    if now is None:
        now = view_cache.position(store.path)
    if now is None or now["size"] != tip.size or now["head"] not in tip.head:
        return None  # another writer got in since: its own command keeps its state
    folder = store.path.parent / view_cache.CACHE_DIR
    if restored is not None and tip.size - restored.base <= TAIL_LIMIT:
        cache_file.write_cache_file(
            folder,
            SEAL_NAME,
            codec.canonical_json({"snapshot": restored.nonce, "position": now}).encode("utf-8"),
        )
        return restored
    secret = _key_bytes()
    if secret is None:
        return None
    nonce = os.urandom(8).hex()
    if warm is not None:
        warm(state)
    compact_attempts(state)  # smaller to write, to load and to keep loaded
    walker = tip.cursor
    sink, walker.sink = walker.sink, None  # the sink is this process's fold, not data
    attempts, measured = state.attempts, state.measured_configs
    ids = list(attempts)
    found = lazy_measured.frozen_table(measured, ids)
    if found is None:
        return None
    texts, table = found
    # Both written apart, after the header (ledger/shell/snapshot_parts.py).
    state.attempts, state.measured_configs = {}, {}
    try:
        keys = snapshot_parts.config_keys(attempts, texts)
        ordered, positions = snapshot_parts.sorted_ids(ids)
        header = {
            "key": _key(op),
            "nonce": nonce,
            "base": tip.size,
            "position": now,
            "state": state,
            "tip": tip,
            # Each attempt's id, as objects of this pickle: the attempts read after it, and
            # R9's values, take them instead of copies.
            "ids": ids,
            # Them sorted, and their positions: found by binary search (`SortedIds`).
            "ids_sorted": ordered,
            "ids_positions": positions,
            # The place of the R9 key each attempt's config text is (else -1): the attempt
            # read takes the key's text object instead of a copy.
            "keys": keys.tobytes(),
            "measured": table,
        }
        parts = snapshot_parts.text_parts(texts, TEXTS_PER_PART)
        header["text_parts"] = len(parts)
        parts += snapshot_parts.attempt_parts(attempts, keys, ATTEMPTS_PER_PART)
        # Where each part is, so that a process unpickles only the parts it reads.
        header["per_part"] = ATTEMPTS_PER_PART
        header["texts_per_part"] = TEXTS_PER_PART
        header["part_sizes"] = [len(part) for part in parts]
        header["part_tags"] = [snapshot_parts.tag(secret, [part]) for part in parts]
        header["part_crcs"] = [zlib.crc32(part) for part in parts]
        head = pickle.dumps(header, protocol=pickle.HIGHEST_PROTOCOL)
        del header
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
        return None
    finally:
        state.attempts, state.measured_configs = attempts, measured
        walker.sink = sink
    length = len(head).to_bytes(LENGTH_BYTES, "big")
    data = b"".join([MAGIC, snapshot_parts.tag(secret, [length, head]), length, head, *parts])
    del parts, head
    # Replaced by a rename: a process that restored the previous one reads it in parts.
    if not cache_file.write_cache_file(folder, SNAPSHOT_NAME, data, in_place=False):
        return None
    return Restored(state, tip, nonce, tip.size)


def _key(op: str) -> dict[str, Any]:
    return {"format": FORMAT, "code": view_cache.code_fingerprint(), "op": op}


def _read_snapshot(path: Path, op: str) -> dict[str, Any] | None:
    """The snapshot when it is signed with this user's key, loads, has the expected shape and
    this code's key; its state's attempts are read and unpickled as they are read
    (`snapshot_parts.lazy_attempts`), from the file kept open."""
    secret = _key_bytes()
    if secret is None:
        return None
    file = None
    try:
        file = open(path, "rb")  # noqa: SIM115 - kept open for the parts read later
        start = file.read(HEADER_AT)
        if len(start) != HEADER_AT or not start.startswith(MAGIC):
            return None
        length = start[-LENGTH_BYTES:]
        size = int.from_bytes(length, "big")
        # The header's tag is checked by streaming through it, then the header is unpickled
        # from the file as it is read again (the page cache's copy): its ~9 MB of bytes at
        # 100k events are never held whole, which was the peak of a write's memory. Bytes
        # changed in place between the two reads would be a local writer racing this very
        # process inside the user's own checkout, where it could as well change the code.
        signature = hmac.new(secret, length, digestmod=hashlib.sha256)
        if snapshot_parts.streamed(file, size, signature.update) != size:
            return None
        if not hmac.compare_digest(signature.digest(), start[len(MAGIC) : -LENGTH_BYTES]):
            return None  # not written by this user's tune-ledger: never unpickled
        file.seek(HEADER_AT)
        with paused_gc():  # the collector would rescan the growing object graph
            found: dict[str, Any] = pickle.load(file)
        parts_at = HEADER_AT + size
        if file.tell() != parts_at or not _expected(found, op):
            return None
        if not snapshot_parts.parts_check(file, found):
            return None
        state: State = found["state"]
        if state.attempts or state.measured_configs:
            return None  # the header holds attempts or R9 keys: not this format
        reader = snapshot_parts.PartReader(file, parts_at, secret, found)
        texts = snapshot_parts.key_texts(reader, found)
        state.measured_configs = lazy_measured.restored(found["measured"], found["ids"], texts)
        state.attempts = snapshot_parts.lazy_attempts(reader, found, texts)
        file = None  # the reader owns it now
    except Exception:  # noqa: BLE001 - a snapshot that does not load is ignored, whatever it is
        return None
    finally:
        if file is not None:
            file.close()
    return found


def _expected(found: Any, op: str) -> bool:
    """True when a snapshot's header has this code's key and the expected shape."""
    if not isinstance(found, dict) or found.get("key") != _key(op):
        return False
    if not isinstance(found.get("state"), State) or not isinstance(found.get("tip"), Tip):
        return False
    if not isinstance(found.get("position"), dict) or not isinstance(found.get("base"), int):
        return False
    ids, keys, sizes = found.get("ids"), found.get("keys"), found.get("part_sizes")
    per_part, tags = found.get("per_part"), found.get("part_tags")
    texts_per_part, table = found.get("texts_per_part"), found.get("measured")
    if not isinstance(ids, list) or type(keys) is not bytes or len(keys) != 4 * len(ids):
        return False
    ordered, positions = found.get("ids_sorted"), found.get("ids_positions")
    if not isinstance(ordered, list) or len(ordered) != len(ids):
        return False
    if type(positions) is not bytes or len(positions) != 4 * len(ids):
        return False
    if type(per_part) is not int or per_part < 1 or not isinstance(sizes, list):
        return False
    if type(texts_per_part) is not int or texts_per_part < 1 or not isinstance(table, dict):
        return False
    if type(table.get("count")) is not int or table["count"] < 0:
        return False
    if not isinstance(tags, list) or len(tags) != len(sizes):
        return False
    if not all(type(t) is bytes and len(t) == TAG_BYTES for t in tags):
        return False
    crcs = found.get("part_crcs")
    if not isinstance(crcs, list) or len(crcs) != len(sizes):
        return False
    attempt_parts, text_parts = -(-len(ids) // per_part), -(-table["count"] // texts_per_part)
    if found.get("text_parts") != text_parts:
        return False
    return len(sizes) == attempt_parts + text_parts and all(type(n) is int and n > 0 for n in sizes)


# The attempts are written after the header, a few hundred to a pickle of their own: an
# unpickler keeps every object it made until it returns (for later references to it), and
# in one pickle that held each attempt's and measurement's arguments (~10 MB at 32k
# attempts, a third of the loaded state) until the whole state was loaded. Parts also let a
# process unpickle only the attempts it reads (ledger/domain/lazy_attempts.py).
ATTEMPTS_PER_PART = 500
# R9's key texts likewise, after the attempts: a command looks keys up by digest
# (ledger/domain/lazy_measured.py) and loads a part only to iterate or to read an attempt.
TEXTS_PER_PART = 500


def _read_seal(path: Path, nonce: str) -> dict[str, Any] | None:
    """The position recorded by the seal of snapshot `nonce`, or None."""
    data = cache_file.read_cache_file(path)
    if data is None:
        return None
    try:
        seal = codec.loads(data)
    except ValueError:
        return None
    if not isinstance(seal, dict) or seal.get("snapshot") != nonce:
        return None
    position = seal.get("position")
    return position if isinstance(position, dict) else None


_secret: list[bytes | None] = []


def _key_bytes() -> bytes | None:
    """This user's snapshot key, made on first use; None when there is no place for it."""
    if not _secret:
        _secret.append(_read_or_make_key())
    return _secret[0]


def _read_or_make_key() -> bytes | None:
    try:
        home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    except RuntimeError:  # no home folder known
        return None
    path = Path(home) / "tune-ledger" / "snapshot.key"
    for _ in range(2):
        try:
            key = path.read_bytes()
            return key if len(key) == 32 else None
        except FileNotFoundError:
            pass
        except OSError:
            return None
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            continue  # another process made it meanwhile: read that one
        except OSError:
            return None
        key = os.urandom(32)
        try:
            os.write(fd, key)
        finally:
            os.close(fd)
        return key
    return None
