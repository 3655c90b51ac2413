"""Policy: the protocol's tunable thresholds, their defaults, and the values an op recorded.

An op's policy is recorded in its ledger (`policy.set` events): `init` pins every default under
the key `defaults`, and later `policy` commands override single keys. Decisions read
`effective_policy(state)`, so a replay re-derives every past decision even after the defaults
in this file change.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from ledger.domain.state import State
from ledger.errors import BadInput
from ledger.schema.vocabulary import STAGES
from stages.budget import BUDGET_KEYS, check_budget_value, check_evaluations

# `policy.set` key under which `init` records the whole default policy.
DEFAULTS_KEY = "defaults"

DEFAULT_POLICY: Mapping[str, Any] = {
    # R7: warn when a point's candidate phase has fewer or more candidates than this.
    "candidates_min": 5,
    "candidates_max": 15,
    # R7: how many runner-up candidates are kept as alternates.
    "alternates": 3,
    # R7: consecutive mutations without gain that exhaust a point, per stage.
    "patience.frontend": 5,
    "patience.swimlane": 8,
    "patience.incore": 5,
    # R8: with one sample on a side, a relative difference within this is noise.
    "noise_threshold": 0.01,
    # R8: with repeated samples on both sides, a seeded bootstrap interval of the ratio of medians.
    "bootstrap_resamples": 2000,
    "bootstrap_confidence": 0.95,
    # R4/R10: core utilization above and bubble rate below these stop the campaign.
    "util_stop_pct": 80.0,
    "bubble_stop_pct": 10.0,
    # R10: which average `util_pct` is. The ledger only compares the recorded number; this names
    # what the measuring tool must report. "all-cores": busy time summed over every core of the
    # part divided by (cores x wall time) - idle cores count against utilization, so a kernel
    # that leaves cores unused cannot stop the campaign. "active-cores": only cores that ran work.
    "utilization_stop_scope": "all-cores",
    # R10: the stages in which the utilization stop applies: incore only, as upstream's skills
    # apply it (DESIGN §3 R10). Utilization counts busy time, not useful work: small tiles keep
    # cores busy while they are slow, so a stop in frontend would end a campaign too early.
    # Ops created before this default pinned all four stages and replay with them.
    "utilization_stop_stages": ["incore"],
    # R4: consecutive algorithm attempts without gain (failures included) that exhaust the
    # algorithm stage's ideas, so it may be exited.
    "algorithm_patience": 3,
    # R9: an algorithm idea this similar (difflib ratio or token Jaccard) to a failed one
    # is a retry.
    "retry_similarity": 0.9,
}

UTILIZATION_SCOPES = ("all-cores", "active-cores")

# R11: refuse adopt / target-reached / a utilization stop that rests on values only reported
# by the caller. Not pinned at init (older ops replay unchanged): unset means "auto", on when
# the op's recorded manifest declares a verifier, so the ledger can measure instead.
REQUIRE_MEASURED = "require_measured"


def declares_verifier(state: State) -> bool:
    """True when the op's recorded manifest declares its verifier: the ledger can measure (and
    `measure` is how a pending attempt is finished)."""
    return state.manifest is not None and state.manifest.has_verifier


def requires_measured(state: State) -> bool:
    """True when decisions may not rest on reported values (R11, policy require_measured)."""
    value = state.policy.get(REQUIRE_MEASURED, "auto")
    if value == "auto":
        return declares_verifier(state)
    return bool(value)


def measured_only(state: State) -> bool:
    """True when only values the ledger measured with the op's declared verifier or layout
    check may be recorded as evidence, as the target sheet's baseline, or give a verdict
    (R1, R3, R8, R11): require_measured is on and the manifest in use was recorded as one in
    force by its presence (`manifest.recorded` with `measured_only`, issue 27); a manifest
    recorded by older code keeps the rule its ledger was decided with (only an adopt may not
    rest on reported values), so old ledgers replay and audit unchanged."""
    return requires_measured(state) and state.manifest is not None and state.manifest.measured_only


# The guards a policy change can lower, and the rule each guards (DESIGN §3.3): lowering one
# is a person's decision (stages/person.py). The R10 budgets (stages/budget.py) are guards too:
# an agent may set or tighten one, only a person loosens one (a larger value, or off).
GUARD_RULES: Mapping[str, str] = {
    REQUIRE_MEASURED: "R11",
    "noise_threshold": "R8",
    "bootstrap_confidence": "R8",
    **dict.fromkeys(BUDGET_KEYS, "R10"),
}


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def loosens(key: str, before: Any, after: Any) -> bool:
    """True when setting `key` from `before` to `after` lowers a guard: require_measured off
    (or from on back to "auto"), a larger noise threshold, a lower bootstrap confidence, a
    budget in force made larger or off (null)."""
    if key == REQUIRE_MEASURED:
        return (after is False and before is not False) or (before is True and after == "auto")
    if key in BUDGET_KEYS:
        return _is_number(before) and (after is None or (_is_number(after) and after > before))
    if not (_is_number(before) and _is_number(after)):
        return False
    if key == "noise_threshold":
        return bool(after > before)
    if key == "bootstrap_confidence":
        return bool(after < before)
    return False


def lowered_guards(state: State) -> list[str]:
    """The guards lowered now, each named with its rule: require_measured off, noise
    thresholds looser than the defaults pinned at init, and budgets looser than the tightest
    value they were set to (off by default, so a budget is lowered only once it was set and a
    person loosened it; DESIGN §3.3)."""
    pinned = {**DEFAULT_POLICY, **state.policy_defaults}
    lowered = []
    if state.policy.get(REQUIRE_MEASURED) is False:
        lowered.append(f"{REQUIRE_MEASURED} false ({GUARD_RULES[REQUIRE_MEASURED]})")
    for key in ("noise_threshold", "bootstrap_confidence"):
        if key in state.policy and loosens(key, pinned.get(key), state.policy[key]):
            lowered.append(
                f"{key} {state.policy[key]} (default {pinned.get(key)}, {GUARD_RULES[key]})"
            )
    for key in BUDGET_KEYS:
        set_to = [
            act.value for act in state.person_acts if act.key == key and _is_number(act.value)
        ]
        now = state.policy.get(key)
        if set_to and loosens(key, min(set_to), now):
            shown = "off" if now is None else f"{now:g}"
            lowered.append(f"{key} {shown} (was {min(set_to):g}, {GUARD_RULES[key]})")
    return lowered


# The keys a verdict depends on; each VerdictReached records them (R8).
NOISE_KEYS = ("noise_threshold", "bootstrap_resamples", "bootstrap_confidence")
STOP_KEYS = (
    "util_stop_pct",
    "bubble_stop_pct",
    "utilization_stop_scope",
    "utilization_stop_stages",
)


def effective_policy(state: State) -> dict[str, Any]:
    """The policy in force: the defaults, overridden by the op's recorded policy events."""
    return {**DEFAULT_POLICY, **state.policy}


