"""OpLedgers over every store, for the API tests: the ledger file or one shared MemoryStore."""

from __future__ import annotations

from collections.abc import Callable

from driver import IMPL, candidate, compare, layout, sheet, vec

from ledger.domain.replay import replay
from ledger.domain.state import State
from ledger.log.store_interface import Store
from ledger.shell.api import OpLedger
from stages import commands as cmd

OP = "softmax"
Open = Callable[[], OpLedger]


def fresh_state(store: Store) -> State:
    """The state a full replay of the store's ledger gives."""
    return replay(store.read().events)


def pending_attempt(ledger: OpLedger) -> str:
    """Bring the op to frontend with point F-1 open and one candidate pending; its id."""
    for command in (
        cmd.Init(op=OP),
        compare(),
        layout(),
        cmd.Activate(impl_digest=IMPL),
        cmd.LoadSkill(name="pypto-op-perf-tune"),
        cmd.LoadSkill(name="perf-analyzer"),
        sheet(),
        cmd.EnterStage(stage="frontend"),
        cmd.LoadSkill(name="tune-frontend"),
        cmd.OpenPoint(name="F-1"),
    ):
        ledger.execute(command)
    started = ledger.execute(candidate(vec_tile_shape=vec(32))).events[0]
    return started.id[:12]
