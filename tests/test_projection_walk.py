"""The warm walk MEMORY.md renders from (kept in State.derived between renderings) gives the
same bytes as walking every attempt afresh, batch after batch of a generated campaign."""

from __future__ import annotations

from collections.abc import Sequence

from ledger.domain.replay import evolve
from ledger.domain.state import State
from ledger.log.record import Draft, Event
from ledger.projections import memory_history
from ledger.projections.memory_sections import render_sections
from ledger.projections.timeline import steps
from ledger.projections.walk import Walk
from stages.policy import effective_policy
from tools.bench.generate import Driver, SealSink


def _ended(body: str) -> str:
    return body.rstrip("\n") + "\n"  # as render_sections ends every body


class _FoldEachBatch(SealSink):
    """Seals like the bench and folds each batch into one kept state, checking it each time."""

    def __init__(self) -> None:
        super().__init__()
        self.state = State()
        self.checked = 0

    def append(self, drafts: Sequence[Draft]) -> tuple[Event, ...]:
        events = super().append(drafts)
        for event in events:
            evolve(self.state, event)
        self._check()
        return events

    def _check(self) -> None:
        state = self.state
        policy = effective_policy(state)
        warm = render_sections(state, policy)  # keeps its walk in state.derived
        cold = Walk.of(steps(state))
        op = state.op or "OP"
        assert warm["adopted"] == _ended(memory_history.render_adopted(state, op, cold))
        assert warm["failed"] == _ended(memory_history.render_failed(state, op, cold))
        assert warm["history"] == _ended(memory_history.render_history(state, op, steps(state)))
        self.checked += 1


def test_warm_walk_renders_the_same_bytes_as_a_fresh_walk_after_every_batch() -> None:
    sink = _FoldEachBatch()
    Driver(7, 1500, sink).run(1500)
    state = sink.state
    # The campaign is long enough for the failures to be grouped (more than the rows shown).
    assert len(Walk.of(steps(state)).failed) > memory_history.FAILED_ROWS + 10
    assert sink.checked > 300
    assert "walk" in state.derived
