"""The warm walk MEMORY.md renders from (kept in State.derived between renderings) gives the
same bytes as walking every attempt afresh, batch after batch of a generated campaign, also
when the state was pickled in between (the state snapshot carries it), and holds a bounded
number of steps however long the campaign."""

from __future__ import annotations

import gc
import pickle
from collections.abc import Sequence
from typing import Any

import memory_states

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


def _cold_sections(state: State) -> dict[str, str]:
    cold = Walk.of(steps(state))
    op = state.op or "OP"
    return {
        "adopted": _ended(memory_history.render_adopted(state, op, cold)),
        "failed": _ended(memory_history.render_failed(state, op, cold)),
        "history": _ended(memory_history.render_history(state, op, steps(state))),
    }


def test_rows_kept_on_the_kept_walk_are_rendered_again_once_a_merge_changes_a_settled_attempt() -> (
    None
):
    """The kept walk's steps keep their rendered rows, so a re-render formats only new rows;
    when a merge changes an attempt that had settled (the fold bumps finished_revision), the
    rows shown are those of the changed attempt, as a fresh walk renders them."""
    state = memory_states.campaign(60)
    policy = effective_policy(state)
    first = render_sections(state, policy)
    kept = state.derived["walk"][1]
    shown = [s for s in kept.failed.items if s.texts]
    assert shown and all("failed" in s.texts for s in shown)  # rendered once, kept
    assert render_sections(state, policy) == first  # rendered again from the kept rows
    changed = shown[-1].attempt
    changed.failure, changed.detail = "oom", "merged: out of memory on the other branch"
    state.finished_revision += 1  # as replay does when a settled attempt changes again
    again = render_sections(state, policy)
    assert again["failed"] != first["failed"] and "merged: out of memory" in again["failed"]
    assert {name: again[name] for name in ("adopted", "failed", "history")} == _cold_sections(state)
