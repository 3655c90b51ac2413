"""Golden ledgers of every schema version keep replaying, verifying and auditing clean.

tests/data/ledger/v1.jsonl was written by schema 1 (see tests/golden_ledger.py for how, and
how to regenerate it while schema 1 is current); v1-status.json is the status it replays to.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import golden_ledger
import pytest

from ledger.domain import hints
from ledger.domain.replay import replay
from ledger.log import codec
from ledger.log.store import FileStore
from ledger.projections import views
from ledger.schema.events import PAYLOAD_TYPES
from ledger.shell import audit

DATA = Path(__file__).parent / "data" / "ledger"
LEDGER = DATA / "v1.jsonl"
STATUS = DATA / "v1-status.json"
# Not in the golden log: conflict.resolved needs two merged branches (tests/test_merge_*.py);
# manifest.recorded came after this log was written (tests/test_measure.py records it), and
# ledger.newline_restored too (tests/test_reliability_newline.py), and campaign.handed_back and
# campaign.resumed (tests/test_rule_r10_stop.py).
NOT_COVERED = {
    "conflict.resolved",
    "manifest.recorded",
    "ledger.newline_restored",
    "ledger.rollback_accepted",
    "campaign.handed_back",
    "campaign.resumed",
}


def _status_json(data: bytes, tmp: Path) -> str:
    path = tmp / "events.jsonl"
    path.write_bytes(data)
    state = replay(FileStore(path).read().events)
    # As the CLI prints it: its ways forward rendered as command lines (ledger/domain/hints.py).
    return codec.canonical_json(hints.render(views.status(state), "cli")) + "\n"


def test_regenerate_when_asked(tmp_path: Path) -> None:
    """UPDATE_GOLDEN=1 rewrites the schema-1 golden files (review the diff)."""
    if not os.environ.get("UPDATE_GOLDEN"):
        pytest.skip("set UPDATE_GOLDEN=1 to regenerate")
    assert all(cls.SCHEMA == 1 for cls in PAYLOAD_TYPES.values()), "schema 1 is not current"
    data = golden_ledger.build()
    DATA.mkdir(parents=True, exist_ok=True)
    LEDGER.write_bytes(data)
    STATUS.write_text(_status_json(data, tmp_path), encoding="utf-8")


def test_golden_v1_reads_and_verifies_every_id(tmp_path: Path) -> None:
    """Every line of the schema-1 log verifies; its torn tail was repaired and recorded."""
    path = tmp_path / "events.jsonl"
    shutil.copyfile(LEDGER, path)
    log = FileStore(path).read()
    assert log.torn is None
    assert len(log.events) == len(LEDGER.read_bytes().splitlines())
    assert all(codec.is_canonical_line(line) for line in LEDGER.read_bytes().splitlines())
    types = {event.type for event in log.events}
    assert types == set(PAYLOAD_TYPES) - NOT_COVERED
    assert {event.schema for event in log.events} == {1}


def test_golden_v1_replays_to_its_recorded_status(tmp_path: Path) -> None:
    """Replaying the schema-1 log gives the status recorded beside it, byte for byte."""
    assert _status_json(LEDGER.read_bytes(), tmp_path) == STATUS.read_text(encoding="utf-8")


def test_golden_v1_audits_clean(tmp_path: Path) -> None:
    """Every step of the schema-1 log is legal and every verdict re-derives."""
    path = tmp_path / "events.jsonl"
    shutil.copyfile(LEDGER, path)
    events = FileStore(path).read().events
    assert audit.schema_findings(events) == []
    assert audit.legality_findings(events) == []


def test_the_current_code_still_writes_the_golden_bytes() -> None:
    """The deciders and the codec still produce exactly the schema-1 golden log."""
    assert golden_ledger.build() == LEDGER.read_bytes()


OLD_LEDGER = DATA / "v1-all-stages.jsonl"


def test_a_ledger_pinned_before_the_incore_default_replays_and_audits_clean(
    tmp_path: Path,
) -> None:
    """The golden log written while the utilization stop defaulted to all four stages (kept
    when issue 15 made incore the default) keeps its pinned default and audits clean."""
    path = tmp_path / "events.jsonl"
    shutil.copyfile(OLD_LEDGER, path)
    events = FileStore(path).read().events
    assert audit.legality_findings(events) == []
    state = replay(events)
    assert state.policy_defaults["utilization_stop_stages"] == [
        "frontend", "swimlane", "incore", "algorithm",
    ]  # fmt: skip
    assert views.status(state)["policy_overrides"] == [
        {
            "key": "utilization_stop_stages",
            "value": ["incore"],
            "default": ["frontend", "swimlane", "incore", "algorithm"],
            "reason": "golden",
        }
    ]
