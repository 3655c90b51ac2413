"""Priors (R7 candidate phase): rank about ten diverse full configs, each with its provenance.

The seed's constrained search starts every optimization point from "about 10 initial
candidates" chosen from priors: production kernels, other ops' ledgers, typical values. This
module is the pure core: priors (values for some config keys, where they come from, how much
they are trusted) and the replayed state go in; ranked candidates come out, with every
candidate that was left out and why. Gathering priors lives in ledger/priors/sources.py and
knowledge.py, the file reading in ledger/shell/priors_load.py, the command in
ledger/cli/priors.py.

The steps, one module each: which keys (focus.py), candidates built from priors and screened
(candidates.py), a diverse pick by maximal marginal relevance (diversity.py); this module
counts, proposes and lists the picks by score.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from attrs import frozen

from ledger.domain.state import State
from ledger.errors import BadInput
from ledger.priors.candidates import build_candidates, screen
from ledger.priors.diversity import select
from ledger.priors.focus import Focus, applicable_keys
from ledger.priors.prior import Candidate, FailedConfig, Filtered, Prior
from ledger.schema.shared_methods import SharedValue
from stages.policy import effective_policy
from stages.search import candidate_blocker

DEFAULT_COUNT = 10  # the seed's "about 10 initial candidates", clamped to the policy's range


@frozen(repr=False, eq=False)
class Proposal(SharedValue):
    """The ranked candidates for the current point, what was left out, and notes."""

    op: str | None
    focus: Focus
    keys: tuple[str, ...]  # the focus keys that candidates may change
    count: int  # how many were asked for
    candidates: tuple[Candidate, ...]
    filtered: tuple[Filtered, ...]
    unselected: tuple[Candidate, ...] = ()  # eligible but not picked
    notes: tuple[str, ...] = ()


def candidate_count(state: State, requested: int | None) -> tuple[int, list[str]]:
    """How many candidates to propose: about 10 within the policy's range, less those the open
    point already started; `requested` overrides up to candidates_max (R7)."""
    policy = effective_policy(state)
    low, high = int(policy["candidates_min"]), int(policy["candidates_max"])
    point = state.points.get(state.open_point) if state.open_point else None
    already = point.candidates if point is not None else 0
    if requested is not None:
        if not 1 <= requested <= high:
            raise BadInput(
                f"--count must be within [1, {high}] (policy candidates_max), got {requested}"
            )
        return requested, []
    wanted = min(max(DEFAULT_COUNT, low), high)
    count = max(wanted - already, 0)
    notes = []
    if already:
        notes.append(
            f"point {state.open_point} has {already} candidate(s) already: "
            f"{count} more make about {wanted} (policy {low}-{high})"
        )
    return count, notes


def propose(
    state: State,
    focus: Focus,
    priors: Iterable[Prior],
    failures: Sequence[FailedConfig] = (),
    *,
    count: int | None = None,
    notes: Sequence[str] = (),
) -> Proposal:
    """Ranked, diverse full configs for the focus keys, and every candidate left out (R7)."""
    best = state.best
    if best is None:
        raise BadInput(
            "no best config yet: candidates start from the best config",
            hint="write the target sheet first (tune-ledger target ... --config)",
        )
    keys, key_notes = applicable_keys(focus, best.config)
    wanted, count_notes = candidate_count(state, count)
    built, unrelated = build_candidates(best.config, keys, priors)
    pool: list[Candidate] = []
    filtered: list[Filtered] = []
    for candidate in built:
        screened = screen(state, candidate, keys, failures)
        if isinstance(screened, Filtered):
            filtered.append(screened)
        else:
            pool.append(screened)
    # MMR decides which candidates make the list; the list itself is ranked by score.
    chosen = sorted(select(pool, wanted, keys), key=lambda c: -c.score)
    unselected = [c for c in pool if c not in chosen]
    all_notes = [*notes, *key_notes, *count_notes]
    if unrelated:
        all_notes.append(
            f"{unrelated} prior(s) set none of the keys "
            f"{', '.join(keys) or '(none)'} and were not used"
        )
    blocker = candidate_blocker(state)
    if blocker is not None:
        all_notes.append(
            f"{blocker.rule}: `candidate` would be refused now: {blocker.message} "
            f"({blocker.next_step})"
        )
    if len(chosen) < wanted:
        all_notes.append(
            f"{len(chosen)} candidate(s) for {wanted} wanted: add priors "
            "(--from-source DIR, --ledgers DIR) or mutate the best config"
        )
    return Proposal(
        op=state.op,
        focus=focus,
        keys=keys,
        count=wanted,
        candidates=tuple(chosen),
        filtered=tuple(filtered),
        unselected=tuple(unselected),
        notes=tuple(all_notes),
    )


def proposal_json(proposal: Proposal) -> dict[str, Any]:
    """The proposal as plain JSON: candidates {config, prior, score, reasons}, filtered, notes."""
    return {
        "op": proposal.op,
        "stage": proposal.focus.stage,
        "point": proposal.focus.point,
        "keys": list(proposal.keys),
        "keys_basis": proposal.focus.basis,
        "count": proposal.count,
        "candidates": [
            {
                "rank": rank,
                "config": c.config,
                "prior": c.prior,
                "score": round(c.score, 4),
                "reasons": list(c.reasons),
                "sources": list(c.kinds),
            }
            for rank, c in enumerate(proposal.candidates, start=1)
        ],
        "filtered": [
            {"config": f.config, "prior": f.prior, "reason": f.reason, "rule": f.rule}
            for f in proposal.filtered
        ],
        "unselected": len(proposal.unselected),
        "notes": list(proposal.notes),
    }
