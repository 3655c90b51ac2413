"""Crash recovery and damage: torn tails are quarantined and recorded, damage is refused."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from factories import (
    add_quarantine,
    draft,
    make_store,
    note,
    quarantined_bytes,
    raw_bytes,
    set_raw_bytes,
    skill,
)

from ledger.errors import LedgerDamaged
from ledger.log import codec
from ledger.log.file_store import FileStore, chain_findings
from ledger.log.integrity import check, schema_findings
from ledger.log.record import Draft, Event, seal_batch
from ledger.log.store_interface import Store
from ledger.schema.events import LedgerRepaired, NewlineRestored, NoteAdded
from ledger.shell import audit


@pytest.fixture(params=["memory", "file"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    return make_store(request.param, tmp_path)


@pytest.fixture
def no_fsync(monkeypatch: pytest.MonkeyPatch) -> None:
    """Skip fsync in tests that append thousands of times and do not test durability."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)


def _ledger() -> tuple[bytes, list[int], list[Event]]:
    """A small ledger: its bytes, the byte offset where each batch ends, and its events."""
    batches: list[list[Draft]] = [
        [note("first")],
        [skill(), note("ünïcödé \u2028 line separator \u2029 and \x85 inside")],
        [note("last batch, part one"), note("last batch, part two: 日本語")],
    ]
    data = b""
    ends: list[int] = []
    events: list[Event] = []
    head: tuple[str, ...] = ()
    lamport = 0
    for drafts in batches:
        sealed, lines = seal_batch(drafts, head, lamport)
        data += b"".join(lines)
        ends.append(len(data))
        events.extend(sealed)
        head, lamport = (sealed[-1].id,), sealed[-1].lamport
    return data, ends, events


DATA, BATCH_ENDS, EVENTS = _ledger()
LINE_ENDS = [i + 1 for i, byte in enumerate(DATA) if byte == ord("\n")]
BATCH_SIZES = [1, 2, 2]


def _complete_before(cut: int) -> tuple[int, int]:
    """(byte offset, event count) of the last whole batch that ends at or before `cut`."""
    offset, count = 0, 0
    for end, size in zip(BATCH_ENDS, BATCH_SIZES, strict=True):
        if end <= cut:
            offset, count = end, count + size
    return offset, count


def _check_cut(store: Store, cut: int) -> None:
    set_raw_bytes(store, DATA[:cut])
    if cut + 1 in BATCH_ENDS:
        _check_newline_cut(store, cut)
        return
    good, count = _complete_before(cut)
    log = store.read()
    assert log.events == tuple(EVENTS[:count])
    assert log.size == good
    if good == cut:
        assert log.torn is None
        return
    assert log.torn is not None
    assert (log.torn.line, log.torn.offset, log.torn.byte_count) == (count + 1, good, cut - good)
    result = store.append([note("after the crash")], expected_head=log.head)
    (repair,) = result.repairs
    _check_repair(store, repair, DATA[good:cut], count + 1, log.head)
    after = store.read()
    assert after.torn is None
    assert after.events[:count] == tuple(EVENTS[:count])
    assert after.events[count:] == (*result.repairs, *result.events)
    assert raw_bytes(store)[:good] == DATA[:good]


def _check_newline_cut(store: Store, cut: int) -> None:
    """Only the newline of a batch's last line is missing: every event counts, and the next
    append writes the newline back and records it; nothing is quarantined."""
    _good, count = _complete_before(cut + 1)
    log = store.read()
    assert log.events == tuple(EVENTS[:count])
    assert log.size == cut
    assert log.torn is not None and log.torn.newline_only
    assert (log.torn.line, log.torn.offset, log.torn.byte_count) == (count, cut, 0)
    result = store.append([note("after the edit")], expected_head=log.head)
    (restored,) = result.repairs
    assert restored.payload() == NewlineRestored(line=count, event=EVENTS[count - 1].id)
    assert restored.parents == log.head
    assert raw_bytes(store)[: cut + 1] == DATA[: cut + 1]
    assert store.quarantines() == []
    after = store.read()
    assert after.torn is None
    assert after.events == (*EVENTS[:count], *result.repairs, *result.events)


def _check_repair(
    store: Store, repair: Event, torn: bytes, line: int, head: tuple[str, ...]
) -> None:
    payload = repair.payload()
    assert isinstance(payload, LedgerRepaired)
    assert quarantined_bytes(store, payload.quarantine) == torn
    assert (payload.line, payload.byte_count, payload.digest) == (
        line,
        len(torn),
        codec.digest(torn),
    )
    assert repair.parents == head
    assert repair.part == (0, 1)


