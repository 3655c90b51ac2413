"""Replay through the store's stream (`evolve` as its sink, as `OpLedger.load` does) folds the
state that replaying the events directly folds, and the attempts' handlers keep the meaning of
the steps they inline (the median, the verdict's finish)."""

from __future__ import annotations

import functools
import statistics
from typing import Any

import pytest
from driver import Driver, candidate, in_point, vec
from factories import draft
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.domain.configs import config_key
from ledger.domain.replay import evolve, replay
from ledger.domain.state import State
from ledger.errors import LedgerError
from ledger.log import chain, codec, record
from ledger.log.record import Event, to_line
from ledger.schema.events import LedgerRepaired, NoteAdded
from stages import commands as cmd
from stages.conflicts import conflicts
from stages.decide import decide
from stages.refusal import Refusal

NAME = "custom/op/events.jsonl"

# One step of a campaign: a candidate measured with 1-3 samples (or failed), a mutation, a note.
STEP = st.tuples(
    st.sampled_from(["candidate", "fail", "mutation", "note"]),
    st.integers(1, 64),  # the tile width: a new config (R9 refuses a repeated one)
    st.lists(st.floats(50.0, 150.0, allow_nan=False), min_size=1, max_size=3),
)


def _campaign(steps: list[Any]) -> Driver:
    """A campaign in one point: each step's command when the stage machine accepts it."""
    driver = in_point()
    for kind, width, times in steps:
        if kind == "note":
            driver.run(cmd.AddNote(text=f"note {width}"))
            continue
        if kind == "mutation":
            command: object = cmd.TryMutation(param="unroll_list", value=[width + 1, 1])
        else:
            command = candidate(vec_tile_shape=vec(width))
        if isinstance(decide(driver.state, command), Refusal):
            continue  # refused (R9, R7): nothing appended, as a real command
        attempt = driver.start(command)
        if kind == "fail":
            driver.run(cmd.Fail(attempt=attempt, category="oom"))
            continue
        try:
            driver.verify(attempt, *times)
        except LedgerError:  # a verdict that stops the campaign (R10): the ledger goes on
            return driver
    return driver


def _streamed(events: list[Event]) -> State:
    """The state folded from the lines of `events`, verified by the store's stream."""
    blob = b"".join(to_line(event) for event in events)
    state = State()
    chain.stream(blob, NAME, functools.partial(evolve, state))
    return state


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(STEP, max_size=12))
def test_the_stream_folds_the_state_replay_folds(steps: list[Any]) -> None:
    driver = _campaign(steps)
    reference = State()
    for event in driver.events:  # the straightforward path: one evolve per event
        evolve(reference, event)
    assert _streamed(driver.events) == reference == driver.state
    for attempt in reference.attempts.values():
        if attempt.measurement is not None:  # the inlined median of a single sample
            times = attempt.measurement.times_us
            assert attempt.measurement.median_us == float(statistics.median(times))
            assert type(attempt.measurement.median_us) is float
    for key, by in reference.measured_configs.items():  # the inlined key (no manifest here)
        if by != "baseline":
            assert key == config_key(reference.attempts[by].config)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ours=st.sampled_from(["verify", "fail", "pending"]),
    theirs=st.sampled_from(["verify", "fail", "pending"]),
    times=st.lists(st.floats(50.0, 150.0, allow_nan=False), min_size=1, max_size=3),
)
def test_the_stream_folds_merged_branches_as_replay_does(
    ours: str, theirs: str, times: list[float]
) -> None:
    """Two branches' attempts in one log (a merge): a recorded conflict, then verdicts and
    failures; the verdict's inlined finish and `_finish` give one state."""
    trunk = in_point()
    branches = [Driver(), Driver()]
    for event in trunk.events:
        for branch in branches:
            branch.events.append(event)
            evolve(branch.state, event)
    forked = len(trunk.events)
    started = []
    for branch, width in zip(branches, (40, 56), strict=True):
        started.append(branch.start(candidate(vec_tile_shape=vec(width))))
    ended = [len(branch.events) for branch in branches]
    for branch, attempt, end in zip(branches, started, (ours, theirs), strict=True):
        if end == "verify":
            branch.verify(attempt, *times)
        elif end == "fail":
            branch.run(cmd.Fail(attempt=attempt, category="oom"))
    # Both starts first, then both ends: the two attempts were pending at once (a conflict).
    merged = [
        *trunk.events,
        *branches[0].events[forked : ended[0]],
        *branches[1].events[forked : ended[1]],
        *branches[0].events[ended[0] :],
        *branches[1].events[ended[1] :],
    ]
    reference = replay(merged)
    if ours == theirs == "pending":  # else the conflict was lifted when one finished
        assert conflicts(reference)
    assert _streamed(merged) == reference


def test_replay_keeps_keyed_events_and_leaves_repairs_out() -> None:
    """Events of an --idempotency-key are kept by key (DESIGN §5), a repair's never."""
    repaired = LedgerRepaired(
        quarantine="events.jsonl.quarantine-1", line=1, byte_count=3, digest="d"
    )
    batches = [
        [draft(NoteAdded(text="a"), key="k1"), draft(NoteAdded(text="b"), key="k1")],
        [draft(repaired, key="k2")],
        [draft(NoteAdded(text="c"))],
    ]
    events: list[Event] = []
    head: tuple[str, ...] = ()
    lamport = 0
    for drafts in batches:
        sealed, _lines = record.seal_batch(drafts, head, lamport)
        events.extend(sealed)
        head, lamport = (sealed[-1].id,), sealed[-1].lamport
    streamed = _streamed(events)
    assert streamed == replay(events)
    assert list(streamed.keyed) == ["k1"]
    assert [e.data["text"] for e in streamed.keyed["k1"]] == ["a", "b"]
    assert (streamed.event_count, streamed.last_event) == (len(events), events[-1].id)


def test_evolve_refuses_an_unknown_event_type() -> None:
    event = Event("0" * 32, 1, (), (0, 1), "op.renamed", 1, {}, {})
    with pytest.raises(ValueError, match=r"unknown event type 'op\.renamed'"):
        evolve(State(), event)


def test_replayed_lines_parse_to_the_events_the_stream_folded() -> None:
    """The stream hands on the walker's events; parsed again from the lines, one state."""
    driver = _campaign(
        [("candidate", 8, [90.0]), ("mutation", 2, [80.0, 81.0]), ("fail", 9, [1.0])]
    )
    parsed = [record.from_record(codec.loads(to_line(e)[:-1])) for e in driver.events]
    assert _streamed(driver.events) == replay(parsed) == driver.state
