"""R10 budgets (issue 29.5): an evaluation budget, device time and wall-clock time per campaign.

Devices cost: upstream's own tuners stop at 300 evaluations and 12-24 hours. Each budget is a
policy of the op, off unless set (`max_evaluations`, `max_device_seconds`, `max_wall_seconds`;
not pinned at init, so older ops replay unchanged). What counts comes from recorded data only,
so replay and audit re-derive every stop:

- evaluations: verifier results recorded (a measurement or a failure; an abandoned attempt
  has none);
- device seconds: the recorded durations of the verifier runs made for them (a result read
  from the measurement cache cost nothing now: its run was made earlier);
- wall seconds: from the target sheet's event to the end of the latest result, i.e. the time
  its attempt's event was recorded plus its run's recorded duration.

The result that reaches a budget is recorded with its verdict, then the campaign stops
(`campaign.stopped`, reason `budget`). Only a person lifts it (`resume-campaign --person NAME
--reason TEXT`), once the budget no longer holds (a person raises it first: `policy OP
--max-evaluations N --person NAME --reason TEXT`); loosening a budget is lowering a guard, a
person's decision by the one rule of DESIGN §3.3 (stages/policy.py `loosens`, `lowered_guards`;
stages/person.py), so an agent (the MCP server, which has no `person`) can set or tighten a
budget but never loosen or lift one.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Mapping
from typing import Any

from attrs import frozen

from ledger.domain.state import State
from ledger.schema.events import CampaignStopped, Origin

MAX_EVALUATIONS = "max_evaluations"
MAX_DEVICE_SECONDS = "max_device_seconds"
MAX_WALL_SECONDS = "max_wall_seconds"
BUDGET_KEYS = (MAX_EVALUATIONS, MAX_DEVICE_SECONDS, MAX_WALL_SECONDS)
_WHAT = {
    MAX_EVALUATIONS: ("evaluation budget", "evaluations", "--max-evaluations"),
    MAX_DEVICE_SECONDS: ("device-time budget", "s of verifier runs", "--max-device-seconds"),
    MAX_WALL_SECONDS: ("wall-clock budget", "s since the target sheet", "--max-wall-seconds"),
}


@frozen
class Spent:
    """What the campaign used of each budget, from recorded data."""

    evaluations: int
    device_seconds: float
    wall_seconds: float | None  # None: no target sheet or no time recorded yet

    def of(self, key: str) -> float | None:
        """The amount used of the budget `key`."""
        return {
            MAX_EVALUATIONS: float(self.evaluations),
            MAX_DEVICE_SECONDS: self.device_seconds,
            MAX_WALL_SECONDS: self.wall_seconds,
        }[key]


def check_budget_value(value: Any) -> Any:
    """None (off) or a finite number > 0; ValueError otherwise."""
    if value is None:
        return value
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"expected null (off) or a number > 0, got {value!r}")
    if value <= 0:
        raise ValueError(f"expected null (off) or a number > 0, got {value!r}")
    return value


def check_evaluations(value: Any) -> Any:
    """None (off) or an integer >= 1."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise ValueError(f"expected null (off) or an integer >= 1, got {value!r}")
    return check_budget_value(value)


def budgets(policy: Mapping[str, Any]) -> dict[str, float]:
    """The budgets in force (those set and not off)."""
    return {key: float(policy[key]) for key in BUDGET_KEYS if policy.get(key) is not None}


def _seconds_between(start: str | None, end: str | None) -> float | None:
    if start is None or end is None:
        return None
    try:
        parse = _dt.datetime.fromisoformat
        return (
            parse(end.replace("Z", "+00:00")) - parse(start.replace("Z", "+00:00"))
        ).total_seconds()
    except ValueError:
        return None  # a time tune-ledger did not write: that budget cannot be judged


def spent(state: State, result: Origin | None = None) -> Spent:
    """What the campaign used, counting `result` (a verifier result about to be recorded)."""
    evaluations, device = state.evaluations, state.device_seconds
    duration = 0.0
    if result is not None:
        evaluations += 1
        duration = result.duration_s or 0.0
        if result.cached is None:
            device += duration
        else:
            duration = 0.0
    start = state.target.at if state.target is not None else None
    wall = _seconds_between(start, state.last_started_at)
    return Spent(evaluations, device, None if wall is None else wall + duration)


def reached(policy: Mapping[str, Any], used: Spent) -> list[str]:
    """The budgets `used` reaches, each as a text naming the budget and the amount used."""
    found = []
    for key, limit in budgets(policy).items():
        amount = used.of(key)
        if amount is not None and amount >= limit:
            name, unit, _ = _WHAT[key]
            found.append(f"{name} reached: {amount:g} of {limit:g} {unit} (policy {key})")
    return found


def budget_stop(
    state: State, policy: Mapping[str, Any], result: Origin | None
) -> CampaignStopped | None:
    """The stop a verifier result triggers when it reaches a budget (R10)."""
    found = reached(policy, spent(state, result))
    return CampaignStopped(reason="budget", detail="; ".join(found)) if found else None


def raise_hint(op: str, policy: Mapping[str, Any], used: Spent) -> str:
    """The commands a person runs to raise each budget `used` reaches."""
    options = [
        f"{_WHAT[key][2]} N"
        for key, limit in budgets(policy).items()
        if (amount := used.of(key)) is not None and amount >= limit
    ]
    return (
        f"a person raises it: `tune-ledger policy {op} {' '.join(options)} --person NAME "
        f"--reason TEXT`, then `tune-ledger resume-campaign {op} --person NAME --reason TEXT`"
    )
