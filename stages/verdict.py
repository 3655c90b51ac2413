"""R8 Regression loop: the ledger's verdict on a measured attempt, judged against noise.

With repeated samples on both sides, a seeded bootstrap confidence interval of the ratio
median(attempt) / median(best) decides (stages/bootstrap.py: the same interval on any NumPy);
with one value on either side (deterministic simulators), a relative threshold. The seed comes
from the attempt id, a recorded value, so audit re-derives the verdict exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, get_args

import attrs
from attrs import frozen

from ledger.domain import devices
from ledger.domain.hints import TEXT, Fill, Step
from ledger.domain.keys import measured_key
from ledger.domain.samples import median
from ledger.domain.state import Attempt, Best, State
from ledger.errors import BadInput
from ledger.log import codec
from ledger.schema.events import (
    AttemptAbandoned,
    AttemptFailed,
    AttemptMeasured,
    BestRemeasured,
    CampaignStopped,
    Failure,
    Payload,
    Verdict,
    VerdictReached,
)
from ledger.schema.vocabulary import ADOPTED
from stages import remeasure
from stages.binding import attempt_binding_problem
from stages.bootstrap import bootstrap_interval
from stages.budget import budget_stop
from stages.outcome import Result, accept, build, nonempty, refuse
from stages.policy import (
    NOISE_KEYS,
    effective_policy,
    measured_only,
    requires_measured,
    verdict_policy,
)
from stages.refusal import Refusal
from stages.search import exhaustion
from stages.stop import utilization_stop

if TYPE_CHECKING:
    from stages.commands import Abandon, Fail, Verify


@frozen
class Comparison:
    """The statistics behind a verdict, as VerdictReached records them (R8)."""

    verdict: Verdict
    method: Literal["bootstrap", "threshold"]
    best_median_us: float
    attempt_median_us: float
    ratio: float
    low: float | None
    high: float | None
    threshold: float | None
    seed: int | None
    policy: dict[str, Any]


def seed_of(attempt_id: str) -> int:
    """The bootstrap seed of an attempt: its id's first 8 hex digits as a number (R8)."""
    try:
        return int(attempt_id[:8], 16)
    except ValueError:  # not a content id (hand-built tests): hash it instead
        return int(codec.digest(attempt_id.encode("utf-8"))[:8], 16)


def compute_verdict(
    best_samples: Sequence[float],
    attempt_samples: Sequence[float],
    target_us: float,
    policy: Mapping[str, Any],
    seed: int,
) -> Comparison:
    """The verdict on a correct attempt against the best, judged against noise (R8)."""
    best_median, attempt_median = median(best_samples), median(attempt_samples)
    ratio = attempt_median / best_median
    applied = {key: policy[key] for key in NOISE_KEYS}
    low = high = threshold = None
    used_seed: int | None = None
    if len(best_samples) >= 2 and len(attempt_samples) >= 2:
        method: Literal["bootstrap", "threshold"] = "bootstrap"
        used_seed = seed
        low, high = bootstrap_interval(
            best_samples,
            attempt_samples,
            int(policy["bootstrap_resamples"]),
            float(policy["bootstrap_confidence"]),
            seed,
        )
        faster, slower = high < 1.0, low > 1.0
    else:
        method = "threshold"
        threshold = float(policy["noise_threshold"])
        faster, slower = ratio < 1.0 - threshold, ratio > 1.0 + threshold
    verdict: Verdict = "rollback" if slower else "no-gain"
    if faster:
        verdict = "target-reached" if attempt_median <= target_us else "adopt"
    return Comparison(
        verdict=verdict,
        method=method,
        best_median_us=best_median,
        attempt_median_us=attempt_median,
        ratio=ratio,
        low=low,
        high=high,
        threshold=threshold,
        seed=used_seed,
        policy=applied,
    )


def pending_attempt(state: State, attempt_id: str) -> Attempt | Refusal:
    """The attempt named, when it is the pending one (R6); BadInput when unknown."""
    attempt = state.attempts.get(attempt_id)
    if attempt is None:
        raise BadInput(
            f"unknown attempt {attempt_id!r}", hint=f"see {Step('log', state.op)} for attempt ids"
        )
    if attempt.status != "pending":
        return refuse(
            "R6",
            f"attempt {attempt_id} is not pending",
            f"attempt {attempt_id} is {attempt.status}"
            + (f" ({attempt.verdict})" if attempt.verdict else ""),
            "verify, fail or abandon only the pending attempt",
        )
    return attempt


def _failure_of(measured: AttemptMeasured) -> Literal["accuracy", "layout"] | None:
    if not all(output.all_close for output in measured.outputs):
        return "accuracy"
    return "layout" if measured.layout_exit != 0 else None


