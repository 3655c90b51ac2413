"""Canonical encoding and content ids: every payload type survives seal → line → replay."""

from __future__ import annotations

import types
import typing
from typing import Any, Literal

import attrs
import numpy as np
import pytest
from factories import draft
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.log import codec, record
from ledger.schema.events import PAYLOAD_TYPES, PolicySet
from ledger.schema.values import TIME_MAX_US, TIME_MIN_US

# Text that includes what breaks naive line handling: line and paragraph separators, NEL,
# quotes, backslashes, control characters and astral-plane characters.
TEXT = st.text(
    st.one_of(
        st.sampled_from(["\u2028", "\u2029", "\x85", "\n", "\r", '"', "\\", "\x00", "é", "😀"]),
        st.characters(codec="utf-8"),
    ),
    max_size=12,
)
NONEMPTY = TEXT.filter(lambda text: bool(text.strip()))
FINITE = st.floats(allow_nan=False, allow_infinity=False)
EXTREMES = st.sampled_from(
    [5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, -0.0, 1e16, 1e-7, 0.1]
)
# Numbers as callers hand them in: Python floats, big and tiny ones, and numpy scalars.
ANY_FLOAT = st.one_of(
    FINITE,
    EXTREMES,
    FINITE.map(np.float64),
    st.floats(width=32, allow_nan=False, allow_infinity=False).map(np.float32),
)
# Times within the range the events accept (R11: 1e-6 µs .. 1e12 µs), edges included; the
# float32 bounds are the float32 values just inside it (neither edge is a float32).
_F32_RANGE = {
    "min_value": float(np.nextafter(np.float32(TIME_MIN_US), np.float32(1))),
    "max_value": float(np.nextafter(np.float32(TIME_MAX_US), np.float32(0))),
}
POSITIVE = st.one_of(
    st.floats(min_value=TIME_MIN_US, max_value=TIME_MAX_US),
    st.floats(width=32, **_F32_RANGE).map(np.float32),
    st.floats(min_value=TIME_MIN_US, max_value=TIME_MAX_US).map(np.float64),
    st.sampled_from([TIME_MIN_US, TIME_MAX_US]),
)
PERCENT = st.one_of(
    st.floats(min_value=0, max_value=100),
    st.floats(min_value=0, max_value=100, width=32).map(np.float32),
)
ANY_INT = st.one_of(st.integers(-(2**63), 2**63 - 1), st.integers(-(2**31), 2**31).map(np.int64))
# Fields with no converter keep what they are given, and only plain values are JSON: numpy
# there is a known gap (see test_numpy_in_fields_without_a_converter_is_not_encoded).
PLAIN_FLOAT = st.one_of(FINITE, EXTREMES)
PLAIN_INT = st.integers(-(2**63), 2**63 - 1)
JSON = st.recursive(
    st.none() | st.booleans() | PLAIN_INT | PLAIN_FLOAT | FINITE.map(np.float64) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
JSON_OBJECT = st.dictionaries(TEXT, JSON, max_size=4)

# Fields whose validators narrow their type (R11): strategies that satisfy them.
FIELD_STRATEGIES: dict[str, st.SearchStrategy[Any]] = {
    "baseline_us": POSITIVE,
    "target_us": POSITIVE,
    "best_median_us": POSITIVE,
    "attempt_median_us": POSITIVE,
    "times_us": st.lists(POSITIVE, min_size=1, max_size=4),
    "util_pct": st.none() | PERCENT,
    "bubble_pct": st.none() | PERCENT,
    "metrics": st.dictionaries(TEXT, ANY_FLOAT, max_size=3),
}
# Integer fields with the `_int` converter (numpy integers welcome).
CONVERTED_INTS = {("LayoutEvidence", "exit_code"), ("AttemptMeasured", "layout_exit")}
NONEMPTY_FIELDS = {
    ("OpInitialized", "op"),
    ("OutputCheck", "name"),
    ("TargetSheetWritten", "shape"),
    ("LimitRelaxed", "basis"),
    ("PointOpened", "name"),
    ("PointClosed", "reason"),
    ("AttemptAbandoned", "reason"),
    ("NoteAdded", "text"),
    ("ConflictResolved", "reason"),
    ("RollbackAccepted", "missing"),
    ("RollbackAccepted", "reason"),
    ("CampaignHandedBack", "report"),
    ("CampaignResumed", "reason"),
}


def _outputs() -> st.SearchStrategy[Any]:
    return st.lists(
        _strategy_of_class(_output_check()),
        min_size=1,
        max_size=3,
        unique_by=lambda output: output.name,
    )


def _output_check() -> type[Any]:
    from ledger.schema.events import OutputCheck

    return OutputCheck


def _strategy_of_type(hint: Any, converted: bool) -> st.SearchStrategy[Any]:
    """Values of a type hint; numpy scalars only where a converter turns them into JSON."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return JSON
    if origin is Literal:
        return st.sampled_from(args)
    if origin in (typing.Union, types.UnionType):
        return st.one_of([_strategy_of_type(arg, converted) for arg in args])
    if origin is tuple:
        return st.lists(_strategy_of_type(args[0], converted), max_size=3).map(tuple)
    if origin is dict:
        return (
            JSON_OBJECT
            if args[1] is Any
            else st.dictionaries(TEXT, _strategy_of_type(args[1], converted), max_size=3)
        )
    if attrs.has(hint):
        return _strategy_of_class(hint)
    simple: dict[Any, st.SearchStrategy[Any]] = {
        str: TEXT,
        bool: st.booleans(),
        type(None): st.none(),
        int: ANY_INT if converted else PLAIN_INT,
        float: ANY_FLOAT if converted else PLAIN_FLOAT,
    }
    return simple[hint]


def _strategy_of_field(
    cls: type[Any], field: attrs.Attribute[Any], hint: Any
) -> st.SearchStrategy[Any]:
    if (cls.__name__, field.name) in NONEMPTY_FIELDS:
        return NONEMPTY
    if field.name == "outputs":
        return _outputs()
    if (cls.__name__, field.name) in CONVERTED_INTS:
        return ANY_INT
    if field.name in FIELD_STRATEGIES:
        return FIELD_STRATEGIES[field.name]
    # `converter=tuple` converts the container only, not the numbers inside it.
    converter: object = field.converter
    converted = converter is not None and converter is not tuple
    return _strategy_of_type(hint, converted=converted)


def _strategy_of_class(cls: type[Any]) -> st.SearchStrategy[Any]:
    hints = typing.get_type_hints(cls)
    fields = {f.name: _strategy_of_field(cls, f, hints[f.name]) for f in attrs.fields(cls)}
    return st.builds(cls, **fields)


PAYLOADS = st.one_of([_strategy_of_class(cls) for cls in PAYLOAD_TYPES.values()])


def _seal(payload: Any) -> tuple[record.Event, bytes]:
    return record.seal(draft(payload), ("0" * 32,), 2, (0, 1))


@pytest.mark.parametrize("type_name", sorted(PAYLOAD_TYPES))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_payload_type_round_trips(type_name: str, data: st.DataObject) -> None:
    """seal → line → codec.loads → record.from_record → payload() gives the original back."""
    payload = data.draw(_strategy_of_class(PAYLOAD_TYPES[type_name]))
    event, line = _seal(payload)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    replayed = record.from_record(codec.loads(line[:-1]))
    assert replayed == event
    assert replayed.payload() == payload
    assert codec.id_of_line(line[:-1]) == event.id
    assert codec.is_canonical_line(line[:-1])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payloads=st.lists(PAYLOADS, min_size=1, max_size=4), key=st.sampled_from([None, "k"]))
def test_a_sealed_batch_is_the_events_its_lines_replay_to(
    payloads: list[Any], key: str | None
) -> None:
    """seal_batch parses back only each payload (the batch's provenance once): its events
    equal, field by field and type by type, those a replay parses from the lines."""
    drafts = [draft(payload, key=key) for payload in payloads]
    events, lines = record.seal_batch(drafts, ("0" * 32, "1" * 32), 7)
    replayed = [record.from_record(codec.loads(line[:-1])) for line in lines]
    assert list(events) == replayed
    for sealed, parsed in zip(events, replayed, strict=True):
        assert [type(value) for value in sealed] == [type(value) for value in parsed]
        assert codec.id_of_line(lines[events.index(sealed)][:-1]) == sealed.id
    assert [event.part for event in events] == [(i, len(drafts)) for i in range(len(drafts))]


@settings(max_examples=150, deadline=None)
@given(payload=PAYLOADS)
def test_sealing_twice_gives_the_same_bytes(payload: Any) -> None:
    """The same draft sealed twice gives byte-identical lines (canonical encoding)."""
    assert _seal(payload)[1] == _seal(payload)[1]


@settings(max_examples=150, deadline=None)
@given(payload=PAYLOADS)
def test_replayed_event_reencodes_to_its_own_line(payload: Any) -> None:
    """Re-encoding a replayed event gives its stored line back, byte for byte."""
    _event, line = _seal(payload)
    assert record.to_line(record.from_record(codec.loads(line[:-1]))) == line


@settings(max_examples=200, deadline=None)
@given(payload=PAYLOADS, data=st.data())
def test_any_single_byte_change_breaks_the_id(payload: Any, data: st.DataObject) -> None:
    """Changing any one byte of a line (id, envelope or payload) makes id_of_line refuse it."""
    _event, line = _seal(payload)
    body = line[:-1]
    offset = data.draw(st.integers(0, len(body) - 1), label="offset")
    new = data.draw(st.integers(0, 255).filter(lambda b: b != body[offset]), label="byte")
    changed = body[:offset] + bytes([new]) + body[offset + 1 :]
    assert codec.id_of_line(changed) is None


def test_every_byte_of_one_line_is_covered_by_the_id() -> None:
    """Exhaustively: flipping any bit of any byte of a line makes id_of_line refuse it."""
    from ledger.schema.events import NoteAdded

    _event, line = _seal(NoteAdded(text="a \u2028 b"))
    body = line[:-1]
    for offset in range(len(body)):
        for bit in range(8):
            changed = body[:offset] + bytes([body[offset] ^ (1 << bit)]) + body[offset + 1 :]
            assert codec.id_of_line(changed) is None, (offset, bit)


def test_line_separators_stay_inside_the_line() -> None:
    """U+2028/U+2029 are written raw (UTF-8) and never split a line on b"\\n"."""
    from ledger.schema.events import NoteAdded

    _event, line = _seal(NoteAdded(text="x\u2028y\u2029z"))
    assert "\u2028".encode() in line
    assert len(line[:-1].split(b"\n")) == 1
    assert len(line.decode().splitlines()) > 1  # why the store never uses splitlines


@pytest.mark.parametrize(
    ("payload", "plain"),
    [
        (PolicySet(key="k", value=np.float32(0.5)), PolicySet(key="k", value=0.5)),
        (PolicySet(key="k", value=np.int64(3)), PolicySet(key="k", value=3)),
        (
            PolicySet(key="k", value={"a": [np.int32(1), np.float64(2.5)]}),
            PolicySet(key="k", value={"a": [1, 2.5]}),
        ),
    ],
    ids=["any-float32", "any-int64", "nested"],
)
def test_numpy_scalars_in_free_fields_are_written_as_python_numbers(
    payload: Any, plain: Any
) -> None:
    """numpy scalars inside free JSON values are encoded as the equal Python number."""
    event, line = _seal(payload)
    _plain_event, plain_line = _seal(plain)
    assert line == plain_line
    assert event.payload() == plain
