"""The values of priors (R7): a prior, a config failed elsewhere, a candidate, a filtered one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from attrs import frozen

if TYPE_CHECKING:  # learned.py reads candidates' distances, which import this module
    from ledger.priors.learned import Learned

PriorKind = Literal["ledger", "source", "builtin"]
KINDS: tuple[PriorKind, ...] = ("ledger", "source", "builtin")


@frozen
class Prior:
    """Values for some config keys, where they come from, and how much they are trusted."""

    values: dict[str, Any]
    kind: PriorKind
    provenance: str  # one line, usable as `candidate --prior`
    weight: float  # in [0, 1]
    reasons: tuple[str, ...] = ()


@frozen
class FailedConfig:
    """A config that failed in another op: never proposed for a similar op without saying so."""

    values: dict[str, Any]
    op: str
    attempt: str
    failure: str
    similarity: float


@frozen
class Candidate:
    """A full config to measure, its provenance, score and the reasons behind them."""

    config: dict[str, Any]
    prior: str
    score: float
    reasons: tuple[str, ...]
    kinds: tuple[PriorKind, ...]
    learned: Learned | None = None  # what this op's own measurements say of it

    def left_out(
        self, reason: str, rule: str | None = None, learned: Learned | None = None
    ) -> Filtered:
        """This candidate filtered, and why."""
        return Filtered(self.config, self.prior, reason, rule, learned)


@frozen
class Filtered:
    """A candidate left out, and why (R3, R9, an invalid value, a failure elsewhere, measured
    slower or failed in this op)."""

    config: dict[str, Any]
    prior: str
    reason: str
    rule: str | None = None
    learned: Learned | None = None  # set when this op's own measurements left it out
