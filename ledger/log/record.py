"""The event envelope (id, parents, Lamport counter, provenance) and its one cattrs converter.

An `Event` keeps its payload as validated plain data (`data`) and structures it into the typed
payload class on demand (`payload()`). Replay reads `data` directly: structuring every event
with cattrs costs 2-6x the JSON parse itself (measured: 7-20 µs vs 3.6 µs per event), and the
content id already proves the bytes are the ones a validated write produced; audit structures
every event to re-check the schema.

The converter is made on first use (`converter()`), and cattrs imported then: a command that
only reads never needs it, and a write needs it only for values the generated functions leave
to it (numpy scalars, types they do not know); importing cattrs was ~11 ms of every start.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from attrs import frozen

from ledger.log import codec, upcast
from ledger.schema.events import (
    PAYLOAD_TYPES,
    AttemptMeasured,
    LimitRelaxed,
    ManifestRecorded,
    Payload,
    PointOpened,
    TargetSheetWritten,
)
from ledger.schema.values import Origin

if TYPE_CHECKING:
    import cattrs


@frozen
class Provenance:
    """Who wrote an event and when: tool and version, host, process, command, UTC time."""

    at: str
    tool: str
    version: str
    host: str
    pid: int
    command: str
    # An agent's retry key (--idempotency-key) and the digest of the request it named, so a
    # retried command returns the original result instead of appending twice (DESIGN §5).
    key: str | None = None
    request: str | None = None


@frozen
class Draft:
    """An event decided but not yet placed in the log (no id, parents or counter yet)."""

    payload: Payload
    provenance: Provenance


class Event(NamedTuple):
    """An immutable event as stored: content id, parents, Lamport counter, batch part, data.

    A NamedTuple rather than an attrs class: replay builds one per line, and a tuple is
    built in a quarter of the time of a frozen attrs instance (0.36 vs 1.46 µs, measured).
    """

    id: str
    lamport: int
    parents: tuple[str, ...]
    # (index, size) within the command that appended it: a command's events land together,
    # and a batch missing its last part at the end of the file is a torn write.
    part: tuple[int, int]
    type: str
    schema: int
    data: dict[str, Any]
    provenance: dict[str, Any]

    def payload(self) -> Payload:
        """The typed payload (validates the data against the current schema)."""
        cls = PAYLOAD_TYPES[self.type]
        result: Payload = converter().structure(self.data, cls)
        return result

    def written_by(self) -> Provenance:
        """The typed provenance."""
        return converter().structure(self.provenance, Provenance)


# Optional fields added to a payload after it was first written are left out while unset,
# so a new event without them is byte for byte what the older code wrote.
# Origin comes first: the payloads' hooks are generated with the hook in force for their Origin
# fields, so an origin not read from the measurement cache keeps its older bytes.
# (`person` of policy.set and campaign.resumed is not among them: schema 2 writes it always,
# null when no person decided, as limit.relaxed and ledger.rollback_accepted do.)
OMIT_IF_DEFAULT: dict[type[Any], frozenset[str]] = {
    Origin: frozenset({"cached", "verifier_digest"}),
    AttemptMeasured: frozenset({"binding", "accuracy_origin"}),
    PointOpened: frozenset({"knobs"}),
    LimitRelaxed: frozenset({"supersedes"}),
    TargetSheetWritten: frozenset({"target_origin", "target_samples_us"}),
    ManifestRecorded: frozenset({"measured_only"}),
}


@functools.cache
def converter() -> cattrs.Converter:
    """The one converter of payloads and provenance, made on its first use."""
    import cattrs
    from cattrs.gen import make_dict_unstructure_fn, override

    made = cattrs.Converter(forbid_extra_keys=True)
    # Values inside configs, policy and free fields are plain JSON: passed through unchanged.
    made.register_structure_hook(Any, lambda value, _type: value)

    # Each class's hook is generated when the class is first unstructured, not here: a
    # process handles one or two classes, and generating them all cost ~3 ms of every start.
    # A payload's hook, generated first, asks for its Origin fields' hook, which is then made.
    def omitting(cls: type[Any]) -> Callable[[Any], Any]:
        overrides = {name: override(omit_if_default=True) for name in sorted(OMIT_IF_DEFAULT[cls])}
        # mypy reads **overrides as the function's other keyword parameters (bools).
        return make_dict_unstructure_fn(cls, made, **overrides)  # type: ignore[arg-type]

    made.register_unstructure_hook_factory(lambda cls: cls in OMIT_IF_DEFAULT, omitting)
    return made


def unstructure_payload(payload: Payload) -> dict[str, Any]:
    """The payload as plain JSON-ready data (what `converter.unstructure` gives)."""
    data: dict[str, Any] = converter().unstructure(payload)
    return data


def seal(
    draft: Draft, parents: tuple[str, ...], lamport: int, part: tuple[int, int]
) -> tuple[Event, bytes]:
    """Place a draft in the log: compute its content id; return the event and its line."""
    bad = [parent for parent in parents if not _EVENT_ID.fullmatch(parent)]
    if bad:
        raise ValueError(f"not an event id: {bad[0]!r}")
    payload = draft.payload
    _event_id, line = codec.encode_line(
        {
            "lamport": int(lamport),
            "parents": list(parents),
            "part": [int(part[0]), int(part[1])],
            "payload": unstructure_payload(payload),
            "provenance": converter().unstructure(draft.provenance),
            "schema": payload.SCHEMA,
            "type": payload.TYPE,
        }
    )
    # The event is read back from the written line, so the in-memory event equals what a
    # later replay sees (tuples become lists, numpy scalars become floats).
    return from_record(codec.loads(line)), line


def seal_batch(
    drafts: Sequence[Draft], head: tuple[str, ...], lamport: int
) -> tuple[tuple[Event, ...], list[bytes]]:
    """Seal one command's drafts as a batch after `head`, whose largest counter is `lamport`."""
    # The first event follows every head; each later one follows its predecessor only, so a
    # batch is a chain and a missing last part is visible (docs/CONTRACTS.md).
    events: list[Event] = []
    lines: list[bytes] = []
    parents = head
    for index, draft in enumerate(drafts):
        event, line = seal(draft, parents, lamport + 1, (index, len(drafts)))
        events.append(event)
        lines.append(line)
        parents, lamport = (event.id,), event.lamport
    return tuple(events), lines


