"""R7 Alternates: the best runner-up candidates of the latest point, kept and shown."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attrs import define, field

from ledger.domain.state import Attempt, State
from ledger.domain.tail import added_since
from ledger.schema.shared_methods import SharedRepr
from stages.binding import best_impl_digest, kernel_of
from stages.policy import effective_policy, policy_value

_KEY = "candidates"


@define(repr=False)
class _Candidates(SharedRepr):
    """Every candidate attempt's id, by its (stage, point), and the latest one: an index
    extended with the attempts started since it was last used. An attempt's kind, stage and
    point are fixed when it starts, and attempts are only ever added, so the index never goes
    stale; what does change (status, verdict, measurement, the best) is read fresh from
    `state.attempts` at each use. Ids, not attempts: the index is pickled in the snapshot's
    header, apart from the attempts (ledger/shell/state_snapshot.py), where attempts would be
    copies that the tail's fold never updates, and would be unpickled whole."""

    seen: int = 0
    latest: tuple[str, str | None] | None = None  # the latest candidate's (stage, point)
    by_point: dict[tuple[str, str | None], list[str]] = field(factory=dict)

    def extend(self, state: State) -> None:
        for attempt in added_since(state.attempts, self.seen):
            if attempt.kind == "candidate":
                self.latest = (attempt.stage, attempt.point)
                self.by_point.setdefault(self.latest, []).append(attempt.id)
        self.seen = len(state.attempts)


def _candidates(state: State) -> _Candidates:
    kept = state.derived.get(_KEY)
    if not isinstance(kept, _Candidates):
        kept = _Candidates()
        state.derived[_KEY] = kept
    kept.extend(state)
    return kept


def alternate_candidates(state: State, policy: Mapping[str, Any]) -> list[Attempt]:
    """The runner-up candidates (policy `alternates`) of the latest point with candidates (R7).

    Valid candidates only (failed ones are never compared), measured with the best's kernel
    (a config timed on another kernel says nothing about it: issue 28.7), fastest first, the
    best excluded. Costs O(the latest point's candidates), however long the ledger.
    """
    keep = int(policy_value(policy, "alternates"))
    index = _candidates(state)
    latest = index.latest
    if latest is None or keep <= 0:
        return []
    best = state.best.attempt if state.best else None
    kernel = best_impl_digest(state)
    valid = [
        a
        for a in map(state.attempts.__getitem__, index.by_point[latest])
        if a.id != best
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
