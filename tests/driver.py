"""An in-memory driver for the stage machines: decide, seal the events into a log, replay.

Tests build states the way the shell does (decide -> seal -> evolve), so every state a test
sees is one a real ledger could hold.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from ledger.domain import hints
from ledger.domain.keys import attempt_id
from ledger.domain.replay import evolve, replay
from ledger.domain.state import State
from ledger.log.record import Draft, Event, Provenance, seal
from ledger.schema.events import Origin, OutputCheck, Payload
from stages import commands as cmd
from stages.decide import decide
from stages.outcome import Decision
from stages.refusal import Refusal

PROVENANCE = Provenance(
    at="2025-01-01T00:00:00.000000Z",
    tool="tune-ledger",
    version="test",
    host="test-host",
    pid=1,
    command="test",
)
IMPL = "impl-digest-1"
REPORTED = Origin(level="reported")
BASE_CONFIG: dict[str, Any] = {"vec_tile_shape": [1, 8, 1, 64], "unroll_list": [4, 1]}


class Driver:
    """A ledger in memory: its events, the state replayed from them, the last warnings."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.state = State()
        self.warnings: tuple[str, ...] = ()

    def run(self, command: object) -> tuple[Event, ...]:
        """Decide and append; a refusal raises its LedgerError after recording a hand-back."""
        result = decide(self.state, command)
        if isinstance(result, Refusal):
            if result.events:
                self.append(result.events)
            raise result.to_error()
        self.warnings = result.warnings
        return self.append(result.events)

    def decision(self, command: object) -> Decision:
        """The Decision for `command` without appending it (fails the test on a refusal)."""
        result = decide(self.state, command)
        assert isinstance(result, Decision), f"refused: {result}"
        return result

    def refusal(self, command: object) -> Refusal:
        """The Refusal for `command` (fails the test when it is accepted); nothing is appended.
        Its way forward reads as the CLI prints it (tests/test_mcp_hints.py reads it over MCP)."""
        result = decide(self.state, command)
        assert isinstance(result, Refusal), f"accepted: {result}"
        return attrs.evolve(result, next_step=hints.render_text(result.next_step, "cli"))

    def append(self, payloads: Sequence[Payload]) -> tuple[Event, ...]:
        """Seal `payloads` as one batch after the log's head and evolve the state."""
        parents = (self.events[-1].id,) if self.events else ()
        lamport = self.events[-1].lamport + 1 if self.events else 1
        sealed = []
        for index, payload in enumerate(payloads):
            event, _line = seal(
                Draft(payload=payload, provenance=PROVENANCE),
                parents,
                lamport,
                (index, len(payloads)),
            )
            sealed.append(event)
            self.events.append(event)
            evolve(self.state, event)
            parents, lamport = (event.id,), lamport + 1
        return tuple(sealed)

    def start(self, command: object) -> str:
        """Run a command that starts an attempt; return the attempt's id."""
        events = self.run(command)
        started = [e for e in events if e.type == "attempt.started"]
        assert len(started) == 1
        return attempt_id(started[0].id)

    def verify(
        self,
        attempt: str,
        *times: float,
        ok: bool = True,
        layout: int = 0,
        util: float | None = None,
        bubble: float | None = None,
    ) -> dict[str, Any]:
        """Verify `attempt` with these times; return the verdict event's data."""
        events = self.run(verify(attempt, *times, ok=ok, layout=layout, util=util, bubble=bubble))
        return next(e.data for e in events if e.type == "attempt.verdict")

    def replayed(self) -> State:
        """The state a full replay of the log gives."""
        return replay(self.events)

    def types(self) -> list[str]:
        """The types of the events in the log, in order."""
        return [e.type for e in self.events]


# --- commands -------------------------------------------------------------------------------


