"""A merged ledger whose conflicts were resolved while `conflict.resolved` named them by their
English text (schema 1) keeps replaying to the same outcome and auditing clean.

tests/data/ledger/v1-merged.jsonl was built by tests/golden_merged.py (six rounds of merged
branches, every kind of resolution, one conflict left open); v1-merged-status.json is the
status it replayed to when it was written.
"""

from __future__ import annotations

from pathlib import Path

from ledger.domain.replay import replay
from ledger.log import codec
from ledger.log.store import FileStore
from ledger.projections import views
from ledger.shell import audit

DATA = Path(__file__).parent / "data" / "ledger"
LEDGER = DATA / "v1-merged.jsonl"
STATUS = DATA / "v1-merged-status.json"


def _events(tmp_path: Path) -> list:  # type: ignore[type-arg]
    path = tmp_path / "events.jsonl"
    path.write_bytes(LEDGER.read_bytes())
    return list(FileStore(path).read().events)


def test_the_merged_v1_ledger_replays_to_its_recorded_status(tmp_path: Path) -> None:
    """Every resolution recorded by its text still resolves its conflict, byte for byte."""
    status = codec.canonical_json(views.status(replay(_events(tmp_path)))) + "\n"
    assert status == STATUS.read_text(encoding="utf-8")


def test_the_merged_v1_ledger_audits_clean(tmp_path: Path) -> None:
    """Each recorded resolution re-decides to the events recorded with it."""
    events = _events(tmp_path)
    assert audit.schema_findings(events) == []
    assert audit.legality_findings(events) == []
