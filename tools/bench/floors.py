"""Floors: the least work any implementation must do on one side of a goal, timed on the same
data and machine as the figure it sits beside.

A floor is not a goal and not the product. It answers "could any Python code reach this goal
here?". When the barest version of the work, with none of the product's checks or state, already
lands at or past the goal, the gap is the interpreter's and the machine's, not the design's.
Each floor does strictly less than the product does, so the product can never beat it.
"""

from __future__ import annotations

import fcntl
import gc
import hashlib
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ledger.log import codec
from ledger.log import record as record_mod


def _count(counts: dict[str, int], record: dict[str, Any]) -> None:
    counts["events"] += 1


def verifying_replay(path: Path) -> list[Any]:
    """The barest replay that verifies what it reads and keeps it.

    Per line: the sha256 content id compared with the id the line claims, one orjson parse,
    the Lamport counter compared with its first parent's, one dict insert, one handler call,
    and the payload kept (a replay keeps its state). No batches, no second parents, no typed
    state, no idempotency keys, no R9 keys: the product does all of this and more.
    """
    import orjson

    loads, sha256 = orjson.loads, hashlib.sha256
    handlers: dict[str, Callable[[dict[str, int], dict[str, Any]], None]] = {}
    counts = {"events": 0}
    lamports: dict[str, int] = {}
    kept: list[Any] = []
    enabled = gc.isenabled()
    gc.disable()  # as the product's replay does: nothing kept forms a cycle
    try:
        for line in path.read_bytes().split(b"\n"):
            if not line:
                continue
            event_id = sha256(b"{" + line[codec.BODY_START :]).hexdigest()[: codec.ID_HEX]
            record = loads(line)
            parents = record["parents"]
            lamport = record["lamport"]
            if record["id"] != event_id or (parents and lamports[parents[0]] >= lamport):
                raise ValueError(f"{path}: event {record['id']} does not verify")
            lamports[event_id] = lamport
            handlers.get(record["type"], _count)(counts, record)
            kept.append(record["payload"])
    finally:
        if enabled:
            gc.enable()
    return kept


class DurableAppend:
    """The barest locked, canonical, durable append of given records to a file.

    Per call: take an exclusive flock on a lock file, compare the file's size with the size
    the last call left (another writer would show there), encode each payload as canonical
    JSON (the standard library's encoder: committed bytes may not depend on an optional
    package) and the provenance once for the events that share it, place both in the fixed
    envelope and hash the line, one write, one fsync. That is the product's cheapest known
    encoding; the floor leaves out its typed payloads (cattrs), its parse of each sealed payload
    (and of the batch's provenance) back into the events it returns, its check of the file's
    identity and last bytes, and its quarantine check.
    """

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        self.lock_name = str(path) + ".lock"
        self.size = os.fstat(self.fd).st_size

    def __call__(self, records: Sequence[dict[str, Any]]) -> float:
        """Append `records` (each without its id); return the seconds it took."""
        started = time.perf_counter()
        lock_fd = os.open(self.lock_name, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
            if os.fstat(self.fd).st_size != self.size:
                raise RuntimeError("another writer appended to the floor's file")
            data = b"".join(_lines(records))
            os.write(self.fd, data)
            os.fsync(self.fd)
            self.size += len(data)
        finally:
            os.close(lock_fd)
        return time.perf_counter() - started

    def close(self) -> None:
        os.close(self.fd)


def _lines(records: Sequence[dict[str, Any]]) -> list[bytes]:
    """The canonical lines of records, encoded as the store's seal encodes (record.seal)."""
    lines = []
    shared: tuple[object, str] = (None, "")  # a batch's events share one provenance
    for record in records:
        if record["provenance"] != shared[0]:
            shared = (record["provenance"], codec.canonical_json(record["provenance"]))
        body = record_mod.envelope_body(
            record["lamport"],
            record["parents"],
            tuple(record["part"]),
            codec.canonical_json(record["payload"]),
            shared[1],
            record["schema"],
            record["type"],
        )
        lines.append(codec.encode_body(body)[1])
    return lines


def records_of(written: bytes) -> list[dict[str, Any]]:
    """The records (without their ids) of ledger lines, for the append floor to write again."""
    records = []
    for line in written.split(b"\n"):
        if not line:
            continue
        record = codec.loads(line)
        del record["id"]
        records.append(record)
    return records
