"""The walker's hot loop (`Walker.feed`) accepts exactly the lines its step-by-step check
(`Walker.check`, with `record.from_record`) accepts, builds the same events, and refuses damage
with the same line, event and message; replay through a sink gives the same state."""

from __future__ import annotations

import hashlib
from functools import partial
from typing import Any

import pytest
from factories import draft
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.domain.replay import evolve, replay
from ledger.domain.state import State
from ledger.errors import LedgerDamaged
from ledger.log import chain, codec, record
from ledger.log.record import Event
from ledger.log.walker import BadLine, OpenBatch, Walker, split_lines
from ledger.schema.events import LedgerRepaired, NoteAdded, SkillLoaded

NAME = "custom/op/events.jsonl"


def reference_walk(lines: list[bytes]) -> tuple[list[Event], tuple[int, str, str | None] | None]:
    """The slow path: each line checked by `Walker.check`, the walker's memory updated here."""
    walker = Walker()
    events: list[Event] = []
    for index, line in enumerate(lines):
        try:
            event = walker.check(line)
        except BadLine as bad:
            return events, (index, bad.message, bad.event_id)
        i, n = event.part
        first = walker.open.pop(event.parents[0]).first if i > 0 else index
        if i < n - 1:
            walker.open[event.id] = OpenBatch(i, n, first)
        walker.lamports[event.id] = event.lamport
        events.append(event)
    return events, None


def fast_walk(lines: list[bytes]) -> tuple[list[Event], tuple[int, str, str | None] | None]:
    walker = Walker()
    try:
        walker.feed(lines)
    except BadLine as bad:
        return walker.events, (bad.index, bad.message, bad.event_id)
    return walker.events, None


def _payload(kind: int, text: str) -> Any:
    if kind == 0:
        return NoteAdded(text=f"n{text}")
    if kind == 1:
        return SkillLoaded(name=f"s{text}")
    return LedgerRepaired(quarantine=f"q-{text}", line=1, byte_count=2, digest="sha256:x")


BATCH = st.tuples(
    st.lists(st.tuples(st.integers(0, 2), st.text(max_size=5)), min_size=1, max_size=3),
    st.sampled_from([None, "k1", "k2"]),  # an idempotency key: keyed events are kept
    st.integers(0, 3),  # which heads the batch follows (forks and merges)
)


def _ledger(batches: list[Any]) -> list[bytes]:
    """Lines of batches sealed after some of the current heads (a fork, then a merge)."""
    lines: list[bytes] = []
    heads: list[tuple[str, int]] = []
    for payloads, key, choice in batches:
        drafts = [draft(_payload(kind, text), key=key) for kind, text in payloads]
        follow = heads if choice == 0 or len(heads) < 2 else heads[choice % len(heads) :][:1]
        after = tuple(sorted(event_id for event_id, _ in follow))
        lamport = max((lamport for _, lamport in follow), default=0)
        events, sealed = record.seal_batch(drafts, after, lamport)
        lines.extend(line[:-1] for line in sealed)
        heads = [h for h in heads if h[0] not in after] + [(events[-1].id, events[-1].lamport)]
    return lines


def _reencoded(line: bytes, change: dict[str, Any]) -> bytes:
    """The line with its record changed and a valid content id again (a forged line)."""
    parsed = codec.loads(line)
    del parsed["id"]
    for key, value in change.items():
        if value is None:
            parsed.pop(key, None)
        else:
            parsed[key] = value
    return codec.encode_line(parsed)[1][:-1]


DAMAGES = (
    "flip",
    "parent",
    "lamport",
    "low_lamport",
    "part",
    "schema",
    "type",
    "drop_key",
    "extra_key",
    "duplicate",
    "swap",
    "id_text",
    "bool_part",
)


