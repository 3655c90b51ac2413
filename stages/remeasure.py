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

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ledger.domain.hints import Fill, Step
from ledger.domain.keys import measured_key
from ledger.domain.state import Attempt, State
from ledger.schema.events import AttemptStarted
from stages.outcome import Result, accept, build, nonempty, refuse
from stages.search import pending_blocker

if TYPE_CHECKING:
    from stages.commands import ProposeCandidate
    from stages.verdict import Comparison


def _measure(op: str | None, attempt: str) -> str:
    """How the re-measuring attempt is measured: by the ledger, or reported (R11)."""
    reported = Step("verify", op, attempt=attempt, output=[Fill("NAME=true|false")],
                    layout_exit=Fill("N"), time=[Fill("TIME")])  # fmt: skip
    return f"`{Step('measure', op, attempt=attempt)}` (or `{reported}`)"


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
    return _measure_again(best.stage, best.point, best.config, prior)


def _measure_again(stage: str, point: str | None, config: dict[str, Any], prior: str) -> Result:
    """A candidate measuring a config the campaign measured before (R8; no R9 override)."""
    return accept(
        build(
            AttemptStarted,
            "candidate",
            kind="candidate",
            stage=stage,
            point=point,
            config=config,
            prior=prior,
            retry_override=None,
        )
    )


# The prior of a candidate that measures the best's config again on another device (issue 29):
# a verdict never compares two devices (R8), so the best is first measured where tuning goes on.
DEVICE_PRIOR = "remeasure:device"
# Likewise after the op's declared verifier changed (issue 27): a verdict never compares
# measurements of two verifier digests (R8), so the best is first measured by the verifier as
# it stands, and that measurement is the best from here on.
VERIFIER_PRIOR = "remeasure:verifier"
BEST_PRIORS = (DEVICE_PRIOR, VERIFIER_PRIOR)


def is_device_remeasure(state: State, command: ProposeCandidate) -> bool:
    """True for `candidate --config BEST --prior remeasure:device` (or `remeasure:verifier`)
    with the best's config."""
    best = state.best
    if (command.prior or "").strip() not in BEST_PRIORS or best is None:
        return False
    try:
        return bool(measured_key(state, command.config) == measured_key(state, best.config))
    except (TypeError, ValueError):
        return False


def decide_device_remeasure(state: State, command: ProposeCandidate) -> Result:
    """Start measuring the best's config again, to carry the campaign to another device or
    verifier: its measurement becomes the best when it names another device than the best's,
    or was made by another verifier digest (R8)."""
    blocker = pending_blocker(state)
    if blocker is not None:
        return blocker
    stage = state.stage
    if stage is None or stage in state.exited:
        return refuse(
            "R4",
            "the best is measured again inside a stage",
            f"no stage is in progress ({'stage ' + stage + ' was exited' if stage else 'none'})",
            f"enter the next stage ({Step('stage enter', state.op, name=Fill('STAGE'))}), "
            "then re-measure",
        )
    best = state.best
    assert best is not None  # is_device_remeasure checked it
    return _measure_again(stage, None, best.config, (command.prior or "").strip())


def next_step(state: State) -> str | None:
    """The commands an agent told to "re-measure both" runs next; None when nothing is due."""
    if not state.remeasure:
        return None
    op = state.op
    pending = state.pending
    if pending is not None and pending in state.remeasure.values():
        return f"measure attempt {pending}: " + _measure(op, pending)
    steps = [
        f"re-measure attempt {best.id}'s config: "
        f"`{Step('candidate', op, config=best.config, prior=f'remeasure:{best.id}')}`, then "
        + _measure(op, Fill("ATTEMPT"))
        for best in due(state)
    ]
    if pending is not None:
        steps.insert(0, f"first finish attempt {pending} (verify, fail or abandon)")
    return "; then ".join(steps) if steps else None


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
