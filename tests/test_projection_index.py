"""Projections kept in `State.derived` and extended from the tail (outcome counts, the points
table, status's points, the alternates, R9's earlier ideas) give exactly what computing them
from scratch gives, at every step of generated campaigns (a warm MCP server renders from the
former; a CLI process, with a fresh state, from the latter), also across pickle round trips
of the state, since the state snapshot carries them to the next process."""

from __future__ import annotations

import pickle
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.domain.replay import evolve, replay
from ledger.domain.state import Attempt, State
from ledger.log.record import Draft, Event
from ledger.projections import attempt_markdown, views
from ledger.projections.memory_sections import render_sections
from ledger.projections.timeline import outcome
from stages import retry
from stages.alternates import alternate_candidates
from stages.policy import effective_policy, policy_value
from tools.bench.generate import Driver, SealSink


def _counts_scanned(state: State) -> dict[str, int]:
    counts: dict[str, int] = {}
    for attempt in state.attempts.values():
        counts[outcome(attempt)] = counts.get(outcome(attempt), 0) + 1
    return counts


def _alternates_scanned(state: State) -> list[str]:
    """R7's alternates as they were computed before the index: a scan of every attempt."""
    keep = int(policy_value(effective_policy(state), "alternates"))
    candidates = [a for a in state.attempts.values() if a.kind == "candidate"]
    if not candidates or keep <= 0:
        return []
    latest = max(candidates, key=lambda a: a.seq)
    best = state.best.attempt if state.best else None
    valid = [
        a
        for a in candidates
        if a.point == latest.point
        and a.stage == latest.stage
        and a.id != best
        and a.status == "verified"
        and a.failure is None
        and a.measurement is not None
    ]
    valid.sort(key=lambda a: (a.measurement.median_us if a.measurement else 0.0, a.seq))
    return [a.id for a in valid[:keep]]


def _ideas_scanned(state: State) -> list[Attempt]:
    return [
        a
        for a in state.attempts.values()
        if a.kind == "algorithm"
        and a.status in ("verified", "failed")
        and a.verdict in ("rollback", "no-gain")
        and a.description
    ]


class _Checked(SealSink):
    """Folds each batch into one kept state and, every `every` batches, compares what it
    renders with a state replayed afresh from the same events and with plain scans."""

    def __init__(self, every: int, limit: int) -> None:
        super().__init__()
        self.every, self.limit = every, limit
        self.state = State()
        self.events: list[Event] = []
        self.batches = 0
        self.checked = 0

    def append(self, drafts: Sequence[Draft]) -> tuple[Event, ...]:
        events = super().append(drafts)
        for event in events:
            evolve(self.state, event)
        self.events += events
        self.batches += 1
        if self.batches % self.every == 0:
            self._check()
        return events

    def _check(self) -> None:
        warm, cold = self.state, replay(self.events)
        policy = effective_policy(warm)
        assert render_sections(warm, policy) == render_sections(cold, policy)
        assert views.status(warm) == views.status(cold)
        assert attempt_markdown.outcome_counts(warm) == _counts_scanned(cold)
        limited = attempt_markdown.points_table(warm, policy, self.limit)
        assert limited == attempt_markdown._scanned_points_table(cold, policy, self.limit)
        assert [a.id for a in alternate_candidates(warm, policy)] == _alternates_scanned(cold)
        assert retry._unsuccessful_ideas(warm) == _ideas_scanned(cold)
        for stage in (None, warm.stage):
            # `log --limit` reads the attempts back from the end: their start order
            started = [a for a in sorted(cold.attempts.values(), key=lambda a: a.seq)]
            shown = [views.attempt_row(a) for a in started if stage in (None, a.stage)]
            assert views.attempt_rows(warm, stage=stage, limit=self.limit) == shown[-self.limit :]
        self.checked += 1
        if self.checked % 3 == 0:
            # As a process that starts from the state snapshot, which carries `derived`: one
            # pickle keeps the attempts and points the indexes refer to the state's own.
            self.state = pickle.loads(pickle.dumps(self.state))


@settings(max_examples=6, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    events=st.integers(150, 700),
    every=st.integers(1, 7),
    limit=st.integers(1, 20),
)
def test_kept_projections_equal_computing_them_from_scratch(
    seed: int, events: int, every: int, limit: int
) -> None:
    sink = _Checked(every, limit)
    Driver(seed, events, sink).run(events)
    assert sink.checked >= 1
    # The kept indexes were really used (not rebuilt from scratch at every call).
    assert {"outcome-counts", "point-index", "candidates"} <= set(sink.state.derived)