def _damaged(lines: list[bytes], damage: str, data: st.DataObject) -> list[bytes]:
    index = data.draw(st.integers(0, len(lines) - 1), label="line")
    line = lines[index]
    parsed = codec.loads(line)
    out = list(lines)
    if damage == "flip":
        offset = data.draw(st.integers(0, len(line) - 1), label="offset")
        bit = data.draw(st.integers(0, 7), label="bit")
        out[index] = line[:offset] + bytes([line[offset] ^ (1 << bit)]) + line[offset + 1 :]
    elif damage == "parent":
        out[index] = _reencoded(line, {"parents": ["0" * 32, *parsed["parents"][1:]]})
    elif damage == "lamport":
        out[index] = _reencoded(line, {"lamport": data.draw(st.sampled_from([0, -1, 1.5, "2"]))})
    elif damage == "low_lamport":
        out[index] = _reencoded(line, {"lamport": max(parsed["lamport"] - 1, 0)})
    elif damage == "part":
        part = data.draw(st.sampled_from([[0, 0], [1, 1], [0, 9], [2, 3], [0], [True, 2]]))
        out[index] = _reencoded(line, {"part": part})
    elif damage == "schema":
        out[index] = _reencoded(line, {"schema": data.draw(st.sampled_from([0, 2, "1"]))})
    elif damage == "type":
        out[index] = _reencoded(line, {"type": "no.such.type"})
    elif damage == "drop_key":
        key = data.draw(st.sampled_from(["payload", "provenance", "parents", "part", "type"]))
        out[index] = _reencoded(line, {key: None})
    elif damage == "extra_key":
        out[index] = _reencoded(line, {"zzz": 1})
    elif damage == "duplicate":
        out.insert(index, line)
    elif damage == "swap" and index > 0:
        out[index - 1], out[index] = out[index], out[index - 1]
    elif damage == "bool_part":  # True == 1 and False == 0, but a part is an int
        out[index] = _reencoded(line, {"part": [bool(parsed["part"][0]), parsed["part"][1]]})
    elif damage == "id_text":
        out[index] = line.replace(b'{"id":"', b'{"id": "', 1)
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(BATCH, min_size=1, max_size=6), data=st.data())
def test_the_hot_loop_agrees_with_the_step_by_step_check(
    batches: list[Any], data: st.DataObject
) -> None:
    """Valid or damaged, the fast loop keeps the reference's events and raises its error."""
    lines = _ledger(batches)
    if data.draw(st.booleans(), label="damaged"):
        lines = _damaged(lines, data.draw(st.sampled_from(DAMAGES), label="damage"), data)
    fast_events, fast_error = fast_walk(lines)
    slow_events, slow_error = reference_walk(lines)
    assert fast_error == slow_error
    assert fast_events == slow_events
    assert [type(event) for event in fast_events] == [Event] * len(fast_events)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(BATCH, min_size=1, max_size=6), data=st.data())
def test_stream_folds_the_state_the_keeping_scan_folds(
    batches: list[Any], data: st.DataObject
) -> None:
    """Through the sink (batches delivered whole) or from the scan's events, one state; the
    same LedgerDamaged message when the bytes are damaged or cut anywhere."""
    lines = _ledger(batches)
    if data.draw(st.booleans(), label="damaged"):
        lines = _damaged(lines, data.draw(st.sampled_from(DAMAGES), label="damage"), data)
    blob = b"".join(line + b"\n" for line in lines)
    cut = data.draw(st.sampled_from(["none", "byte", "line"]), label="cut")
    if cut == "byte":  # anywhere: an unterminated last line
        blob = blob[: data.draw(st.integers(0, len(blob)), label="cut at")]
    elif cut == "line":  # after a whole line: often a batch missing its last parts
        blob = b"".join(line + b"\n" for line in lines[: data.draw(st.integers(0, len(lines)))])
    streamed = State()
    try:
        tip = chain.stream(blob, NAME, partial(evolve, streamed))
    except LedgerDamaged as damaged:
        streaming_error: str | None = str(damaged)
    else:
        streaming_error = None
    try:
        log = chain.scan(blob, NAME)
    except LedgerDamaged as damaged:
        assert str(damaged) == streaming_error  # noqa: PT017 - both messages are compared
        return
    assert streaming_error is None
    naive = replay(record.from_record(codec.loads(line)) for line in log.lines)
    assert streamed == replay(log.events) == naive
    assert (tip.head, tip.lamport, tip.size) == (log.head, log.lamport, log.size)
    assert tip.torn == log.torn


