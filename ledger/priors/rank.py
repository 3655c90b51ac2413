"""Priors (R7 candidate phase): rank about ten diverse full configs, each with its provenance.

The seed's constrained search starts every optimization point from "about 10 initial
candidates" chosen from priors: production kernels, other ops' ledgers, typical values. This
module is the pure core: priors (values for some config keys, where they come from, how much
they are trusted) and the replayed state go in; ranked candidates come out, with every
candidate that was left out and why. The steps it calls, one module each, are listed in
ledger/priors/__init__.py: measured slower or failed this way drops a candidate, measured
faster ranks it first, and a diverse pick is made within each of those ranks; this module
counts, proposes and lists the picks by rank, then score.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import attrs
from attrs import frozen

from ledger.domain.hints import Step
from ledger.domain.state import State
from ledger.errors import BadInput
from ledger.priors.candidates import build_candidates, screen
from ledger.priors.diversity import select
from ledger.priors.focus import Focus, applicable_keys
from ledger.priors.learned import RANK_OF_CALL, Judge, Learned, OpMeasurements, op_measurements
from ledger.priors.prior import Candidate, FailedConfig, Filtered, Prior
from ledger.priors.record import TrackRecord, track_record
from stages.policy import effective_policy
from stages.search import candidate_blocker

DEFAULT_COUNT = 10  # the seed's "about 10 initial candidates", clamped to the policy's range


@frozen
class Proposal:
    """The ranked candidates for the current point, what was left out, and notes."""

    op: str | None
    focus: Focus
    keys: tuple[str, ...]  # the focus keys that candidates may change
    count: int  # how many were asked for
    candidates: tuple[Candidate, ...]
    filtered: tuple[Filtered, ...]
    unselected: tuple[Candidate, ...] = ()  # eligible but not picked
    notes: tuple[str, ...] = ()
    record: TrackRecord = attrs.field(factory=TrackRecord)  # this op's prior candidates so far


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
            hint=f"write the target sheet first ({Step('target', state.op, from_spec=True)})",
        )
    keys, key_notes = applicable_keys(focus, best.config)
    wanted, count_notes = candidate_count(state, count)
    built, unrelated = build_candidates(best.config, keys, priors)
    measurements = op_measurements(state)
    judge = Judge(measurements)
    pool: list[Candidate] = []
    filtered: list[Filtered] = []
    for candidate in built:
        screened = screen(state, candidate, keys, failures)
        if isinstance(screened, Candidate):
            screened = _judged(screened, judge)
        if isinstance(screened, Filtered):
            filtered.append(screened)
        else:
            pool.append(screened)
    chosen = _pick(pool, wanted, keys)
    unselected = [c for c in pool if c not in chosen]
    all_notes = [*notes, *key_notes, *count_notes, *_learning_notes(measurements, filtered, pool)]
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
        record=track_record(state),
    )


def _judged(candidate: Candidate, judge: Judge) -> Candidate | Filtered:
    """The candidate with what this op measured of its way, or left out when that way
    measured slower or failed."""
    learned = judge.judge(candidate.config)
    if learned.dropped:
        return candidate.left_out(learned.reason(), learned=learned)
    reasons = candidate.reasons
    if learned.call != "untested":
        reasons = (*reasons, learned.reason())
    return attrs.evolve(candidate, reasons=reasons, learned=learned)


def _rank_of(candidate: Candidate) -> int:
    learned = candidate.learned
    return RANK_OF_CALL[learned.call if learned is not None else "untested"]


def _pick(pool: Sequence[Candidate], wanted: int, keys: Sequence[str]) -> list[Candidate]:
    """The candidates to propose: measured faster first, then untested, no gain, mixed; MMR
    decides which make the list within each rank, and the list is ranked by rank, then score."""
    chosen: list[Candidate] = []
    for rank in sorted({_rank_of(c) for c in pool}):
        members = [c for c in pool if _rank_of(c) == rank]
        chosen.extend(select(members, wanted - len(chosen), keys))
    return sorted(chosen, key=lambda c: (_rank_of(c), -c.score))


def _learning_notes(
    measurements: OpMeasurements, filtered: Sequence[Filtered], pool: Sequence[Candidate]
) -> list[str]:
    """What the op's own measurements changed in the ranking, in one or two notes."""
    notes = []
    dropped = sum(1 for f in filtered if f.learned is not None)
    first = sum(1 for c in pool if c.learned is not None and c.learned.call == "faster")
    if dropped or first:
        notes.append(
            f"learned from this op's {len(measurements.measured)} measured config(s): "
            f"{dropped} candidate(s) left out as measured slower or failed that way, "
            f"{first} ranked first as measured faster that way"
        )
    if measurements.other_kernel:
        notes.append(
            f"{measurements.other_kernel} measured config(s) ran another kernel than the "
            "best's and are not learned from"
        )
    return notes


def learned_json(learned: Learned | None) -> dict[str, Any] | None:
    """What the op's measurements say of a candidate, as plain JSON."""
    if learned is None:
        return None
    return {
        "call": learned.call,
        "moves": [_move_json(m) for m in learned.moves],
        "counts": dict(sorted(learned.counts.items())),
        "findings": [
            {
                "outcome": f.outcome,
                "ratio": round(f.ratio, 4) if f.ratio is not None else None,
                "start": f.start.attempt,
                "end": f.end.attempt,
                "moves": [_move_json(m) for m in f.moves],
                "text": f.text(),
            }
            for f in learned.findings
        ],
    }


def _move_json(move: Any) -> dict[str, Any]:
    return {"key": move.key, "where": move.where, "direction": move.direction, "to": move.value}


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
                "learned": learned_json(c.learned),
            }
            for rank, c in enumerate(proposal.candidates, start=1)
        ],
        "filtered": [
            {**attrs.asdict(f, recurse=False), "learned": learned_json(f.learned)}
            for f in proposal.filtered
        ],
        "unselected": len(proposal.unselected),
        "notes": list(proposal.notes),
        "record": proposal.record.as_json(),
        "record_text": proposal.record.text(),
    }
