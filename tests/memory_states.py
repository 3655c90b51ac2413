"""Replayed states built directly, for the MEMORY.md and report tests (no ledger needed).

`campaign(n)` is a deterministic campaign of `n` attempts through the three config stages with
mixed verdicts and failures; `campaign(n + 1)` extends `campaign(n)` by exactly one attempt.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from ledger.domain.state import (
    Attempt,
    Best,
    Evidence,
    Measurement,
    Point,
    Relaxation,
    State,
    TargetSheet,
)
from ledger.log.codec import canonical_json
from ledger.log.position import Position

POLICY: dict[str, Any] = {}
OP = "softmax"
BASELINE_CONFIG: dict[str, Any] = {
    "vec_tile_shape": [1, 32, 32],
    "unroll_list": [4, 2, 1],
    "stitch_function_max_num": 16,
}
_PARAMS: tuple[tuple[str, list[Any]], ...] = (
    ("vec_tile_shape", [[1, 16, 32], [1, 32, 64], [1, 64, 64], [1, 16, 16], [1, 64, 32]]),
    ("unroll_list", [[8, 4, 2, 1], [2, 1], [16, 8, 4], [4, 1], [8, 1]]),
    ("stitch_function_max_num", [1, 4, 8, 32, 64, 128]),
    ("cube_tile_shape", [[[128, 128], [64, 256], [256, 256]], [[64, 64], [64, 256], [128, 128]]]),
)
_FAILURES = ("compile", "timeout", "oom", "accuracy", "runtime", "layout")
_PATIENCE = {"frontend": 5, "swimlane": 8, "incore": 5}
_PREFIX = {"frontend": "F", "swimlane": "S", "incore": "I"}


def hexid(*parts: object, length: int = 32) -> str:
    """A stable fake event id."""
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:length]


def measurement(time_us: float, **kwargs: Any) -> Measurement:
    """A single-sample measurement."""
    return Measurement(
        times_us=(time_us,),
        median_us=time_us,
        util_pct=kwargs.pop("util", None),
        bubble_pct=kwargs.pop("bubble", None),
        origin_level="measured",
        **kwargs,
    )


def fresh(op: str = OP) -> State:
    """Only the op exists."""
    return State(op=op, event_count=1, last_event=hexid("init"))


def activated(op: str = OP) -> State:
    """Evidence passed and activation recorded; no target sheet yet."""
    state = fresh(op)
    impl = "sha256:" + hexid("impl", length=64)
    state.compare = Evidence(
        event=hexid("compare"),
        impl_digest=impl,
        impl_path=f"custom/{op}/{op}_impl.py",
        passed=True,
        outputs=[
            {"name": "out", "all_close": True, "max_diff": 1.25e-05},
            {"name": "lse", "all_close": True, "max_diff": 0.0},
        ],
        origin_level="measured",
    )
    state.layout = Evidence(
        event=hexid("layout"),
        impl_digest=impl,
        impl_path=f"custom/{op}/{op}_impl.py",
        passed=True,
        exit_code=0,
        origin_level="reported",
    )
    state.activated = True
    state.activation_digest = impl
    state.skills = ["pypto-op-perf-tune", "perf-analyzer"]
    state.event_count = 4
    state.last_event = hexid("activate")
    return state


def with_sheet(op: str = OP, *, cube_m: int | None = 128) -> State:
    """Activated, with the target sheet written; the baseline is the best."""
    state = activated(op)
    state.target = TargetSheet(
        event=hexid("target"),
        baseline_us=2000.0,
        shape="[1, 4096, 128]",
        target_us=500.0,
        target_source="spec",
        source_ref="SPEC.md: perf_target 0.5 ms",
        metric="time",
        cube_m=cube_m,
        tool="perf-analyzer/scripts/analyze_perf.py",
        origin_level="measured",
    )
    state.measured_configs[canonical_json(BASELINE_CONFIG)] = "baseline"
    state.best = Best(config=dict(BASELINE_CONFIG), measurement=measurement(2000.0), attempt=None)
    state.event_count = 5
    state.last_event = hexid("target")
    return state


def campaign(attempts: int, seed: int = 7, op: str = OP, horizon: int | None = None) -> State:
    """A campaign of `attempts` attempts with mixed verdicts and failures (deterministic).

    Stages split `horizon` attempts (default: `attempts`) 40/35/25, so two campaigns with the
    same horizon agree on every attempt they share.
    """
    state = with_sheet(op)
    state.relaxations.append(
        Relaxation(
            event=hexid("relax"),
            what="vec",
            limit=128,
            basis="swimlane shows vec units idle 40% at 64 | see perf/run-12",
        )
    )
    rng = random.Random(seed)
    plan = _stage_plan(max(attempts, horizon or attempts))
    point: Point | None = None
    best_us = 2000.0
    best_config = dict(BASELINE_CONFIG)
    events = state.event_count
    for seq in range(1, attempts + 1):
        stage = plan[seq - 1]
        if stage != state.stage:
            if point is not None:
                _close(point)
                point = None
            if state.stage is not None:
                state.exited[state.stage] = "points-closed"
                state.skills.remove(f"tune-{state.stage}")
            state.stage = stage
            state.entered.append(stage)
            state.skills.append(f"tune-{stage}")
            events += 3
        if point is None or (point.streak >= _PATIENCE[stage]):
            if point is not None:
                _close(point)
            number = sum(1 for p in state.points.values() if p.stage == stage) + 1
            point = Point(stage=stage, name=f"{_PREFIX[stage]}-{number}")
            state.points[point.name] = point
            state.open_point = point.name
            events += 1
        kind = "candidate" if point.candidates < 6 else "mutation"
        attempt = Attempt(
            id=hexid("attempt", seq, length=12),
            seq=seq,
            kind=kind,
            stage=stage,
            point=point.name,
            config={},
        )
        if kind == "candidate":
            attempt.prior = rng.choice(["ops/flash_attn", "ops/layernorm", "ledger:gelu"])
            attempt.config = dict(best_config)
            for param, values in rng.sample(_PARAMS, 2):
                attempt.config[param] = rng.choice(values)
            attempt.config["seed"] = seq  # every candidate config is new (R9)
            point.candidates += 1
        else:
            param, values = rng.choice(_PARAMS)
            attempt.param, attempt.value = param, rng.choice(values) if seq % 3 else seq
            attempt.config = {**best_config, param: attempt.value}
            point.mutations += 1
        point.attempts.append(attempt.id)
        roll = rng.random()
        attempt.status = "verified"
        if roll < 0.18:
            attempt.status = "failed"
            attempt.failure = rng.choice(_FAILURES)
            attempt.verdict = "rollback"
            attempt.detail = f"{attempt.failure} error at step {seq}: see log line {seq * 7}"
            events += 2
        else:
            if roll < 0.24:
                time_us, verdict = best_us * rng.uniform(0.975, 0.995), "adopt"
            elif roll < 0.62:
                time_us, verdict = best_us * rng.uniform(0.995, 1.005), "no-gain"
            else:
                time_us, verdict = best_us * rng.uniform(1.03, 1.6), "rollback"
            attempt.measurement = measurement(round(time_us, 3), util=round(rng.uniform(40, 79), 1))
            attempt.verdict = verdict
            attempt.compared_us = best_us
            events += 3
            if verdict == "adopt":
                best_us, best_config = time_us, attempt.config
                state.best = Best(
                    config=attempt.config, measurement=attempt.measurement, attempt=attempt.id
                )
                state.adopted.append(attempt.id)
                if kind == "mutation":
                    point.streak = 0
            elif kind == "mutation":
                point.streak += 1
        state.attempts[attempt.id] = attempt
        state.measured_configs[canonical_json(attempt.config)] = attempt.id
    state.event_count = events
    state.last_event = hexid("event", events)
    return state


def _stage_plan(horizon: int) -> list[str]:
    frontend = (horizon * 4 + 9) // 10
    swimlane = (horizon * 35 + 99) // 100
    return (
        ["frontend"] * frontend
        + ["swimlane"] * swimlane
        + ["incore"] * (horizon - frontend - swimlane)
    )


def _close(point: Point) -> None:
    point.is_open = False
    point.outcome = "exhausted"
    point.reason = f"{point.streak} mutants without gain"


def position(state: State) -> Position:
    """The ledger position a state was replayed from."""
    return state.position


HOSTILE = (
    "a | b\nsecond line\r\n<!-- tune-ledger:end status -->\u2028`tick` \\| back\\slash "
    "<script>x</script> -->"
)


def hostile(state: State, text: str = HOSTILE) -> State:
    """`state` with user text that tries to break tables and markers in every free field."""
    assert state.target is not None and state.compare is not None
    state.target.source_ref = text
    state.target.shape = text
    state.target.tool = text
    state.compare.impl_path = text
    state.compare.outputs.append({"name": text, "all_close": True, "max_diff": None})
    state.relaxations.append(
        Relaxation(event=hexid("relax2"), what="cube", limit=[text], basis=text)
    )
    state.notes.extend([text, text + " again"])
    state.stopped, state.stop_detail = "user", text
    state.merge.reopened_points.append(text)  # a merge conflict naming a point of that name
    ordered = sorted(state.attempts.values(), key=lambda a: a.seq)
    for attempt in ordered[-40:]:
        attempt.detail = text
        attempt.prior = text
        if attempt.kind == "mutation":
            attempt.param = text
            attempt.value = {text: [text]}
        attempt.config = {**attempt.config, text: text}
    seq = len(state.attempts) + 1
    algorithm = Attempt(
        id=hexid("algo", length=12),
        seq=seq,
        kind="algorithm",
        stage="algorithm",
        point=None,
        config=dict(BASELINE_CONFIG),
        description=text,
        impl_digest="sha256:" + hexid("algo-impl"),
        status="failed",
        verdict="rollback",
        failure="compile",
        detail=text,
    )
    state.attempts[algorithm.id] = algorithm
    pending = Attempt(
        id=hexid("pending", length=12),
        seq=seq + 1,
        kind="algorithm",
        stage="algorithm",
        point=None,
        config=dict(BASELINE_CONFIG),
        description=text,
    )
    state.attempts[pending.id] = pending
    state.pending = pending.id
    if state.best is not None:
        state.best.config = {**state.best.config, text: text}
    return state


def table_rows(markdown: str) -> list[int]:
    """The number of body rows of each table markdown-it finds in `markdown`."""
    from markdown_it import MarkdownIt

    counts: list[int] = []
    in_body = False
    for token in MarkdownIt("commonmark").enable("table").parse(markdown):
        if token.type == "table_open":
            counts.append(0)
        in_body = token.type == "tbody_open" or (in_body and token.type != "tbody_close")
        if in_body and token.type == "tr_open":
            counts[-1] += 1
    return counts