def test_cut_anywhere_in_the_file_shows_whole_batches_and_repairs(no_fsync: None) -> None:
    """Truncating the ledger at every byte offset shows exactly the whole batches before the
    cut; the next append quarantines the cut-off bytes and records the repair."""
    for cut in range(len(DATA) + 1):
        _check_cut(make_store("memory", Path()), cut)


def test_cut_anywhere_in_the_last_batch_of_a_file(tmp_path: Path, no_fsync: None) -> None:
    """The same for a ledger file, at every byte offset of its last batch (two lines)."""
    store = FileStore(tmp_path / "events.jsonl")
    for cut in range(BATCH_ENDS[-2], len(DATA) + 1):
        _check_cut(store, cut)
        for name in store.quarantine_names():  # each cut is a crash of its own
            (tmp_path / name).unlink()


def test_torn_tail_is_quarantined_byte_for_byte_not_glued(store: Store) -> None:
    """A torn last line is moved to quarantine before the next batch, never glued onto."""
    set_raw_bytes(store, DATA[:-10])
    result = store.append([note("next")], expected_head=None)
    data = raw_bytes(store)
    assert data.startswith(DATA[: BATCH_ENDS[-2]])
    assert data.count(b"\n") == len(EVENTS) - 2 + 2  # kept events, repair, new event
    (repair,) = result.repairs
    assert quarantined_bytes(store, repair.data["quarantine"]) == DATA[BATCH_ENDS[-2] : -10]
    assert store.findings() == []


def test_every_repair_keeps_its_own_quarantine(store: Store) -> None:
    """Two crashes leave two quarantine files, each recorded by its own repair event."""
    set_raw_bytes(store, DATA + b'{"id":"torn one')
    (first,) = store.append([note("a")], expected_head=None).repairs
    set_raw_bytes(store, raw_bytes(store) + b"torn two")
    (second,) = store.append([note("b")], expected_head=None).repairs
    names = [first.data["quarantine"], second.data["quarantine"]]
    assert names == ["events.jsonl.quarantine-1", "events.jsonl.quarantine-2"]
    assert [quarantined_bytes(store, n) for n in names] == [b'{"id":"torn one', b"torn two"]
    assert [q.name for q in store.quarantines()] == names
    assert store.findings() == []


def test_repair_takes_the_provenance_of_the_command(store: Store) -> None:
    """The repair event is written with the provenance of the command's first draft."""
    set_raw_bytes(store, DATA[:-1])
    command = note("the command")
    (repair,) = store.append([command], expected_head=None).repairs
    assert repair.written_by() == command.provenance


def test_repair_interrupted_before_cutting_reuses_its_quarantine(store: Store) -> None:
    """A crash after the torn bytes were kept but before they were cut off leaves a copy;
    the next append records that copy instead of keeping a second one."""
    torn = DATA[BATCH_ENDS[-2] : -7]
    set_raw_bytes(store, DATA[:-7])
    add_quarantine(store, "events.jsonl.quarantine-1", torn)
    (repair,) = store.append([note("next")], expected_head=None).repairs
    assert repair.data["quarantine"] == "events.jsonl.quarantine-1"
    assert [q.name for q in store.quarantines()] == ["events.jsonl.quarantine-1"]
    assert store.findings() == []


def test_repair_interrupted_before_its_event_is_recorded_next_time(store: Store) -> None:
    """A quarantine whose repair event never became durable is recorded by the next append,
    at the line where the ledger ends, before the command's batch."""
    set_raw_bytes(store, DATA)
    add_quarantine(store, "events.jsonl.quarantine-1", b"lost torn bytes")
    assert [f.line for f in store.findings()] == [None]
    result = store.append([note("next")], expected_head=None)
    (repair,) = result.repairs
    assert repair.payload() == LedgerRepaired(
        quarantine="events.jsonl.quarantine-1",
        line=len(EVENTS) + 1,
        byte_count=15,
        digest=codec.digest(b"lost torn bytes"),
    )
    assert result.events[0].parents == (repair.id,)
    assert store.findings() == []


def test_a_failing_command_does_not_repair_either(store: Store) -> None:
    """If the command's drafts cannot be encoded, the torn tail stays and nothing is kept."""
    from ledger.schema.events import PolicySet

    set_raw_bytes(store, DATA[:-4])
    with pytest.raises(TypeError):
        store.append([note("ok"), draft(PolicySet(key="k", value=object()))], expected_head=None)
    assert raw_bytes(store) == DATA[:-4]
    assert store.quarantines() == []


def test_read_reports_a_torn_tail_without_repairing(store: Store) -> None:
    """A read reports the torn tail but writes nothing."""
    # Two bytes: the last line's newline and its closing brace (a line missing only its
    # newline verifies, and is completed rather than torn: test_reliability_newline.py).
    set_raw_bytes(store, DATA[:-2])
    log = store.read()
    assert log.torn is not None
    assert log.torn.reason == (
        "the last batch has only 1 of its 2 events and a line without "
        "its newline (an interrupted write)"
    )
    assert raw_bytes(store) == DATA[:-2]
    assert store.quarantines() == []


