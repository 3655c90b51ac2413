"""Crash safety: a writer killed with SIGKILL at random moments loses no acknowledged append."""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path

import pytest
from factories import note

from ledger.log.file_store import FileStore

KILLS = 200
SEED = 20240501


def _writer(path: Path, out: int, seed: int) -> None:
    """Append batches forever, printing each event id once its append has returned."""
    rng = random.Random(seed)
    store = FileStore(path)
    serial = 0
    while True:
        drafts = []
        for _ in range(rng.randint(1, 3)):
            serial += 1
            # Now and then a batch spans many pages, so that a kill can cut its write short.
            size = 70_000 if rng.random() < 0.1 else rng.randint(1, 200)
            drafts.append(note(f"{seed}-{serial} " + "x" * size))
        result = store.append(drafts, expected_head=None)
        os.write(out, b"".join(e.id.encode() + b"\n" for e in result.events))


def _run_and_kill(path: Path, seed: int, delay: float) -> bytes:
    """Fork a writer, SIGKILL it after `delay` seconds, and return what it printed."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the writer: never returns into pytest
        code = 0
        try:
            os.close(read_end)
            _writer(path, write_end, seed)
        except BaseException as e:  # noqa: BLE001 - the child reports anything, even a kill
            os.write(write_end, f"ERROR {e!r}\n".encode())
            code = 1
        finally:
            os._exit(code)
    os.close(write_end)
    time.sleep(delay)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    chunks = []
    while chunk := os.read(read_end, 1 << 16):
        chunks.append(chunk)
    os.close(read_end)
    return b"".join(chunks)


def _lose_unsynced_tail(path: Path, acknowledged: set[str], rng: random.Random) -> None:
    """Cut the file somewhere after its last acknowledged event, as a power loss may drop
    bytes that were written but never fsynced (a kill alone rarely tears a write)."""
    if not path.exists():
        return
    data = path.read_bytes()
    end, synced = 0, 0
    for line in data.split(b"\n")[:-1]:
        end += len(line) + 1
        if line[7:39].decode(errors="replace") in acknowledged:
            synced = end
    if synced < len(data):
        os.truncate(path, rng.randrange(synced, len(data)))


def _reported_ids(output: bytes) -> list[str]:
    """The ids a writer printed in full (a kill may cut the last print short)."""
    lines = output.split(b"\n")[:-1]
    assert not [line for line in lines if line.startswith(b"ERROR")], lines
    return [line.decode() for line in lines if len(line) == 32]


@pytest.mark.slow
def test_sigkill_at_random_moments_loses_no_acknowledged_append(tmp_path: Path) -> None:
    """After 200 random SIGKILLs (some followed by the loss of unsynced bytes) every reported
    id is in the ledger, the ledger reads (a torn tail at most), and the next append
    repairs and records every torn tail: the final chain has no findings."""
    path = tmp_path / "custom" / "op" / "events.jsonl"
    rng = random.Random(SEED)
    reported: list[str] = []
    for kill in range(KILLS):
        output = _run_and_kill(path, seed=kill, delay=rng.uniform(0.0, 0.08))
        reported.extend(_reported_ids(output))
        if rng.random() < 0.3:
            _lose_unsynced_tail(path, set(reported), rng)
        present = {event.id for event in FileStore(path).read().events}
        assert set(reported) <= present, f"acknowledged appends lost after kill {kill}"

    store = FileStore(path)
    if not any(e.type == "ledger.repaired" for e in store.read().events):
        # No kill landed between a write and its fsync this time (a window of a few ms, which
        # a loaded machine can miss 200 times): tear the tail as such a kill would have.
        with path.open("ab") as torn:
            torn.write(b'{"id":"' + b"0" * 20)
    store.append([note("after the last kill")], expected_head=None)
    log = store.read()
    assert log.torn is None
    assert set(reported) <= {event.id for event in log.events}
    assert len(reported) > KILLS // 2  # the writers did get appends through between kills
    assert any(e.type == "ledger.repaired" for e in log.events), "recovery never exercised"
    # Every quarantine file is recorded, also those of repairs that a kill interrupted.
    assert store.findings() == []
