"""Renderings kept in `State.derived` by the inputs they read (the activation and target
sheet sections, the alternates table, the rows of the kept walk) give exactly the bytes of
rendering from a state that keeps nothing, after every batch of generated campaigns, across
pickle round trips (the state snapshot carries them), and after a change of each input."""

from __future__ import annotations

import pickle
from collections.abc import Sequence

import memory_states

from ledger.domain.replay import evolve
from ledger.domain.state import Evidence, Relaxation, State, TargetSheet
from ledger.log.record import Draft, Event
from ledger.projections import view_cache
from ledger.projections.memory_sections import render_sections
from stages.policy import effective_policy
from tools.bench.generate import Driver, SealSink


def _cold(state: State) -> State:
    """The same state with nothing derived kept: every section rendered from scratch."""
    copy: State = pickle.loads(pickle.dumps(state))
    copy.derived.clear()
    return copy


def _same_as_cold(state: State) -> dict[str, str]:
    warm = render_sections(state, effective_policy(state))
    cold = _cold(state)
    assert warm == render_sections(cold, effective_policy(cold))
    assert view_cache.render(state, []) == view_cache.render(_cold(state), [])
    return warm


class _RenderEachBatch(SealSink):
    def __init__(self) -> None:
        super().__init__()
        self.state = State()
        self.batches = 0

    def append(self, drafts: Sequence[Draft]) -> tuple[Event, ...]:
        events = super().append(drafts)
        for event in events:
            evolve(self.state, event)
        _same_as_cold(self.state)
        self.batches += 1
        if self.batches % 11 == 0:  # as a process that starts from the state snapshot
            self.state = pickle.loads(pickle.dumps(self.state))
        return events


def test_kept_renderings_match_rendering_from_scratch_after_every_batch() -> None:
    sink = _RenderEachBatch()
    Driver(11, 400, sink).run(400)
    assert sink.batches > 80
    assert set(sink.state.derived["kept-renderings"]) == {
        "activation",
        "target-sheet",
        "alternates",
    }


def test_each_input_a_kept_section_reads_renders_it_again() -> None:
    """A new piece of evidence, a failed activation's problems, a new target sheet, a new or
    re-ordered relaxation: each changes the kept section as rendering afresh does."""
    state = memory_states.campaign(40)
    first = _same_as_cold(state)
    assert state.compare is not None and state.target is not None
    state.compare = Evidence(
        event="e" * 32,
        impl_digest="sha256:" + "1" * 64,
        impl_path="custom/softmax/softmax_impl.py",
        passed=False,
        outputs=[{"name": "out", "all_close": False, "max_diff": 0.5}],
        origin_level="measured",
    )
    changed = _same_as_cold(state)
    assert changed["activation"] != first["activation"]
    state.activated, state.handed_back = False, True
    state.activation_problems = ["out is not all_close"]
    assert _same_as_cold(state)["activation"] != changed["activation"]
    state.target = TargetSheet(
        event="t" * 32,
        baseline_us=3000.0,
        shape="[2, 64]",
        target_us=100.0,
        target_source="upstream",
        source_ref=None,
        metric="time",
        cube_m=16,
        tool=None,
        origin_level="reported",
    )
    sheet = _same_as_cold(state)["target-sheet"]
    assert sheet != first["target-sheet"]
    state.relaxations.append(Relaxation(event="r" * 32, what="cube", limit=[[8, 8]], basis="b"))
    relaxed = _same_as_cold(state)["target-sheet"]
    assert relaxed != sheet
    state.relaxations.insert(0, state.relaxations.pop())  # re-ordered: another is the latest
    assert _same_as_cold(state)["target-sheet"] != relaxed