def _flip(data: bytes, offset: int) -> bytes:
    return data[:offset] + bytes([data[offset] ^ 0x01]) + data[offset + 1 :]


def _line_of(offset: int) -> int:
    return 1 + sum(1 for end in LINE_ENDS if end <= offset)


def _assert_refused(store: Store, data: bytes, line: int) -> None:
    """Reading and appending both raise LedgerDamaged naming `line`, and nothing changes."""
    set_raw_bytes(store, data)
    with pytest.raises(LedgerDamaged) as raised:
        store.read()
    assert raised.value.details["line"] == line
    assert raised.value.message.startswith(f"{store.name}:{line}: ")
    assert raised.value.code == 7
    with pytest.raises(LedgerDamaged):
        store.append([note("refused")], expected_head=None)
    assert raw_bytes(store) == data
    assert store.quarantines() == []


def test_any_flipped_byte_before_the_last_line_is_damage_at_its_line(store: Store) -> None:
    """Flipping any byte of any line but the last (newline included) is refused with the
    line it is on, and neither read nor append changes the bytes."""
    for offset in range(LINE_ENDS[-2]):
        _assert_refused(store, _flip(DATA, offset), _line_of(offset))


def test_a_flipped_byte_in_the_last_line_is_damage_unless_it_is_the_newline(
    store: Store,
) -> None:
    """A complete last line that does not verify is damage; without its newline it is torn."""
    last = LINE_ENDS[-2]
    for offset in range(last, len(DATA) - 1):
        _assert_refused(store, _flip(DATA, offset), len(LINE_ENDS))
    set_raw_bytes(store, _flip(DATA, len(DATA) - 1))
    assert store.read().torn is not None


def test_damage_names_the_event_id(store: Store) -> None:
    """The damage message names the event id that the bad line claims."""
    offset = LINE_ENDS[0] + 60  # inside the body of line 2
    set_raw_bytes(store, _flip(DATA, offset))
    with pytest.raises(LedgerDamaged) as raised:
        store.read()
    assert raised.value.details["event"] == EVENTS[1].id
    assert EVENTS[1].id in raised.value.message


def _lines() -> list[bytes]:
    return [line + b"\n" for line in DATA.split(b"\n")[:-1]]


def _forge(event: Event, **changes: Any) -> bytes:
    """A line for `event` with envelope changes, carrying a correct content id for them."""
    body = {
        "lamport": event.lamport,
        "parents": list(event.parents),
        "part": list(event.part),
        "payload": event.data,
        "provenance": event.provenance,
        "schema": event.schema,
        "type": event.type,
    }
    body.update(changes)
    return codec.encode_line(body)[1]


@pytest.mark.parametrize(
    ("name", "edit", "line"),
    [
        ("garbage line inserted", lambda ls: [ls[0], b"not json\n", *ls[1:]], 2),
        ("empty line inserted", lambda ls: [ls[0], b"\n", *ls[1:]], 2),
        ("two events swapped", lambda ls: [ls[1], ls[0], *ls[2:]], 1),
        ("middle event deleted", lambda ls: [ls[0], *ls[2:]], 2),
        ("event duplicated", lambda ls: [ls[0], ls[0], *ls[1:]], 2),
        ("middle part of a batch deleted", lambda ls: [*ls[:3], *ls[4:]], 4),
        ("batches reordered", lambda ls: [ls[0], *ls[3:], ls[1], ls[2]], 2),
        ("lamport not above parent", lambda ls: [ls[0], _forge(EVENTS[1], lamport=1), *ls[2:]], 2),
        ("unknown event type", lambda ls: [ls[0], _forge(EVENTS[1], type="x.y"), *ls[2:]], 2),
        ("part out of range", lambda ls: [ls[0], _forge(EVENTS[1], part=[2, 2]), *ls[2:]], 2),
        ("lamport not an integer", lambda ls: [ls[0], _forge(EVENTS[1], lamport="2"), *ls[2:]], 2),
        ("record not an object", lambda ls: [ls[0], _array_line(), *ls[1:]], 2),
    ],
)
def test_bad_line_followed_by_good_lines_is_refused(
    store: Store, name: str, edit: Any, line: int
) -> None:
    """Each kind of middle damage is refused at the first line that breaks the chain."""
    data = b"".join(edit(_lines()))
    _assert_refused(store, data, line)
    assert any(f.line == line for f in check(data).findings), name


def _array_line() -> bytes:
    body = '["a"]'
    return b'{"id":"' + codec.content_id(body).encode() + b'",' + body[1:].encode() + b"\n"


