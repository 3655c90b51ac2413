"""One registry per list: the schema's payload classes are the one list of event types, and
replay's handlers and audit's commands are checked against it."""

from __future__ import annotations

import typing
from collections import Counter

import pytest

from ledger.domain import replay
from ledger.domain.state import State
from ledger.log.record import Event
from ledger.schema import events as ev
from ledger.shell import audit, audit_commands


def _classes_of(entries: tuple[tuple[type[ev.Payload], object], ...]) -> Counter[type]:
    return Counter(payload for payload, _entry in entries)


def test_the_payload_union_is_the_one_list_of_event_types() -> None:
    """PAYLOAD_TYPES holds each class of the Payload union under its own TYPE, names unique."""
    union = typing.get_args(ev.Payload)
    assert union == ev.PAYLOAD_CLASSES
    # Every payload class the schema defines is in the union: none can be left out of it.
    defined = {obj for obj in vars(ev).values() if isinstance(obj, type) and hasattr(obj, "TYPE")}
    assert set(union) == defined and len(union) == len(defined)
    assert {cls.TYPE: cls for cls in union} == ev.PAYLOAD_TYPES
    assert len({cls.TYPE for cls in union}) == len(union)
    assert all(name == cls.TYPE for name, cls in ev.PAYLOAD_TYPES.items())


def test_every_payload_type_has_exactly_one_replay_handler() -> None:
    """Replay names each payload class once, and nothing else."""
    counts = _classes_of(replay.HANDLERS)
    assert set(counts) == set(ev.PAYLOAD_CLASSES)
    assert [cls for cls, n in counts.items() if n != 1] == []
    assert len({handler for _cls, handler in replay.HANDLERS}) == len(replay.HANDLERS)


def test_every_payload_type_has_exactly_one_audit_entry() -> None:
    """Audit says once per payload class how a batch it starts is re-decided, or that none is."""
    counts = _classes_of(audit_commands.AUDIT_ENTRIES)
    assert set(counts) == set(ev.PAYLOAD_CLASSES)
    assert [cls for cls, n in counts.items() if n != 1] == []
    assert {
        "ledger.repaired",
        "conflict.resolved",
        "ledger.newline_restored",
        "ledger.rollback_accepted",
    } == audit_commands.NOT_DECIDED
    assert set(audit_commands.COMMAND_OF) | audit_commands.NOT_DECIDED == set(ev.PAYLOAD_TYPES)


def _event(type_name: str, data: dict[str, object]) -> Event:
    return Event(
        id="f" * 32,
        type=type_name,
        schema=1,
        lamport=1,
        parents=(),
        part=(0, 1),
        data=data,
        provenance={},
    )


def test_a_type_outside_the_schema_has_no_handler() -> None:
    """A type no payload class names does not replay: the registry is closed."""
    with pytest.raises(ValueError, match=r"unknown event type 'note\.edited'"):
        replay.evolve(State(), _event("note.edited", {"text": "x"}))


def test_a_verdict_alone_does_not_form_a_command() -> None:
    """A batch that starts with a verdict is a finding: verdicts follow their measurement."""
    (_index, batch), *_ = audit.batches([_event("attempt.verdict", {"attempt": "a"})])
    findings = audit._check_batch(State(), batch, "line 1", None, None)
    assert findings == [
        "line 1: recorded data does not form a command: an attempt.verdict is written after "
        "its attempt.measured, in one batch"
    ]