_EVENT_ID = re.compile(f"[0-9a-f]{{{codec.ID_HEX}}}")


# The schema version of each event type now; a line at another version is upcast on read.
CURRENT_SCHEMA = {name: cls.SCHEMA for name, cls in PAYLOAD_TYPES.items()}


def from_record(record: dict[str, Any]) -> Event:
    """Turn a parsed line into an Event, upcasting an old schema version of its payload.

    Raises KeyError, TypeError or ValueError when the envelope is malformed.
    """
    type_name = record["type"]
    schema = record["schema"]
    data = record["payload"]
    if CURRENT_SCHEMA.get(type_name) != schema:
        if type_name not in PAYLOAD_TYPES:
            raise ValueError(f"unknown event type {type_name!r}")
        data = upcast.upcast(type_name, schema, data)
        schema = PAYLOAD_TYPES[type_name].SCHEMA
    part = record["part"]
    return new_event(
        Event,
        (
            record["id"],
            record["lamport"],
            tuple(record["parents"]),
            (part[0], part[1]),
            type_name,
            schema,
            data,
            record["provenance"],
        ),
    )


# Builds an Event from one tuple of its fields, skipping NamedTuple's keyword-argument
# __new__ on the replay path (the walker inlines `from_record` with it).
new_event = tuple.__new__


def to_record(event: Event) -> dict[str, Any]:
    """The envelope as plain data, without its id (its id is the hash of this)."""
    return {
        "lamport": event.lamport,
        "parents": list(event.parents),
        "part": list(event.part),
        "payload": event.data,
        "provenance": event.provenance,
        "schema": event.schema,
        "type": event.type,
    }


def to_line(event: Event) -> bytes:
    """The canonical line (with newline) of an event, as the store writes it."""
    _event_id, line = codec.encode_line(to_record(event))
    return line