def decide_verify(state: State, command: Verify) -> Result:
    """Record the verifier's result and the verdict the ledger computes from it (R7, R8, R10)."""
    attempt = pending_attempt(state, command.attempt)
    if isinstance(attempt, Refusal):
        return attempt
    if command.binding is not None:
        problem = attempt_binding_problem(
            state, attempt, command.binding.config, command.binding.impl_digest
        )
        if problem:
            raise BadInput(
                f"{problem}; nothing was written and attempt {attempt.id} stays pending",
                rule="R11",
                hint="measure the attempt's own config: "
                f"{Step('measure', state.op, attempt=attempt.id)} builds the command from it",
            )
    unmeasured = _unmeasured_verdict(state, attempt.id, command)
    if unmeasured is not None:
        return unmeasured
    measured = build(
        AttemptMeasured,
        "measurement",
        attempt=attempt.id,
        outputs=command.outputs,
        layout_exit=command.layout_exit,
        times_us=command.times_us,
        origin=command.origin,
        util_pct=command.util_pct,
        bubble_pct=command.bubble_pct,
        metrics=command.metrics,
        binding=command.binding,
        accuracy_origin=command.accuracy_origin,
        device=command.device,
    )
    best, sheet = state.best, state.target
    if best is None or sheet is None:  # the sheet precedes every stage and so every attempt
        raise BadInput("no target sheet: nothing to compare with")
    if _carries_best(state, attempt, measured, best):
        # The best measured on another device is the best from here on; no verdict (R8).
        return accept(measured, BestRemeasured(attempt=attempt.id, previous=best.attempt))
    other_device = _device_refusal(state, attempt.id, measured, best)
    if other_device is not None:
        return other_device
    other_verifier = _verifier_refusal(state, attempt.id, measured, best)
    if other_verifier is not None:
        return other_verifier
    policy = effective_policy(state)
    failure = _failure_of(measured)
    if failure is not None:
        best_median, attempt_median = median(best.measurement.times_us), median(measured.times_us)
        stats: dict[str, Any] = {
            "verdict": "rollback",
            "method": "failure",
            "best_median_us": best_median,
            "attempt_median_us": attempt_median,
            "ratio": attempt_median / best_median,
        }
    else:
        comparison = compute_verdict(
            best.measurement.times_us,
            measured.times_us,
            sheet.target_us,
            policy,
            seed_of(attempt.id),
        )
        # The noise keys it applied are recorded among the verdict's whole policy below.
        stats = attrs.asdict(comparison, filter=lambda field, _value: field.name != "policy")
    verdict = VerdictReached(
        attempt=attempt.id,
        failure=failure,
        best_attempt=best.attempt,
        policy=verdict_policy(policy, attempt.stage),
        **stats,
    )
    events: list[Payload] = [measured, verdict]
    adopted = verdict.verdict in ADOPTED
    if adopted:
        reported = _rests_on_reported(state, measured)
        if reported:
            return refuse(
                "R11",
                f"a {verdict.verdict} may not rest on values only reported by hand",
                f"policy require_measured is on and {reported}",
                f"let the ledger measure it: {Step('measure', state.op, attempt=attempt.id)} (or "
                f"{Step('verify', state.op, attempt=attempt.id, run=Fill('CMD'))}); to decide "
                "on reported values, a person sets "
                f"{Step('policy', state.op, key='require_measured', value='false', reason=TEXT)}",
            )
    closed = exhaustion(state, attempt, adopted, failure)
    if closed is not None:
        events.append(closed)
    if verdict.verdict == "target-reached":
        events.append(
            CampaignStopped(
                reason="target-reached",
                detail=f"best {verdict.attempt_median_us:g} µs <= target {sheet.target_us:g} µs",
            )
        )
    elif adopted:
        stop = utilization_stop(state, measured.util_pct, measured.bubble_pct)
        if stop is not None:
            events.append(stop)
    if not isinstance(events[-1], CampaignStopped):
        spent = budget_stop(state, policy, measured.origin)
        if spent is not None:
            events.append(spent)
    return accept(*events)


def _unmeasured_verdict(state: State, attempt: str, command: Verify) -> Refusal | None:
    """Under require_measured (a manifest that declares a verifier, recorded as in force by
    its presence), only times the ledger measured with the declared verifier give a verdict
    (R11)."""
    if not requires_measured(state):
        return None
    level = command.origin.level
    if level == "measured" or not measured_only(state):
        return None
    how = {
        "ran": "come from an ad-hoc --run command nobody declared",
        "unbound": "name neither the config nor the kernel the verifier ran",
        "artefact": "were parsed from a file",
    }.get(level, "were typed in")
    return refuse(
        "R11",
        f"only measured times give a verdict: attempt {attempt}'s times {how} (provenance {level})",
        "SPEC.md declares a verifier, so policy require_measured is on",
        "make the verifier print the config and impl_digest it ran (SPEC.md `verifier`), "
        f"then {Step('measure', state.op, attempt=attempt)}"
        if level == "unbound"
        else "let the ledger run the declared verifier: "
        f"{Step('measure', state.op, attempt=attempt)}",
    )


