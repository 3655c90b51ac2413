"""R7 Alternates: the best runner-up candidates of the latest point, kept and shown."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ledger.domain.state import Attempt, State
from stages.binding import best_impl_digest, kernel_of
from stages.policy import effective_policy, policy_value


def alternate_candidates(state: State, policy: Mapping[str, Any]) -> list[Attempt]:
    """The runner-up candidates (policy `alternates`) of the latest point with candidates (R7).

    Valid candidates only (failed ones are never compared), measured with the best's kernel
    (a config timed on another kernel says nothing about it: issue 28.7), fastest first, the
    best excluded. Costs O(the latest point's candidates), however long the ledger.
    """
    keep = int(policy_value(policy, "alternates"))
    candidates = [a for a in state.attempts.values() if a.kind == "candidate"]
    if not candidates or keep <= 0:
        return []
    latest = (candidates[-1].stage, candidates[-1].point)
    best = state.best.attempt if state.best else None
    kernel = best_impl_digest(state)
    valid = [
        a
        for a in candidates
        if (a.stage, a.point) == latest
        and a.id != best
        and a.status == "verified"
        and a.failure is None
        and a.measurement is not None
        and kernel_of(state, a) == kernel
    ]
    valid.sort(key=lambda a: (a.measurement.median_us if a.measurement else 0.0, a.seq))
    return valid[:keep]


def alternates(state: State) -> list[str]:
    """Ids of the alternate candidates under the op's recorded policy (R7)."""
    return [a.id for a in alternate_candidates(state, effective_policy(state))]