def compare(digest: str = IMPL, ok: bool = True, name: str = "y") -> cmd.RecordCompare:
    """Tensor-compare evidence with one output."""
    return cmd.RecordCompare(
        outputs=(OutputCheck(name=name, all_close=ok),),
        impl_path="custom/op/op_impl.py",
        impl_digest=digest,
        origin=REPORTED,
    )


def layout(digest: str = IMPL, code: int = 0) -> cmd.RecordLayout:
    """Layout evidence."""
    return cmd.RecordLayout(
        exit_code=code, impl_path="custom/op/op_impl.py", impl_digest=digest, origin=REPORTED
    )


def sheet(
    baseline: float = 100.0,
    target: float = 50.0,
    config: dict[str, Any] | None = None,
    samples: tuple[float, ...] = (),
    cube_m: int | None = None,
    util: float | None = None,
    bubble: float | None = None,
) -> cmd.SetTarget:
    """A target sheet: baseline and target in µs."""
    return cmd.SetTarget(
        baseline_us=baseline,
        shape="32x32x1x256",
        target_us=target,
        target_source="spec",
        source_ref="SPEC.md perf_target",
        config=dict(BASE_CONFIG if config is None else config),
        origin=Origin(level="reported", tool="analyze_perf.py"),
        cube_m=cube_m,
        baseline_samples_us=samples,
        util_pct=util,
        bubble_pct=bubble,
    )


def verify(
    attempt: str,
    *times: float,
    ok: bool = True,
    layout: int = 0,
    util: float | None = None,
    bubble: float | None = None,
) -> cmd.Verify:
    """The verifier's result for an attempt."""
    return cmd.Verify(
        attempt=attempt,
        outputs=(OutputCheck(name="y", all_close=ok),),
        layout_exit=layout,
        times_us=tuple(times),
        origin=REPORTED,
        util_pct=util,
        bubble_pct=bubble,
    )


def candidate(prior: str = "prior kernel", **config: Any) -> cmd.ProposeCandidate:
    """A candidate with the base config updated by `config`."""
    return cmd.ProposeCandidate(config={**BASE_CONFIG, **config}, prior=prior)


def vec(width: int) -> list[int]:
    """A vec tile shape whose last axis is `width`: one distinct config per width."""
    return [1, 8, 1, width]


# --- states -----------------------------------------------------------------------------------


def initialized() -> Driver:
    """An op with a ledger and nothing else."""
    driver = Driver()
    driver.run(cmd.Init(op="softmax"))
    return driver


def activated() -> Driver:
    """An op whose activation passed."""
    driver = initialized()
    driver.run(compare())
    driver.run(layout())
    driver.run(cmd.Activate(impl_digest=IMPL))
    return driver


def with_sheet(**sheet_args: Any) -> Driver:
    """An activated op with base skills loaded and a target sheet."""
    driver = activated()
    driver.run(cmd.LoadSkill(name="pypto-op-perf-tune"))
    driver.run(cmd.LoadSkill(name="perf-analyzer"))
    driver.run(sheet(**sheet_args))
    return driver


def in_stage(stage: str = "frontend", **sheet_args: Any) -> Driver:
    """An op in `stage` with its tune skill loaded (earlier stages exited by the user)."""
    driver = with_sheet(**sheet_args)
    for current in ("frontend", "swimlane", "incore"):
        driver.run(cmd.EnterStage(stage=current))
        if current == stage:
            driver.run(cmd.LoadSkill(name=f"tune-{current}"))
            return driver
        driver.run(cmd.ExitStage(stage=current, reason="skip in test", by_user=True))
    driver.run(cmd.RecordReport(path="custom/softmax/softmax_tuning_report.md", digest="r1"))
    driver.run(cmd.EnterStage(stage="algorithm"))
    return driver


def in_point(stage: str = "frontend", name: str = "F-1", **sheet_args: Any) -> Driver:
    """An op in `stage` with point `name` open."""
    driver = in_stage(stage, **sheet_args)
    driver.run(cmd.OpenPoint(name=name))
    return driver
