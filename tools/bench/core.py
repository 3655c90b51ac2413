"""Replay and append, each beside its floor: the least work any implementation must do.

- Replay: a new `OpLedger`'s `load()` (read, verify every line's content id and chain, fold
  every event into the state), against the verifying floor: read the file, and per line
  check its sha256 content id, parse it with orjson, check its Lamport counter against its
  first parent's and keep its payload. Guardrail: the replay runs at ≥ 0.5× the floor's
  speed.
- Append: the store's `append` of one command's events, as `OpLedger.execute` calls it (lock,
  check the file against the position it read, seal, write, fsync), against the floor of a
  durable append: one `os.write` and one `os.fsync` of the same bytes, to a file in the same
  folder. Guardrail: ≤ 1.5× the floor.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import time
from pathlib import Path
from typing import Any

import orjson

from ledger.log.file_store import FileStore
from ledger.schema.events import Origin, OutputCheck
from ledger.shell.api import OpLedger
from stages import commands as cmd
from tools.bench.ledgers import FREE_KNOBS, OP, SYNTHETIC, best_us, ledger_file, pending
from tools.bench.timing import Guardrail, alternate, summary, timed

# A line is `{"id":"<32 hex>",<the record's other keys>}`; its id is the sha256 of the line
# with the id left out (docs/DESIGN.md §4), so a reader checks it from the raw bytes.
ID_END = len(b'{"id":"') + 32


def verifying_floor(path: Path) -> list[Any]:
    """The least a verifying replay does: read the file; per line, check its content id,
    parse it, check its Lamport counter against its first parent's, keep its payload (a
    replay keeps its state). No batches, second parents or typed state."""
    sha256, loads = hashlib.sha256, orjson.loads
    lamports: dict[str, int] = {}
    kept: list[Any] = []
    for line in path.read_bytes().split(b"\n"):
        if not line:
            continue
        event_id = sha256(b"{" + line[ID_END + 2 :]).hexdigest()[:32]
        record = loads(line)
        parents, lamport = record["parents"], record["lamport"]
        if record["id"] != event_id or (parents and lamports[parents[0]] >= lamport):
            raise ValueError(f"{path}: line {len(kept) + 1} does not verify")
        lamports[event_id] = lamport
        kept.append(record["payload"])
    return kept


def replay(root: Path, events: int, repeats: int) -> Guardrail:
    """A whole replay by a new OpLedger (as every CLI command starts) vs the verifying floor."""
    path = ledger_file(root)
    verifying_floor(path)  # the page cache warm for both sides, and the floor's own check
    loaded, floor = alternate(
        lambda: timed(lambda: OpLedger(root, OP).load()),
        lambda: timed(lambda: verifying_floor(path)),
        repeats=repeats,
    )
    return Guardrail(
        name=f"replay_{events}",
        what=f"speed of a whole replay at {events} events against the verifying floor",
        value_is="OpLedger(root, op).load(): read, verify ids and chain, fold into the state",
        reference_is="the verifying floor: read; per line its sha256 content id, an orjson parse, "
        "its Lamport counter against its first parent's, its payload kept",
        value=loaded,
        reference=floor,
        limit=0.5,
        at_most=False,
        ratio_is="floor time / replay time (the replay's speed as a share of the floor's)",
        extra={"per_event_us": round(min(loaded) / events * 1e6, 3)},
    )


def _settle(folder: Path) -> None:
    """Start a timed fsync from the same state of the file system whichever side it is on:
    the files the previous command wrote (MEMORY.md) flushed, then one small write and fsync
    of a file of its own, so the next fsync finds a journal just committed."""
    for path in folder.rglob("*"):
        if path.is_file() and path.name != "settle.bin":
            descriptor = os.open(path, os.O_RDONLY)
            try:
                os.fsync(descriptor)
            finally:
                os.close(descriptor)
    descriptor = os.open(folder / "settle.bin", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(descriptor, b".")
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


class _TimedStore(FileStore):
    """The op's file store, timing each append (on settled files) and keeping what it wrote."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.appends: list[tuple[float, bytes]] = []

    def append(self, *args: Any, **kwargs: Any) -> Any:
        _settle(self.path.parent)
        size = self.path.stat().st_size
        started = time.perf_counter()
        result = super().append(*args, **kwargs)
        elapsed = time.perf_counter() - started
        with open(self.path, "rb") as ledger:
            ledger.seek(size)
            self.appends.append((elapsed, ledger.read()))
        return result


def append(root: Path, events: int, repeats: int) -> Guardrail:
    """Each append of a short search step (a change, its rollback, a note) as `execute` makes
    it, each followed by the floor writing the same bytes durably."""
    store = _TimedStore(ledger_file(root))
    ledger = OpLedger(root, OP, store=store)
    origin = Origin(level="reported", tool="bench-synthetic", command=SYNTHETIC)
    slower = (best_us(root) * 1.5,)  # every change is rolled back
    values = itertools.count(10**9)
    floor_path = ledger_file(root).with_name("floor.bin")
    floor_fd = os.open(floor_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    floor: list[float] = []
    try:
        while len(store.appends) < repeats:
            change = cmd.TryMutation(param=FREE_KNOBS[0], value=next(values))
            attempt = pending(ledger.execute(change).state)
            outputs = (OutputCheck(name="y", all_close=True, max_diff=0.0),)
            ledger.execute(cmd.Verify(attempt=attempt, outputs=outputs, layout_exit=0,
                                      times_us=slower, origin=origin))  # fmt: skip
            ledger.execute(cmd.AddNote(text=f"bench note {len(store.appends)}"))
            for _elapsed, written in store.appends[len(floor) :]:
                _settle(floor_path.parent)
                started = time.perf_counter()
                os.write(floor_fd, written)
                os.fsync(floor_fd)
                floor.append(time.perf_counter() - started)
    finally:
        os.close(floor_fd)
    return Guardrail(
        name="append",
        what=f"one command's durable append on a {events}-event ledger against its floor",
        value_is="FileStore.append as OpLedger.execute calls it (lock, check, seal, write, "
        "fsync); a try, a verify and a note in turn",
        reference_is="os.write + os.fsync of the same bytes to a file in the same folder",
        value=[elapsed for elapsed, _ in store.appends],
        reference=floor,
        limit=1.5,
        extra={"bytes": summary([len(written) for _, written in store.appends])},
    )
