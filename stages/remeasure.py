"""R8 "re-measure both": after a merge left two adopted bests and a person chose to measure
both configs again (`resolve --resolution remeasure`, DESIGN §8), the attempts that do it.

Each competing best's config is started again as a candidate of its own stage and point
(`candidate OP --config JSON --prior remeasure:<attempt>`), past the merge gate and R9 (the
config was measured, on another branch's terms: measuring it again is the point), then
verified like any attempt against the best both branches last shared. The second one is
judged against the best after the first, so the regression loop (R8) picks the faster with
fresh measurements; replay closes the conflict when both have a verdict.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ledger.domain.keys import knob_defaults, measured_key
from ledger.domain.state import Attempt, State
from ledger.errors import BadInput
from ledger.schema.events import AttemptStarted, BestRemeasured
from stages.binding import best_impl_digest, binding_problem
from stages.commands import ProposeCandidate, RemeasureBest
from stages.outcome import Result, accept, build, nonempty, refuse
from stages.search import pending_blocker

if TYPE_CHECKING:
    from stages.verdict import Comparison

_MEASURE = (
    "`tune-ledger measure {op}` (or `tune-ledger verify {op} {attempt} --output "
    "NAME=true|false --layout-exit N --time TIME`)"
)


def due(state: State) -> list[Attempt]:
    """The competing bests whose config still waits to be measured again."""
    return [state.attempts[best] for best, again in state.remeasure.items() if again is None]


def target_of(state: State, config: Any) -> Attempt | None:
    """The competing best whose config `config` measures again, if it is due."""
    if not state.remeasure or not isinstance(config, dict):
        return None
    try:
        key = measured_key(state, config)
    except (TypeError, ValueError):
        return None  # not plain JSON: the ordinary candidate decider says why
    return next((a for a in due(state) if measured_key(state, a.config) == key), None)


def decide_remeasure(state: State, command: ProposeCandidate) -> Result:
    """Start measuring a competing best's config again, in its own stage and point (R6, R8)."""
    best = target_of(state, command.config)
    if best is None:  # the caller checked; kept for a direct call
        raise ValueError("no competing best has this config")
    blocker = pending_blocker(state)
    if blocker is not None:
        return blocker
    prior = nonempty(command.prior, "the candidate's prior (its provenance)")
    return accept(
        build(
            AttemptStarted,
            "candidate",
            kind="candidate",
            stage=best.stage,
            point=best.point,
            config=best.config,
            prior=prior,
            retry_override=None,
        )
    )


def next_step(state: State) -> str | None:
    """The commands an agent told to "re-measure both" runs next; None when nothing is due."""
    if not state.remeasure:
        return None
    op = state.op
    pending = state.pending
    if pending is not None and pending in state.remeasure.values():
        return f"measure attempt {pending}: " + _MEASURE.format(op=op, attempt=pending)
    steps = [
        f"re-measure attempt {best.id}'s config: `tune-ledger candidate {op} --config "
        f"'{json.dumps(best.config, sort_keys=True)}' --prior remeasure:{best.id}`, then "
        + _MEASURE.format(op=op, attempt="ATTEMPT")
        for best in due(state)
    ]
    if pending is not None:
        steps.insert(0, f"first finish attempt {pending} (verify, fail or abandon)")
    return "; then ".join(steps) if steps else None


# --- R8 "one verifier per verdict": the best measured again (issue 27) ------------------------


def decide_remeasure_best(state: State, command: RemeasureBest) -> Result:
    """Record the best's config measured again by the declared verifier as it stands, so
    verdicts go on comparing measurements of one verifier (R8); only a bound measurement of
    the best's own config and kernel counts (R11)."""
    best = state.best
    if best is None:
        raise BadInput(
            "no best to re-measure yet",
            hint=f"write the target sheet: tune-ledger target {state.op}",
        )
    which = f"attempt {best.attempt}" if best.attempt else "the baseline"
    if command.origin.level != "measured":
        return refuse(
            "R11",
            f"the best ({which}) is re-measured only by the op's declared verifier, bound to "
            f"what it ran (this result is {command.origin.level})",
            f"provenance {command.origin.level}",
            f"`tune-ledger measure {state.op} --best` runs SPEC.md's verifier on the best's config",
        )
    bound = command.binding
    problem = binding_problem(
        what=f"the best ({which})",
        expected_config=best.config,
        expected_digest=best_impl_digest(state),
        measured_config=bound.config if bound else None,
        measured_digest=bound.impl_digest if bound else None,
        defaults=knob_defaults(state),
    )
    if problem:
        raise BadInput(
            f"{problem}; nothing was written",
            rule="R11",
            hint="fix the verifier so that it runs the config and kernel it is given",
        )
    previous = best.measurement
    if previous.origin_level == "measured" and previous.verifier_digest in (
        None,
        command.origin.verifier_digest,
    ):
        return refuse(
            "R8",
            f"the best ({which}) was already measured by this verifier",
            f"verifier {str(command.origin.verifier_digest)[:12]} measured it",
            f"measure the pending attempt: `tune-ledger measure {state.op}`",
        )
    return accept(
        build(
            BestRemeasured,
            "the best's measurement",
            attempt=best.attempt,
            times_us=command.times_us,
            origin=command.origin,
            util_pct=command.util_pct,
            bubble_pct=command.bubble_pct,
            metrics=command.metrics,
            binding=command.binding,
        )
    )


def recheck(
    recorded_us: Sequence[float],
    again_us: Sequence[float],
    policy: Mapping[str, Any],
    attempt_id: str,
) -> Comparison:
    """Whether samples measured again agree with the recorded ones (`audit --remeasure`):
    the regression loop's own comparison (R8) of the new samples against the recorded, with
    the op's noise policy and the attempt's seed. "no-gain" means within the noise band; any
    other verdict, faster or slower, is a disagreement."""
    from stages.verdict import compute_verdict, seed_of  # here: views import this module

    return compute_verdict(recorded_us, again_us, 0.0, policy, seed_of(attempt_id))


def agrees(comparison: Comparison) -> bool:
    """True when a re-measurement is within the noise band of the recorded one."""
    return comparison.verdict == "no-gain"
