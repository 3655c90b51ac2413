"""Merging and normalizing ledgers: every event exactly once, in one canonical order (DESIGN §4).

Both work on raw lines and never re-encode an event, so content ids, old schema versions and
every byte of every line survive them.

The canonical order keeps each batch (one command's events) together and sorts the batches by
their first event's (Lamport counter, id). It is topological, parents first: a batch's first
event has a larger counter than each of its parents, and every later part names only the part
before it. A ledger that was only ever appended to by the store is already in this order, so
normalizing it changes nothing; a merge that did not use the driver (`merge=union`, a
server-side merge) leaves lines interleaved or repeated, which `order_findings` reports and
`normalize_file` repairs.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence

from attrs import frozen

from ledger.domain.replay import evolve
from ledger.domain.state import State
from ledger.errors import Conflict, LedgerDamaged
from ledger.log import chain, codec, record, walker
from ledger.log.record import Event
from ledger.log.store_interface import Store

_NORMALIZE_HINT = (
    "normalize only reorders and de-duplicates valid lines; restore the file from git "
    "(`git diff` shows what changed). A merge without the tune-ledger driver leaves git "
    "conflict markers: after `tune-ledger git-setup`, `git checkout -m -- FILE` merges again"
)

Entry = tuple[Event, bytes]  # a verified event and its raw line (no newline)


@frozen
class Merged:
    """A merged ledger: its bytes, how many events each side brought, and what was left out."""

    data: bytes
    events: int
    common: int
    ours_only: int
    theirs_only: int
    notes: tuple[str, ...]


@frozen
class Normalized:
    """A ledger in canonical order: its bytes and what normalizing changed."""

    data: bytes
    events: int
    duplicates: int  # repeated lines dropped
    reordered: bool  # True when distinct lines changed places
    torn: int  # bytes of a torn tail kept at the end (the next append quarantines them)

    def describe(self) -> str:
        """What normalizing changes, in words ("" when nothing)."""
        parts = []
        if self.duplicates:
            parts.append(f"{self.duplicates} repeated line{'s' if self.duplicates > 1 else ''}")
        if self.reordered:
            parts.append("events out of canonical order")
        return " and ".join(parts)


# --- the canonical order ---------------------------------------------------------------------


def canonical_lines(entries: Iterable[Entry]) -> list[bytes]:
    """The distinct lines of `entries` (by event id) in canonical order."""
    unique: dict[str, Entry] = {}
    for event, line in entries:
        unique.setdefault(event.id, (event, line))
    batches: dict[str, list[bytes]] = {}
    batch_of: dict[str, str] = {}
    # Parents have smaller counters, so a batch is created before its later parts look it
    # up, and batches are created in the order of their first event's (counter, id).
    for event, line in sorted(unique.values(), key=lambda entry: _sort_key(entry[0])):
        follows = event.parents[0] if event.part[0] > 0 and event.parents else None
        key = batch_of.get(follows, event.id) if follows is not None else event.id
        batch_of[event.id] = key
        batches.setdefault(key, []).append(line)
    return [line for lines in batches.values() for line in lines]


def _sort_key(event: Event) -> tuple[int, str]:
    return event.lamport, event.id


def _join(lines: Iterable[bytes]) -> bytes:
    return b"".join(line + b"\n" for line in lines)


# --- merge -----------------------------------------------------------------------------------


def merge(base: bytes, ours: bytes, theirs: bytes, name: str = "events.jsonl") -> Merged:
    """The union of the events of `ours` and `theirs`, each once, in canonical order.

    Each side is verified first; a damaged side raises LedgerDamaged naming `name (side):line`.
    A torn tail on a side is left out and reported in `notes`. `base` only serves the report:
    events it has that neither side has stay out (the result does not depend on it, so it is
    the same whichever side is "ours").
    """
    ours_log = chain.scan(ours, f"{name} (ours)")
    theirs_log = chain.scan(theirs, f"{name} (theirs)")
    data = _union([ours_log, theirs_log], name)
    notes = [_torn_note(log) for log in (ours_log, theirs_log) if log.torn is not None]
    ours_ids = {event.id for event in ours_log.events}
    theirs_ids = {event.id for event in theirs_log.events}
    missing = _base_missing(base, name, ours_ids | theirs_ids)
    if missing:
        notes.append(
            f"{name} (base): {missing} event(s) of the common ancestor are on neither "
            "side and stay out"
        )
    common = len(ours_ids & theirs_ids)
    return Merged(
        data=data,
        events=len(ours_ids | theirs_ids),
        common=common,
        ours_only=len(ours_ids) - common,
        theirs_only=len(theirs_ids) - common,
        notes=tuple(notes),
    )


def merge_many(sides: Sequence[bytes], name: str = "events.jsonl") -> bytes:
    """The canonical union of any number of verified ledgers (merge is associative)."""
    return _union([chain.scan(data, f"{name} (#{i + 1})") for i, data in enumerate(sides)], name)


def _union(logs: Sequence[chain.Log], name: str) -> bytes:
    """The events of `logs` (one op's) each once, in canonical order, verified."""
    _same_genesis(logs, name)
    data = _join(canonical_lines(entry for log in logs for entry in _entries(log)))
    _verified(data, name)
    return data


def genesis(log: chain.Log) -> tuple[str, ...]:
    """The ids of the events without parents: the one op.initialized of an op's ledger."""
    return tuple(event.id for event in log.events if not event.parents)


def _same_genesis(logs: Sequence[chain.Log], name: str) -> None:
    """Refuse (LedgerDamaged, exit 7) to merge ledgers that do not start from the same event:
    they belong to different ops (or one op was created twice), and a union would mix them."""
    started = [(log, genesis(log)) for log in logs if log.events]
    if len({roots for _log, roots in started}) <= 1:
        return
    described = "; ".join(
        f"{log.name} starts at {', '.join(r[:12] for r in roots)}{_op_named(log)}"
        for log, roots in started
    )
    raise LedgerDamaged(
        f"{name}: the sides are ledgers of different ops, not branches of one ({described})",
        hint="merge only branches of one op's ledger: keep one side (`git checkout --ours "
        "FILE` or `--theirs FILE`) and move the other op to its own folder custom/<op>/",
        details={"path": name, "genesis": [list(roots) for _log, roots in started]},
    )


def _op_named(log: chain.Log) -> str:
    first = log.events[0]
    return f" (op {first.data.get('op')!r})" if first.type == "op.initialized" else ""


def _entries(log: chain.Log) -> Iterator[Entry]:
    return zip(log.events, log.lines, strict=True)


def _torn_note(log: chain.Log) -> str:
    torn = log.torn
    assert torn is not None  # the caller picks logs with a torn tail
    return (
        f"{log.name}:{torn.line}: torn tail of {torn.byte_count} bytes left out "
        f"({torn.reason}); it stays in that side's history"
    )


def _base_missing(base: bytes, name: str, present: set[str]) -> int:
    try:
        log = chain.scan(base, f"{name} (base)")
    except LedgerDamaged:
        return 0  # the base only feeds the report; a damaged one changes nothing
    return sum(1 for event in log.events if event.id not in present)


def _verified(data: bytes, name: str) -> None:
    """Refuse a merged or reordered ledger that does not verify."""
    try:
        chain.scan(data, name)
    except LedgerDamaged as e:
        raise LedgerDamaged(
            f"{name}: the valid lines do not form a ledger in canonical order ({e.message})",
            hint=_NORMALIZE_HINT,
            details=e.details,
        ) from None


# --- normalize -------------------------------------------------------------------------------


def normalize(data: bytes, name: str = "events.jsonl") -> Normalized:
    """`data` in canonical order with repeated lines dropped; LedgerDamaged if any line is bad.

    A torn tail stays at the end, as it was, for the next append to quarantine.
    """
    try:
        log = chain.scan(data, name)
    except LedgerDamaged as damage:
        entries, tail = _loose_entries(data, name, damage)
    else:
        entries, tail = list(_entries(log)), data[log.size :]
    lines = canonical_lines(entries)
    result = _join(lines) + tail
    if tail == b"" and not data.endswith(b"\n") and result.endswith(b"\n"):
        # A last line that verified but lost its newline: the next append restores the
        # newline and records it (DESIGN §4.3), so normalizing leaves it as it is.
        result = result[:-1]
    if result != data:
        _verified(result, name)
    first_seen = list(dict.fromkeys(line for _event, line in entries))
    return Normalized(
        data=result,
        events=len(lines),
        duplicates=len(entries) - len(lines),
        reordered=first_seen != lines,
        torn=len(tail),
    )


def _loose_entries(data: bytes, name: str, damage: LedgerDamaged) -> tuple[list[Entry], bytes]:
    """Every line verified on its own (content id, envelope), for a file whose order or
    repeated lines the chain refused; LedgerDamaged at the first line that is bad in itself."""
    lines = data.split(b"\n")
    tail = lines.pop()
    entries: list[Entry] = []
    for index, line in enumerate(lines):
        event_id = codec.id_of_line(line)
        event = None
        if event_id is not None:
            with contextlib.suppress(KeyError, TypeError, ValueError, IndexError):
                event = record.from_record(codec.loads(line))
        if event is None or event.id != event_id:
            reason = walker.id_problem(line) if event_id is None else "malformed event"
            raise LedgerDamaged(
                f"{name}:{index + 1}: {reason}",
                hint=_NORMALIZE_HINT,
                details={"path": name, "line": index + 1, "first_problem": damage.message},
            ) from None
        entries.append((event, line))
    return entries, tail


def order_findings(store: Store, op: str) -> list[str]:
    """A finding when the ledger is not in canonical order or repeats lines (for check, audit).

    Raises LedgerDamaged when a line is damaged in itself (normalizing cannot help then).
    """
    data = store.read_bytes()
    normalized = normalize(data, store.name)
    if normalized.data == data:
        return []
    return [
        f"{store.name}: not in canonical order ({normalized.describe()}), as a merge "
        "without the tune-ledger merge driver leaves it (e.g. `merge=union` or a "
        f"server-side merge); run `tune-ledger normalize {op}` and commit the result"
    ]


# How many times normalize_file reads again after another writer appended between its read
# and its rewrite: appends are rare next to a normalize, so a few tries settle it.
_REWRITE_TRIES = 3


def normalize_file(store: Store) -> Normalized:
    """Rewrite the ledger in canonical order through the store's atomic rewrite.

    Nothing is written when the ledger is already canonical; LedgerDamaged (nothing written)
    when a line is damaged. An append that lands between the read and the rewrite makes it
    read and normalize again (Conflict after a few tries).
    """
    tries = _REWRITE_TRIES
    while True:
        data = store.read_bytes()
        normalized = normalize(data, store.name)
        if normalized.data == data:
            return normalized
        try:
            store.rewrite(normalized.data, expected=data)
        except Conflict:
            tries -= 1
            if tries == 0:
                raise
            continue
        return normalized


# --- the state each batch was decided on --------------------------------------------------------


class CausalReplay:
    """The state each batch was decided on: the replay of the events it follows, not of every
    event before it in the file.

    Two branches each decided their steps without seeing the other's, so audit re-decides a
    batch on its causal past. In a ledger without merges that past is the whole prefix and
    this is the ordinary running replay; each further branch of a fork and each merge cost
    one replay of their causal past (a State is never shared, so it is never copied).
    """

    def __init__(self, events: Sequence[Event]) -> None:
        self._events = events
        self._position = {event.id: index for index, event in enumerate(events)}
        # How many batches still start from each set of heads (a fork: more than one).
        self._uses = Counter(frozenset(e.parents) for e in events if e.part[0] == 0)
        self._states: dict[frozenset[str], State] = {frozenset(): State()}

    def before(self, batch: Sequence[Event]) -> State:
        """The state `batch` was decided on; the caller evolves it, then calls `after`.

        A State is an accumulator owned by one replay (ledger/domain/state.py), so no two
        batches are given the same one: the last batch to start from a kept state continues
        it, and each other batch of a fork gets its own replay of the causal past.
        """
        key = frozenset(batch[0].parents)
        self._uses[key] -= 1
        if self._uses[key] > 0 or key not in self._states:
            return self._replayed(key)
        return self._states.pop(key)

    def after(self, batch: Sequence[Event], state: State) -> None:
        """Keep the state after `batch` for the batches that follow it."""
        key = frozenset((batch[-1].id,))
        if self._uses[key] > 0:
            self._states[key] = state

    def _replayed(self, heads: frozenset[str]) -> State:
        """The replay, in file order, of `heads` and every event they follow."""
        past: set[str] = set()
        stack = list(heads)
        while stack:
            event_id = stack.pop()
            if event_id in past or event_id not in self._position:
                continue
            past.add(event_id)
            stack.extend(self._events[self._position[event_id]].parents)
        state = State()
        for event in self._events:
            if event.id in past:
                # A step that cannot replay was reported where it stands in the file.
                with contextlib.suppress(KeyError, TypeError, ValueError):
                    evolve(state, event)
        return state