def _verifier_refusal(
    state: State, attempt: str, measured: AttemptMeasured, best: Best
) -> Refusal | None:
    """A verdict never compares measurements made under two verifier digests (R8), while
    require_measured is on (a person who turned it off decides on weaker values anyway, and
    `audit --strict` names that lowered guard)."""
    theirs, ours = best.measurement.verifier_digest, measured.origin.verifier_digest
    if theirs is None or ours is None or theirs == ours or not requires_measured(state):
        return None
    which = f"attempt {best.attempt}" if best.attempt else "the baseline"
    return refuse(
        "R8",
        f"the verifier changed: attempt {attempt} was measured with verifier {ours[:12]}, "
        f"the best ({which}) with {theirs[:12]}; a verdict never compares the two",
        f"the best's measurement was made by another verifier ({theirs[:12]})",
        "re-measure the best with the verifier as it stands "
        f"(`{Step('abandon', state.op, attempt=attempt, reason=TEXT)}`, then "
        f"`{Step('candidate', state.op, config=best.config, prior=remeasure.VERIFIER_PRIOR)}` "
        f"and `{Step('measure', state.op, attempt=Fill('ATTEMPT'))}`), then measure this change "
        "again; or restore the verifier the best was measured with (SPEC.md's `verifier` and "
        "the files it names)",
    )


def _carries_best(state: State, attempt: Attempt, measured: AttemptMeasured, best: Best) -> bool:
    """True for a correct re-measure of the best's config (`--prior remeasure:device`) on
    another device than the best's (issue 29), or (`--prior remeasure:verifier`) by the
    declared verifier under another digest than the best's, or of a best it never measured
    (issue 27)."""
    if _failure_of(measured) is not None:
        return False
    if attempt.prior == remeasure.DEVICE_PRIOR:
        moved = not devices.same_kind(measured.device, best.measurement.device)
    elif attempt.prior == remeasure.VERIFIER_PRIOR:
        moved = measured.origin.level == "measured" and (
            best.measurement.verifier_digest != measured.origin.verifier_digest
            or best.measurement.origin_level != "measured"
        )
    else:
        return False
    return moved and measured_key(state, attempt.config) == measured_key(state, best.config)


def _device_refusal(
    state: State, attempt_id: str, measured: AttemptMeasured, best: Best
) -> Refusal | None:
    """Refuse a measurement made on another device than the best's: a verdict never compares
    two run modes, parts, CANN or driver versions, nor a known device with an unknown (R8)."""
    if devices.same_kind(measured.device, best.measurement.device):
        return None
    which = f"attempt {best.attempt}" if best.attempt else "the baseline"
    here, there = devices.label(measured.device), devices.label(best.measurement.device)
    differ = "; ".join(devices.differences(measured.device, best.measurement.device))
    return refuse(
        "R8",
        "a verdict never compares measurements of two devices",
        f"attempt {attempt_id} was measured on {here}, the best it would be compared with "
        f"({which}) on {there} ({differ})",
        f"measure attempt {attempt_id} on {there} (nothing was written, it stays pending: "
        f"`{Step('measure', state.op, attempt=attempt_id)}` there; the autopilot's `--devices` "
        f"pins the verifier to an NPU), or carry the campaign to {here}: re-measure the best "
        f"there first (`{Step('abandon', state.op, attempt=attempt_id, reason=TEXT)}`, then "
        f"`{Step('candidate', state.op, config=best.config, prior=remeasure.DEVICE_PRIOR)}` and "
        f"`{Step('measure', state.op, attempt=Fill('ATTEMPT'))}` on {here}), then measure this "
        "change again",
    )


def _rests_on_reported(state: State, measured: AttemptMeasured) -> str | None:
    """What a decision would rest on that was only reported, under require_measured (R11)."""
    if not requires_measured(state):
        return None
    if measured.origin.level == "reported":
        return f"attempt {measured.attempt}'s times were reported, not measured"
    best = state.best
    if best is not None and best.measurement.origin_level == "reported":
        which = f"attempt {best.attempt}" if best.attempt else "the baseline"
        return f"the best it is compared with ({which}) was reported, not measured"
    return None


def decide_fail(state: State, command: Fail) -> Result:
    """Record that the pending attempt failed; its verdict is rollback (R7, R8)."""
    attempt = pending_attempt(state, command.attempt)
    if isinstance(attempt, Refusal):
        return attempt
    if command.category not in get_args(Failure):
        raise BadInput(
            f"unknown failure category {command.category!r}",
            hint=f"one of {', '.join(get_args(Failure))}",
        )
    failed = build(
        AttemptFailed,
        "failure",
        attempt=attempt.id,
        category=command.category,
        detail=command.detail,
        origin=command.origin,
    )
    spent = budget_stop(state, effective_policy(state), command.origin)
    return accept(failed) if spent is None else accept(failed, spent)


def decide_abandon(state: State, command: Abandon) -> Result:
    """Give up the pending attempt without a result (R6)."""
    attempt = pending_attempt(state, command.attempt)
    if isinstance(attempt, Refusal):
        return attempt
    reason = nonempty(command.reason, "the reason to abandon")
    return accept(AttemptAbandoned(attempt=attempt.id, reason=reason))
