"""Builds a golden merged ledger: six rounds of two branches forked from one trunk, merged
with the ledger driver's union, each leaving the protocol conflicts of DESIGN §8, and each
resolved the way a person would (every resolution kind), but the last, left open.

tests/data/ledger/v1-merged.jsonl was built with this while `conflict.resolved` was at
schema 1 (its conflicts named by their English text); a golden log of an old version is never
rewritten. Today's code records the same campaign at the current schema; the test compares
both replays (tests/test_golden_merged.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from driver import PROVENANCE, Driver, candidate, in_point, vec
from driver import verify as verify_command

from ledger.domain.replay import evolve
from ledger.git import merge
from ledger.log import chain, record
from ledger.schema.events import Payload
from stages import commands as cmd

Listing = Callable[[Driver], list[tuple[str, tuple[str, ...]]]]
Decider = Callable[[Driver, str, str], None]


class _Branch(Driver):
    """A Driver whose appends name every head of its log as parents, as the store's do: the
    first step after a merge joins both branches (audit re-decides it on their union)."""

    def append(self, payloads: Sequence[Payload]) -> tuple[record.Event, ...]:
        log = chain.scan(_bytes(self), "golden")
        drafts = [record.Draft(payload=p, provenance=PROVENANCE) for p in payloads]
        sealed, _lines = record.seal_batch(drafts, log.head, log.lamport)
        for event in sealed:
            self.events.append(event)
            evolve(self.state, event)
        return tuple(sealed)


def _bytes(driver: Driver) -> bytes:
    return b"".join(record.to_line(e) for e in driver.events)


def _branch(events: Sequence[record.Event]) -> _Branch:
    driver = _Branch()
    for event in events:
        driver.events.append(event)
        evolve(driver.state, event)
    return driver


def _fork(driver: Driver) -> _Branch:
    return _branch(driver.events)


def _merged(ours: Driver, theirs: Driver) -> _Branch:
    data = merge.merge(b"", _bytes(ours), _bytes(theirs)).data
    return _branch(chain.scan(data, "merged").events)


def _notes(driver: Driver, count: int, name: str) -> None:
    """Notes that move a branch's later steps after the other branch's (Lamport counters)."""
    for n in range(count):
        driver.run(cmd.AddNote(text=f"{name} {n}"))


def build(listing: Listing, resolve: Decider) -> bytes:
    """The merged ledger's bytes. `listing` gives each open conflict's reference (as the
    `--conflict` option takes it) and its resolutions; `resolve` appends a resolution."""

    def settle(driver: Driver, prefix: str) -> str:
        """Resolve the first conflict that offers a resolution starting with `prefix`."""
        for reference, options in listing(driver):
            chosen = next((o for o in options if o.startswith(prefix)), None)
            if chosen is not None:
                resolve(driver, reference, chosen)
                return chosen
        raise AssertionError(f"no conflict offers {prefix!r}: {listing(driver)}")

    main = _fork(in_point())
    # 1. Limits relaxed apart (R3) and two attempts pending at once (R6).
    ours, theirs = _fork(main), _fork(main)
    ours.run(cmd.Relax(person="Pat", what="vec", limit=96, basis="ours profile"))
    ours.run(cmd.Relax(person="Pat", what="vec", limit=128, basis="ours profile again"))
    theirs.run(cmd.Relax(person="Pat", what="vec", limit=100, basis="theirs profile"))
    ours.start(candidate(vec_tile_shape=vec(32)))
    theirs.start(candidate(vec_tile_shape=vec(16)))
    main = _merged(ours, theirs)
    settle(main, "stricter")
    settle(main, "abandon:")
    main.verify(main.state.pending or "", 100.0)
    # 2. Two bests adopted (R8), re-measured both.
    ours, theirs = _fork(main), _fork(main)
    ours.verify(ours.start(candidate(vec_tile_shape=vec(8))), 90.0)
    theirs.verify(theirs.start(candidate(vec_tile_shape=vec(4))), 80.0)
    main = _merged(ours, theirs)
    settle(main, "remeasure")
    for width, time_us in ((8, 78.0), (4, 79.0)):
        config = candidate(vec_tile_shape=vec(width)).config
        best = next(a for a, attempt in main.state.attempts.items() if attempt.config == config)
        again = main.start(candidate(prior=f"remeasure:{best}", vec_tile_shape=vec(width)))
        main.run(verify_command(again, time_us))
    # 3. Two bests adopted again, the faster kept.
    ours, theirs = _fork(main), _fork(main)
    ours.verify(ours.start(candidate(vec_tile_shape=vec(2))), 70.0)
    theirs.verify(theirs.start(candidate(vec_tile_shape=vec(48))), 75.0)
    main = _merged(ours, theirs)
    settle(main, "faster")
    # 4. Two points open at once (R7).
    ours, theirs = _fork(main), _fork(main)
    for driver, name in ((ours, "F-2"), (theirs, "F-3")):
        driver.run(cmd.ClosePoint(name="F-1", reason="done"))
        driver.run(cmd.OpenPoint(name=name))
    main = _merged(ours, theirs)
    settle(main, "close:")
    # 5. A step of frontend after the other branch entered swimlane (R4), kept.
    ours, theirs = _fork(main), _fork(main)
    open_point = ours.state.open_point or ""
    ours.run(cmd.ClosePoint(name=open_point, reason="done"))
    ours.run(cmd.ExitStage(stage="frontend", reason="user", by_user=True))
    ours.run(cmd.UnloadSkill(name="tune-frontend"))
    ours.run(cmd.EnterStage(stage="swimlane"))
    _notes(theirs, 6, "theirs")
    theirs.verify(theirs.start(candidate(vec_tile_shape=vec(24))), 100.0)
    main = _merged(ours, theirs)
    settle(main, "keep")
    # 6. A stop on one branch; on another an attempt started before it and still pending, on
    # a third one started and verified after it (R10): that one is kept, the pending one is
    # left open.
    main.run(cmd.LoadSkill(name="tune-swimlane"))
    main.run(cmd.OpenPoint(name="S-1"))
    ours, theirs, late = _fork(main), _fork(main), _fork(main)
    _notes(ours, 3, "ours")
    ours.run(cmd.Stop(reason="enough"))
    theirs.start(candidate(vec_tile_shape=vec(12)))
    _notes(late, 6, "late")
    late.verify(late.start(candidate(vec_tile_shape=vec(6))), 100.0)
    main = _merged(_merged(ours, theirs), late)
    settle(main, "keep")
    return _bytes(main)
