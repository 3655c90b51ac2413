"""The warm walk MEMORY.md renders from (kept in State.derived between renderings) gives the
same bytes as walking every attempt afresh, batch after batch of a generated campaign, also
when the state was pickled in between (the state snapshot carries it), and holds a bounded
number of steps however long the campaign."""

from __future__ import annotations

import gc
import pickle
from collections.abc import Sequence
from typing import Any

from ledger.domain.replay import evolve
from ledger.domain.state import Attempt, State
from ledger.log.record import Draft, Event
from ledger.projections import memory_history
from ledger.projections.memory_sections import render_sections
from ledger.projections.timeline import Step, steps
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
        if self.checked % 7 == 0:  # as a process that starts from the state snapshot
            self.state = pickle.loads(pickle.dumps(self.state))
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
    # The kept walk counts every step but holds only the few a section can show: the last
    # rows of its three lists (trimmed in batches of as many) and a few ideas per group.
    kept = state.derived["walk"][1]
    most = 3 * 2 * (memory_history.FAILED_ROWS + 1) + 6 * len(kept.groups.groups)
    assert _steps_held(kept) <= most < len(state.attempts)


def _steps_held(root: Any) -> int:
    """How many distinct Steps `root` reaches (not through attempts or classes)."""
    seen: set[int] = set()
    todo, held = [root], 0
    while todo:
        node = todo.pop()
        if id(node) in seen or isinstance(node, type | Attempt):
            continue
        seen.add(id(node))
        held += isinstance(node, Step)
        todo.extend(gc.get_referents(node))
    return held