def test_an_unfinished_batch_in_the_middle_is_damage(store: Store) -> None:
    """A batch missing its last part is damage when lines that are not its parts follow it."""
    lines = _lines()
    _assert_refused(store, b"".join(lines[:4]) + _after(EVENTS[2]), 4)


def test_following_a_part_of_an_unfinished_batch_is_damage(store: Store) -> None:
    """A batch may not start after a part of an unfinished batch."""
    lines = _lines()
    _assert_refused(store, b"".join(lines[:4]) + _after(EVENTS[3]), 5)


def _after(event: Event) -> bytes:
    """A one-event batch whose first event follows `event` (a part of an unfinished batch)."""
    (_sealed,), (line,) = seal_batch([note("after")], (event.id,), event.lamport)
    return line


def test_verify_reports_every_finding_not_just_the_first() -> None:
    """The thorough check reports each damaged line, not only the first."""
    lines = _lines()
    data = b"".join([lines[0], _flip(lines[1], 60), *lines[2:4], _flip(lines[4], 70)])
    found = check(data).findings
    assert [f.line for f in found] == [2, 5]
    assert found[0].event_id == EVENTS[1].id


def test_verify_reports_non_canonical_lines_and_wrong_counters() -> None:
    """Lines that verify but break the format contract are findings of the thorough check."""
    (first,), (first_line,) = seal_batch([note("a")], (), 0)
    (second,), _second_lines = seal_batch([note("b")], (first.id,), 1)
    spaced_body = codec.canonical_json(
        {
            "lamport": 5,
            "parents": [first.id],
            "part": [0, 1],
            "payload": second.data,
            "provenance": second.provenance,
            "schema": 1,
            "type": "note.added",
        }
    )
    spaced_body = spaced_body.replace(',"part"', ', "part"')
    spaced = (
        b'{"id":"'
        + codec.content_id(spaced_body).encode()
        + b'",'
        + spaced_body[1:].encode()
        + b"\n"
    )
    found = check(first_line + spaced).findings
    messages = " | ".join(str(f) for f in found)
    assert all(f.line == 2 for f in found)
    assert "not canonical" in messages
    assert "Lamport counter 5, expected 2" in messages


def test_verify_reports_a_torn_tail() -> None:
    """A torn tail is a finding of the thorough check, with its line."""
    found = check(DATA[:-5]).findings
    assert [(f.line, "torn tail" in f.message) for f in found] == [(len(EVENTS) - 1, True)]


def test_unrecorded_quarantine_file_is_a_finding(tmp_path: Path) -> None:
    """A quarantine file that no repair event accounts for is reported."""
    store = FileStore(tmp_path / "events.jsonl")
    store.append([note()], expected_head=None)
    (tmp_path / "events.jsonl.quarantine-7").write_bytes(b"stray")
    found = chain_findings(tmp_path / "events.jsonl")
    assert [(f.line, "quarantine-7" in f.message) for f in found] == [(None, True)]


def test_edited_quarantine_file_is_a_finding(store: Store, tmp_path: Path) -> None:
    """A quarantine file whose bytes differ from what its repair recorded is reported."""
    file_store = FileStore(tmp_path / "q" / "events.jsonl")
    set_raw_bytes(file_store, DATA[:-3])
    (repair,) = file_store.append([note()], expected_head=None).repairs
    (file_store.path.parent / repair.data["quarantine"]).write_bytes(b"edited")
    found = file_store.findings()
    assert [f.event_id for f in found] == [repair.id]
    (file_store.path.parent / repair.data["quarantine"]).unlink()
    assert "missing" in str(file_store.findings()[0])


def test_schema_check_reports_payloads_that_do_not_structure(store: Store) -> None:
    """An event whose id verifies but whose payload breaks the schema is found by audit."""
    (good,), (good_line,) = seal_batch([note("fine")], (), 0)
    bad_line = _forge(good, payload={"text": ""}, parents=[good.id], lamport=2)
    set_raw_bytes(store, good_line + bad_line)
    log = store.read()
    found = schema_findings(log.events)
    assert [(f.line, f.event_id) for f in found] == [(2, log.events[1].id)]
    assert log.events[0].payload() == NoteAdded(text="fine")


def test_audit_reports_schema_findings_with_line_id_and_type(store: Store) -> None:
    """Audit words the log's schema findings for the user: line, short id, event type."""
    (good,), (good_line,) = seal_batch([note("fine")], (), 0)
    bad_line = _forge(good, payload={"text": ""}, parents=[good.id], lamport=2)
    set_raw_bytes(store, good_line + bad_line)
    log = store.read()
    (found,) = audit.schema_findings(log.events, [7, 9])
    assert found.startswith(f"line 9 ({log.events[1].id[:12]} note.added): schema: ")
    assert schema_findings(log.events, [7, 9])[0].line == 9