def policy_overrides(state: State) -> list[dict[str, Any]]:
    """Each policy whose value differs from the defaults pinned at init, with the value, the
    default and the recorded reason (R10: shown in MEMORY.md, status and resume)."""
    pinned = {**DEFAULT_POLICY, **state.policy_defaults}
    return [
        {
            "key": key,
            "value": value,
            "default": pinned.get(key),
            "reason": state.policy_reasons.get(key, ""),
        }
        for key, value in sorted(state.policy.items())
        if key in state.policy_reasons and value != pinned.get(key)
    ]


def policy_value(policy: Mapping[str, Any], key: str) -> Any:
    """The value of `key` in `policy`, the default where `policy` leaves the key out."""
    return policy[key] if key in policy else DEFAULT_POLICY[key]


def patience(policy: Mapping[str, Any], stage: str) -> int | None:
    """N: mutations without gain in a row that exhaust a point of `stage`; None: no points (R7)."""
    key = f"patience.{stage}"
    if key not in policy and key not in DEFAULT_POLICY:
        return None
    return int(policy_value(policy, key))


def verdict_policy(policy: Mapping[str, Any], stage: str) -> dict[str, Any]:
    """The policy values a verify decision applies, as recorded in its VerdictReached (R8)."""
    applied = {key: policy[key] for key in (*NOISE_KEYS, *STOP_KEYS)}
    key = f"patience.{stage}"
    if key in policy:
        applied[key] = policy[key]
    return applied


