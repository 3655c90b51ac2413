"""Renderings kept in `State.derived` by the inputs they read (the activation and target
sheet sections, the alternates table, the rows of the kept walk) give exactly the bytes of
rendering from a state that keeps nothing, after every batch of generated campaigns, across
pickle round trips (the state snapshot carries them), and after a change of each input."""

from __future__ import annotations

import json
import pickle
from collections.abc import Sequence
from pathlib import Path

import memory_states
from cli_harness import OP, Cli, frontend

from ledger.cli.base import KeptLedgers, open_ledgers
from ledger.domain.replay import evolve
from ledger.domain.state import Evidence, Relaxation, State, TargetSheet
from ledger.log.record import Draft, Event
from ledger.projections import cache_file, view_cache
from ledger.projections.memory_file import Position, render_memory
from ledger.projections.memory_sections import render_sections
from ledger.shell.api import OpLedger
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


def test_a_warm_server_writes_the_memory_and_views_a_fresh_replay_renders(tmp_path: Path) -> None:
    """Commands run on kept OpLedgers (as the MCP server runs them, every kept rendering in
    play) leave after each step MEMORY.md's sections and the cached views that a state replayed
    from the ledger's bytes alone renders."""
    cli = Cli(tmp_path)
    frontend(cli)
    token = open_ledgers.set(KeptLedgers())
    try:
        steps = [(32, "80us"), (16, "120us"), (48, "79.5us"), (24, None), (40, "60us")]
        steps += [(56, "200us"), (12, "60.2us"), (8, "90us")]
        for width, took in steps:
            config = json.dumps({"vec_tile_shape": [1, 8, 1, width]})
            cli.ok("candidate", OP, "--config", config, "--prior", f"p{width}")
            _same_as_a_fresh_replay(cli)
            if took is None:
                cli.ok("fail", OP, "pending", "--category", "compile", "--detail", "x")
            else:
                verify = ["--output", "y=true", "--layout-exit", "0", "--time", took]
                cli.ok("verify", OP, "pending", *verify)
            _same_as_a_fresh_replay(cli)
    finally:
        open_ledgers.reset(token)


def _same_as_a_fresh_replay(cli: Cli) -> None:
    folder = cli.root / "custom" / OP
    written = (folder / "MEMORY.md").read_text("utf-8")
    state = OpLedger(cli.root, OP).load(snapshot=False).state  # the ledger's bytes only
    assert not state.derived
    position = Position(events=state.event_count, last=state.last_event or "")
    assert render_memory(written, state, effective_policy(state), position) == written
    entry = cache_file.read_cache_file(folder / view_cache.CACHE_DIR / view_cache.ENTRY_NAME)
    assert entry is not None
    assert json.loads(entry)["views"] == view_cache.render(state, [])