def test_a_flipped_byte_names_the_line_and_the_edit() -> None:
    """The message for a damaged id is the step-by-step check's, at the right line."""
    lines = _ledger([([(0, "a")], None, 0), ([(0, "b"), (1, "c")], None, 0)])
    lines[1] = lines[1].replace(b'"text":"nb"', b'"text":"nB"')
    blob = b"".join(line + b"\n" for line in lines)
    with pytest.raises(LedgerDamaged) as damaged:
        chain.stream(blob, NAME, lambda _event: None)
    event_id = codec.loads(lines[1])["id"]
    assert str(damaged.value) == (
        f"{NAME}:2: event {event_id}: content id does not match the line's bytes "
        "(edited or damaged)"
    )


def test_split_lines_keeps_the_unterminated_rest() -> None:
    """A torn last line is the rest, never a line the walker sees."""
    assert split_lines(b"a\nb\nc") == ([b"a", b"b"], b"c")


@pytest.mark.parametrize("kept", [1, 2])
def test_a_batch_cut_after_any_middle_part_never_reaches_the_sink(kept: int) -> None:
    """Only complete batches are folded: a 3-event batch cut after part 1 or 2 is left out."""
    lines = _ledger([([(0, "a")], None, 0), ([(0, "b"), (0, "c"), (0, "d")], None, 0)])
    blob = b"".join(line + b"\n" for line in lines[: 1 + kept])
    state = State()
    tip = chain.stream(blob, NAME, partial(evolve, state))
    assert state.notes == ["na"]
    assert tip.torn is not None and tip.torn.line == 2


def test_any_edit_of_a_line_before_its_record_is_refused_as_the_check_refuses_it() -> None:
    """The bytes before the hashed record (`{"id":"<id>",`) are checked by their shape and the
    parsed id: every bit flipped there, every id spelled with an escape, a space or a second
    "id" key, is refused by the hot loop with the step-by-step check's error."""
    lines = _ledger([([(0, "a"), (1, "b")], None, 0), ([(0, "c")], None, 0)])
    line = lines[1]
    event_id = line[7:39].decode()
    edits = [
        line[:offset] + bytes([line[offset] ^ (1 << bit)]) + line[offset + 1 :]
        for offset in range(codec.BODY_START)
        for bit in range(8)
    ]
    edits += [
        line.replace(event_id[:6].encode(), b"\\u00" + event_id[:2].encode(), 1),
        b" " + line,
        line.replace(b'",', b'" ,', 1),
        b'{"id":"' + event_id.encode() + b'","id":"' + event_id.encode() + b'",' + line[41:],
        b'{"id":"' + event_id.upper().encode() + line[39:],
        # forged: an id that is the hash of what follows a prefix of another shape
        _forged(b'{ "id":"', b'",', line[41:]),
        _forged(b'{"id":"', b'" ,', line[41:]),
        _forged(b'{"id":"', b'"\n,', line[41:]),
    ]
    for edited in edits:
        candidate = [lines[0], edited, *lines[2:]]
        fast_events, fast_error = fast_walk(candidate)
        slow_events, slow_error = reference_walk(candidate)
        assert fast_error is not None or edited == line
        assert (fast_events, fast_error) == (slow_events, slow_error)


def _forged(before: bytes, after: bytes, record: bytes) -> bytes:
    """`before` + id + `after` + `record`, the id being the hash the store would compute for
    the line (that of "{" and the bytes from offset BODY_START on): it verifies unless the
    bytes before the record are checked."""
    head = before + b"0" * codec.ID_HEX + after
    claimed = hashlib.sha256(b"{" + (head + record)[codec.BODY_START :]).hexdigest()
    return before + claimed[: codec.ID_HEX].encode() + after + record
