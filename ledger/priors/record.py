"""How the priors' candidates fared in this op: measured, adopted, no gain, rolled back, failed.

A prior candidate is an attempt of kind `candidate` (R7), other than a re-measure of the best
(`--prior remeasure:<attempt>`, which measures a config again rather than proposing one). Its
verdict sorts it: adopt or target-reached, no-gain, rollback (slower), or a failure (of any
category, by `fail` or by the verdict: accuracy, layout). Pure.
"""

from __future__ import annotations

import attrs
from attrs import frozen

from ledger.domain.state import State
from ledger.schema.vocabulary import ADOPTED

REMEASURE_PREFIX = "remeasure:"


@frozen
class TrackRecord:
    """The outcomes of this op's prior candidates so far."""

    adopted: int = 0
    no_gain: int = 0
    rolled_back: int = 0
    failed: int = 0
    unfinished: int = 0  # pending or abandoned: not measured

    @property
    def measured(self) -> int:
        """Candidates that have an outcome."""
        return self.adopted + self.no_gain + self.rolled_back + self.failed

    @property
    def kept_share(self) -> float | None:
        """The share adopted or no gain (not rolled back, not failed); None before any."""
        return (self.adopted + self.no_gain) / self.measured if self.measured else None

    def text(self) -> str:
        """ "prior candidates: N measured, A adopted, G no-gain, R rolled back, F failed"."""
        share = self.kept_share
        kept = f" ({share:.0%} adopted or no-gain)" if share is not None else ""
        return (
            f"prior candidates: {self.measured} measured, {self.adopted} adopted, "
            f"{self.no_gain} no-gain, {self.rolled_back} rolled back, {self.failed} failed{kept}"
        )

    def as_json(self) -> dict[str, int | float | None]:
        """The counts and the share, as plain JSON."""
        share = self.kept_share
        return {
            **attrs.asdict(self),
            "measured": self.measured,
            "kept_share": round(share, 4) if share is not None else None,
        }


def track_record(state: State) -> TrackRecord:
    """The outcomes of the op's prior candidates (re-measures left out)."""
    counts = {"adopted": 0, "no_gain": 0, "rolled_back": 0, "failed": 0, "unfinished": 0}
    for attempt in state.attempts.values():
        if attempt.kind != "candidate" or (attempt.prior or "").startswith(REMEASURE_PREFIX):
            continue
        if attempt.status == "failed" or attempt.failure is not None:
            counts["failed"] += 1
        elif attempt.status != "verified":
            counts["unfinished"] += 1
        elif attempt.verdict in ADOPTED:
            counts["adopted"] += 1
        elif attempt.verdict == "no-gain":
            counts["no_gain"] += 1
        else:
            counts["rolled_back"] += 1
    return TrackRecord(**counts)
