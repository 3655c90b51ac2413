"""A merged ledger whose conflicts were resolved while `conflict.resolved` named them by their
English text (schema 1) keeps replaying to the same outcome and auditing clean.

tests/data/ledger/v1-merged.jsonl was built by tests/golden_merged.py (six rounds of merged
branches, every kind of resolution, one conflict left open); v1-merged-status.json is the
status it replayed to when it was written. Today's code records the same campaign at
schema 2 (conflicts named by their typed id), which must replay to the same outcome.
"""

from __future__ import annotations

from pathlib import Path

import golden_merged
from driver import Driver

from ledger.domain import hints
from ledger.domain.replay import replay
from ledger.domain.state import State
from ledger.log import chain, codec
from ledger.log.file_store import FileStore
from ledger.projections import conflicts as conflict_view
from ledger.projections import status_view
from ledger.shell import audit
from stages import resolve

DATA = Path(__file__).parent / "data" / "ledger"
LEDGER = DATA / "v1-merged.jsonl"
STATUS = DATA / "v1-merged-status.json"


def _events(tmp_path: Path) -> list:  # type: ignore[type-arg]
    path = tmp_path / "events.jsonl"
    path.write_bytes(LEDGER.read_bytes())
    return list(FileStore(path).read().events)


def test_the_merged_v1_ledger_replays_to_its_recorded_status(tmp_path: Path) -> None:
    """Every resolution recorded by its text still resolves its conflict, byte for byte."""
    state = replay(_events(tmp_path))  # its ways forward as the CLI prints them
    status = codec.canonical_json(hints.render(status_view.status(state), "cli")) + "\n"
    assert status == STATUS.read_text(encoding="utf-8")


def test_the_merged_v1_ledger_audits_clean(tmp_path: Path) -> None:
    """Each recorded resolution re-decides to the events recorded with it."""
    events = _events(tmp_path)
    assert audit.schema_findings(events) == []
    assert audit.legality_findings(events) == []


def _today(driver: Driver) -> list[tuple[str, tuple[str, ...]]]:
    return [(row["id"], tuple(row["options"])) for row in conflict_view.listing(driver.state)]


def _resolve(driver: Driver, conflict: str, resolution: str) -> None:
    command = resolve.Resolve(conflict=conflict, resolution=resolution, reason="golden")
    driver.append(resolve.decide(driver.state, command))


def _without_ids(state: State) -> str:
    """The status with each attempt id replaced by what the attempt measured: an event's id
    covers its parents, so every event after the first resolution has another id at schema 2
    (and two branches' batches with equal counters may change places)."""
    status = codec.canonical_json(hints.render(status_view.status(state), "cli"))
    for attempt in state.attempts.values():
        again = " again" if (attempt.prior or "").startswith("remeasure:") else ""
        label = f"<{attempt.config['vec_tile_shape'][-1]}{again}>"
        status = status.replace(attempt.id, label)
    return status


def test_the_same_campaign_recorded_today_replays_to_the_same_outcome(tmp_path: Path) -> None:
    """Resolved by their typed ids (schema 2), the same conflicts leave the same state."""
    data = golden_merged.build(_today, _resolve)
    events = list(chain.scan(data, "today").events)
    resolved = [e for e in events if e.type == "conflict.resolved"]
    assert len(resolved) == 7 and {e.schema for e in resolved} == {2}
    assert audit.legality_findings(events) == []
    assert _without_ids(replay(events)) == _without_ids(replay(_events(tmp_path)))
