"""The attempts as steps: in the order they started, each with the best it was compared with.

A verdict compares an attempt with the best of its time (R8), but the state keeps only the
current best; `steps` replays the adoptions to give every attempt the config and time it was up
against. MEMORY.md's sections and the report both walk the campaign this way, and both name an
attempt's result with `outcome`. (The protocol's steps, the commands, are in `ledger/cli/`.)
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from attrs import frozen

from ledger.domain.state import Attempt, Point, State
from ledger.log.codec import canonical_json


@frozen
class Step:
    """An attempt with the best config and time it was measured against."""

    attempt: Attempt
    best_config: dict[str, Any]
    best_us: float | None


def baseline_config(state: State) -> dict[str, Any]:
    """The config the baseline was measured with (the first best, DESIGN §5)."""
    if state.baseline_config:
        return dict(state.baseline_config)
    for config, measured_by in state.measured_configs.items():
        if measured_by == "baseline":
            value = json.loads(config)
            return value if isinstance(value, dict) else {}
    if state.best is not None and state.best.attempt is None:
        return dict(state.best.config)
    return {}


def steps(state: State, attempts: Iterable[Attempt] | None = None) -> list[Step]:
    """Every attempt in the order it started, with the best it was compared with (R8).

    `attempts` defaults to the state's own; they are ordered by their sequence number.
    """
    best_config = baseline_config(state)
    best_us = state.target.baseline_us if state.target else None
    out: list[Step] = []
    chosen = state.attempts.values() if attempts is None else attempts
    for attempt in sorted(chosen, key=lambda a: a.seq):
        before = attempt.compared_us if attempt.compared_us is not None else best_us
        out.append(Step(attempt, best_config, before))
        if attempt.verdict in _NEW_BEST and attempt.failure is None:
            best_config = attempt.config
            if attempt.measurement is not None:
                best_us = attempt.measurement.median_us
    return out


def best_after(step: Step, best_us: float | None) -> float | None:
    """The best time after `step`: its time when it was adopted, else `best_us` (R8)."""
    attempt = step.attempt
    if attempt.verdict in _NEW_BEST and attempt.failure is None and attempt.measurement is not None:
        return attempt.measurement.median_us
    return best_us


@frozen
class StageSpan:
    """One stage of the campaign: its steps, the best at its start and end, how it ended."""

    stage: str
    steps: tuple[Step, ...]
    best_start_us: float | None
    best_end_us: float | None
    exit: str  # the exit condition, "current" or "-"


def stage_spans(state: State, walk: Sequence[Step]) -> list[StageSpan]:
    """Each stage entered (and any stage attempts ran in), in order, with its steps."""
    stages = list(dict.fromkeys([*state.entered, *(s.attempt.stage for s in walk)]))
    best_us = state.target.baseline_us if state.target else None
    spans = []
    for stage in stages:
        members = tuple(s for s in walk if s.attempt.stage == stage)
        start_us = members[0].best_us if members else best_us
        for step in members:
            best_us = best_after(step, best_us)
        exit_condition = state.exited.get(stage, "current" if stage == state.stage else "-")
        spans.append(StageSpan(stage, members, start_us, best_us, exit_condition))
    return spans


# Verdicts after which the attempt's measurement is the best: adopted, or the best measured
# again on another device (`remeasured`, R8).
_NEW_BEST = ("adopt", "target-reached", "remeasured")


def outcome(attempt: Attempt) -> str:
    """`pending`, `abandoned`, the failure category, or the verdict."""
    if attempt.status in ("pending", "abandoned"):
        return attempt.status
    if attempt.failure:
        return attempt.failure
    return attempt.verdict or attempt.status


def point_state(point: Point) -> str:
    """`open`, or how the point was closed."""
    return "open" if point.is_open else point.outcome or "closed"


def is_failed(attempt: Attempt) -> bool:
    """True for a failed or rolled-back attempt (the seed's "do not retry" list)."""
    return attempt.failure is not None or attempt.verdict == "rollback"


def config_diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """The keys of `after` that differ from `before`, as `key=json`; removed keys as `-key`."""
    parts = [
        f"{key}={canonical_json(after[key])}"
        for key in sorted(after)
        if key not in before or canonical_json(before[key]) != canonical_json(after[key])
    ]
    parts += [f"-{key}" for key in sorted(before) if key not in after]
    return ", ".join(parts) or "(same config)"
