"""Synthetic bench campaigns: realistic ledgers of 10k to 1M events, made through the public API.

SYNTHETIC BENCH DATA. Every measurement in these ledgers is drawn from a seeded pseudo-random
model (campaign.py), not measured on any kernel; the provenance of every event says so
(`host="bench-synthetic"`, an `Origin.tool` of `bench-synthetic`). They exist only to time the
ledger itself.

Every command is decided by `stages.decide` on the state replayed so far, exactly as the CLI
does, so every event obeys the protocol: audit's legality check passes. Two ways to land the
events, which give the same bytes (tests/test_bench.py checks it):

- `StoreSink`: `Store.append` on a store (a `MemoryStore` in tests): the real append path.
- `SealSink`: `ledger.log.record.seal_batch`, the function `Store.append` seals with, writing the
  lines to a file; used for large sizes, where re-reading a growing store per command would
  make generation quadratic.

The campaign itself (its commands and its time model) is tools/bench/campaign.py; the cache
of generated ledgers under /tmp is tools/bench/ledgers.py.
"""

from __future__ import annotations

import io
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Protocol

from ledger import __version__
from ledger.domain.replay import evolve
from ledger.domain.state import State
from ledger.log.record import Draft, Event, Provenance, seal_batch
from ledger.log.store import Store
from stages import Decision, Refusal, decide
from stages import commands as cmd
from tools.bench.campaign import OP, SYNTHETIC, SYNTHETIC_HOST, Campaign

# --- sinks: where the decided events land ------------------------------------------------------


class Sink(Protocol):
    """Where a driver lands each decided batch, after the head it last returned."""

    head: tuple[str, ...]

    def append(self, drafts: Sequence[Draft]) -> tuple[Event, ...]:
        """Land one batch and return its sealed events."""
        ...


class SealSink:
    """Seals each batch with the store's own `seal_batch` after the previous one; keeps lines."""

    def __init__(self, out: IO[bytes] | None = None) -> None:
        self.head: tuple[str, ...] = ()
        self.lamport = 0
        self.out = out
        self.size = 0

    def append(self, drafts: Sequence[Draft]) -> tuple[Event, ...]:
        events, lines = seal_batch(drafts, self.head, self.lamport)
        self.head, self.lamport = (events[-1].id,), events[-1].lamport
        data = b"".join(lines)
        self.size += len(data)
        if self.out is not None:
            self.out.write(data)
        return events


class StoreSink:
    """Appends each batch through `Store.append`, with the head it expects."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.head: tuple[str, ...] = ()

    def append(self, drafts: Sequence[Draft]) -> tuple[Event, ...]:
        result = self.store.append(drafts, expected_head=self.head)
        self.head = result.head
        return result.events


# --- driving ------------------------------------------------------------------------------


def provenance(batch: int, command: object, seed: int) -> Provenance:
    """The fixed, clearly synthetic provenance of the `batch`-th command of a bench campaign."""
    seconds = 1_700_000_000 + 41 * batch  # one command every 41 s, from a fixed start
    at = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime(seconds))
    return Provenance(
        at=at,
        tool="tune-ledger",
        version=__version__,
        host=SYNTHETIC_HOST,
        pid=0,
        command=f"tune-ledger {type(command).__name__} [{SYNTHETIC}, seed {seed}]",
    )


class Driver:
    """Runs a campaign's commands through `decide`, a sink, and `evolve`."""

    def __init__(self, seed: int, planned_events: int, sink: Sink, op: str = OP) -> None:
        self.campaign = Campaign(seed, planned_events, op)
        self.sink = sink
        self.batches = 0
        self._script = self.campaign.script()
        self._reply: tuple[Event, ...] | None = None
        self._started = False

    @property
    def state(self) -> State:
        """The state replayed from every event landed so far."""
        return self.campaign.state

    def next_command(self) -> cmd.Command:
        """The campaign's next command (after the previous one's events were landed)."""
        if not self._started:
            self._started = True
            return next(self._script)
        return self._script.send(self._reply)

    def drafts(self, command: cmd.Command) -> list[Draft] | None:
        """The drafts `command` appends now, or None when R9 refuses it as a retry."""
        decision = decide(self.state, command)
        if isinstance(decision, Refusal):
            if decision.kind == "retry":
                return None
            raise AssertionError(f"bench campaign broke a rule: {decision}")
        assert isinstance(decision, Decision)
        written_by = provenance(self.batches, command, self.campaign.seed)
        return [Draft(payload=p, provenance=written_by) for p in decision.events]

    def land(self, events: Sequence[Event]) -> None:
        """Evolve the state with events the sink landed, and tell the script."""
        for event in events:
            evolve(self.state, event)
        self.batches += 1
        self._reply = tuple(events)

    def refused(self) -> None:
        """Tell the script its last command was refused (R9), so that it draws another."""
        self._reply = None

    def step(self) -> tuple[Event, ...]:
        """Decide, land and evolve one command; () when it was refused (R9)."""
        command = self.next_command()
        drafts = self.drafts(command)
        if drafts is None:
            self.refused()
            return ()
        events = self.sink.append(drafts)
        self.land(events)
        return events

    def run(self, events: int) -> None:
        """Step until the state holds at least `events` events."""
        while self.state.event_count < events:
            self.step()

    def run_attempts(self, attempts: int) -> None:
        """Step until `attempts` attempts have ended (verified, failed or abandoned)."""
        while len(self.state.attempts) < attempts or self.state.pending is not None:
            self.step()


def generate_bytes(seed: int, events: int, *, via_store: Store | None = None) -> bytes:
    """A campaign's ledger bytes: through `via_store.append` when given, else `seal_batch`."""
    if via_store is not None:
        Driver(seed, events, StoreSink(via_store)).run(events)
        from ledger.log.store import MemoryStore

        if isinstance(via_store, MemoryStore):
            return via_store.raw
        return Path(via_store.name).read_bytes()

    buffer = io.BytesIO()
    Driver(seed, events, SealSink(buffer)).run(events)
    return buffer.getvalue()