# --- validation ----------------------------------------------------------------------------


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"expected a finite number, got {value!r}")
    return float(value)


def _count(low: int, high: int | None = None) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected an integer, got {value!r}")
        if value < low or (high is not None and value > high):
            upper = "" if high is None else f" and <= {high}"
            raise ValueError(f"expected an integer >= {low}{upper}, got {value!r}")
        return value

    return check


def _fraction(low: float, high: float, *, low_open: bool, high_open: bool) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        number = _number(value)
        below = number <= low if low_open else number < low
        above = number >= high if high_open else number > high
        if below or above:
            raise ValueError(
                f"expected a number within {'(' if low_open else '['}{low}, "
                f"{high}{')' if high_open else ']'}, got {value!r}"
            )
        return value

    return check


def _scope(value: Any) -> Any:
    if value not in UTILIZATION_SCOPES:
        raise ValueError(f"expected one of {', '.join(UTILIZATION_SCOPES)}, got {value!r}")
    return value


def _require_measured(value: Any) -> Any:
    # `is`, not `in`: 1 and 0 equal True and False but are not the documented values.
    if not (value is True or value is False or value == "auto"):
        raise ValueError(f'expected true, false or "auto", got {value!r}')
    return value


def _stages(value: Any) -> Any:
    if not isinstance(value, list) or not all(v in STAGES for v in value):
        raise ValueError(f"expected a list of stages ({', '.join(STAGES)}), got {value!r}")
    return value


_CHECKS: Mapping[str, Callable[[Any], Any]] = {
    "candidates_min": _count(0),
    "candidates_max": _count(1),
    "alternates": _count(0),
    "patience.frontend": _count(1),
    "patience.swimlane": _count(1),
    "patience.incore": _count(1),
    "noise_threshold": _fraction(0.0, 1.0, low_open=False, high_open=True),
    "bootstrap_resamples": _count(100, 1_000_000),
    "bootstrap_confidence": _fraction(0.5, 1.0, low_open=True, high_open=True),
    "util_stop_pct": _fraction(0.0, 100.0, low_open=False, high_open=False),
    "bubble_stop_pct": _fraction(0.0, 100.0, low_open=False, high_open=False),
    "utilization_stop_scope": _scope,
    "utilization_stop_stages": _stages,
    "retry_similarity": _fraction(0.0, 1.0, low_open=True, high_open=False),
    REQUIRE_MEASURED: _require_measured,
    # R10 budgets (stages/budget.py): off (null) unless set; not pinned at init.
    "max_evaluations": check_evaluations,
    "max_device_seconds": check_budget_value,
    "max_wall_seconds": check_budget_value,
}


def check_policy_value(state: State, key: str, value: Any) -> None:
    """Raise BadInput for an unknown key or a value out of range (DESIGN §3 policy)."""
    if key not in _CHECKS:
        known = ", ".join(sorted(_CHECKS))
        raise BadInput(f"unknown policy key {key!r}", hint=f"known keys: {known}")
    try:
        _CHECKS[key](value)
    except ValueError as e:
        raise BadInput(f"policy {key}: {e}") from e
    merged = {**effective_policy(state), key: value}
    if merged["candidates_min"] > merged["candidates_max"]:
        raise BadInput(
            f"policy {key}: candidates_min ({merged['candidates_min']}) would exceed "
            f"candidates_max ({merged['candidates_max']})"
        )
