"""Priors (R7 candidate phase): rank about ten diverse full configs, each with its provenance.

The seed's constrained search starts every optimization point from "about 10 initial
candidates" chosen from priors: production kernels, other ops' ledgers, typical values. This
module is the pure core: priors (values for some config keys, where they come from, how much
they are trusted) and the replayed state go in; ranked candidates come out, with every
candidate that was left out and why. Gathering priors lives in ledger/priors/sources.py, the
file reading in ledger/shell/priors_load.py, the command in ledger/cli/priors.py.

A candidate is the current best config with one prior's values applied to the keys the
current point tunes. Candidates that were already measured (R9), lie beyond an unrelaxed tile
limit (R3), or failed in a very similar op are filtered out with the reason. The rest are
picked by maximal marginal relevance: each next pick trades its score against its closeness
to the picks before it, and a near copy of a pick waits until nothing else is left, so ten
candidates are never ten variants of one value. The picks are then listed by score.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from attrs import frozen

from ledger.domain.replay import config_key
from ledger.domain.state import State
from ledger.errors import BadInput
from ledger.log import codec
from ledger.schema.events import CONFIG_STAGES
from stages.policy import effective_policy
from stages.retry import outcome_of
from stages.search import candidate_blocker
from stages.target import limit_refusal, validate_config

PriorKind = Literal["ledger", "source", "builtin"]
KINDS: tuple[PriorKind, ...] = ("ledger", "source", "builtin")

# The config keys each stage tunes (tune-frontend, tune-swimlane, tune-incore).
STAGE_KEYS: Mapping[str, tuple[str, ...]] = {
    "frontend": ("vec_tile_shape", "cube_tile_shape", "unroll_list"),
    "swimlane": ("stitch_function_max_num", "stitch_function_num_initial", "device_sched_mode"),
    "incore": (
        "vec_nbuffer_setting",
        "cube_nbuffer_setting",
        "cube_l1_reuse_setting",
        "sg_set_scope",
    ),
}
# Words in a point's name that say which keys it tunes ("F-vec-tile", "stitch", "S3_sched").
POINT_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("vec_tile", ("vec_tile_shape",)),
    ("cube_tile", ("cube_tile_shape",)),
    ("unroll", ("unroll_list",)),
    ("stitch", ("stitch_function_max_num", "stitch_function_num_initial")),
    ("sched", ("device_sched_mode",)),
    ("nbuffer", ("vec_nbuffer_setting", "cube_nbuffer_setting")),
    ("l1_reuse", ("cube_l1_reuse_setting",)),
    ("sg_set_scope", ("sg_set_scope",)),
)
KNOWN_KEYS = frozenset(k for keys in STAGE_KEYS.values() for k in keys)
# Framework options every jitted kernel takes (runtime_options / pass_options), so a prior may
# add them to a best config that does not set them yet; tile and loop keys live in the
# kernel's own code and are proposed only where the best config already has them. Cube
# options only make sense for a kernel with cube tiles.
OPTION_KEYS = frozenset(
    {
        "stitch_function_max_num",
        "stitch_function_num_initial",
        "device_sched_mode",
        "vec_nbuffer_setting",
        "sg_set_scope",
    }
)
CUBE_OPTION_KEYS = frozenset({"cube_nbuffer_setting", "cube_l1_reuse_setting"})

DEFAULT_COUNT = 10  # the seed's "about 10 initial candidates", clamped to the policy's range
MMR_LAMBDA = 0.7  # weight of a candidate's score against its closeness to earlier picks
KIND_PENALTY = 0.1  # nudge towards sources not yet picked
# Value distance below which two configs are variants of one value (about 1.4x apart on every
# axis): such a near copy of an earlier pick waits until no other candidate is left.
NEAR_COPY = 0.15
FAILED_EXCLUDE_SIMILARITY = 0.8  # failed in an op at least this alike: left out, not warned
PROVENANCE_LIMIT = 240  # characters of --prior text; the full story is in the reasons


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
class Focus:
    """Which config keys the candidates change, for which stage and point, and why."""

    stage: str | None
    point: str | None
    keys: tuple[str, ...]
    explicit: tuple[str, ...] = ()  # named by --keys or the point: added even if absent
    basis: str = ""


@frozen
class Candidate:
    """A full config to measure, its provenance, score and the reasons behind them."""

    config: dict[str, Any]
    prior: str
    score: float
    reasons: tuple[str, ...]
    kinds: tuple[PriorKind, ...]


@frozen
class Filtered:
    """A candidate left out, and why (R3, R9, an invalid value, a failure elsewhere)."""

    config: dict[str, Any]
    prior: str
    reason: str
    rule: str | None = None


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


# --- which keys ------------------------------------------------------------------------------


def keys_of_point(point: str) -> tuple[str, ...]:
    """The config keys a point's name speaks of: the name itself if it is a key, else words."""
    if point in KNOWN_KEYS:
        return (point,)
    normalized = point.lower().replace("-", "_").replace(" ", "_")
    keys: list[str] = []
    for word, mapped in POINT_WORDS:
        if word in normalized:
            keys.extend(k for k in mapped if k not in keys)
    return tuple(keys)


def resolve_focus(
    state: State, *, point: str | None = None, stage: str | None = None, keys: Sequence[str] = ()
) -> Focus:
    """The keys to propose values for: --keys, else the point's name, else its stage (R7)."""
    point = point if point is not None else state.open_point
    known = state.points.get(point) if point is not None else None
    stage = stage or (known.stage if known is not None else None) or state.stage
    if keys:
        chosen = tuple(dict.fromkeys(keys))
        return Focus(stage, point, chosen, explicit=chosen, basis="named by --keys")
    best = state.best.config if state.best is not None else {}
    if point is not None and (point in KNOWN_KEYS or point in best):
        return Focus(
            stage, point, (point,), explicit=(point,), basis=f"point {point} is a config key"
        )
    named = keys_of_point(point) if point is not None else ()
    if named:
        return Focus(stage, point, named, basis=f"the name of point {point}")
    if stage is not None and stage in STAGE_KEYS:
        return Focus(stage, point, STAGE_KEYS[stage], basis=f"the keys of the {stage} stage")
    where = f"stage {stage}" if stage else "no current stage"
    raise BadInput(
        f"no config keys to propose values for ({where}; candidates belong to "
        f"stages {', '.join(CONFIG_STAGES)})",
        hint="open a point of stages 1-3, or give --point NAME, --stage STAGE or --keys k1,k2",
    )


def applicable_keys(focus: Focus, best: Mapping[str, Any]) -> tuple[tuple[str, ...], list[str]]:
    """The focus keys a candidate may set on the best config, and a note per key left out."""
    keys: list[str] = []
    notes: list[str] = []
    for key in focus.keys:
        if (
            key in focus.explicit
            or key in best
            or key in OPTION_KEYS
            or (key in CUBE_OPTION_KEYS and "cube_tile_shape" in best)
        ):
            keys.append(key)
        else:
            notes.append(
                f"{key}: not proposed, the best config does not set it (the kernel "
                f"may not take it); --keys {key} proposes it anyway"
            )
    return tuple(keys), notes


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


# --- distance between configs -------------------------------------------------------------------


def _numbers(value: Any) -> list[float] | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return [float(value)]
    if isinstance(value, list):
        flat: list[float] = []
        for item in value:
            numbers = _numbers(item)
            if numbers is None:
                return None
            flat.extend(numbers)
        return flat
    return None


def value_distance(a: Any, b: Any) -> float:
    """How far apart two values of one key are, in [0, 1]: 0 when equal; numbers (and lists of
    numbers of one length) by their largest |log2| ratio, 1 at 8x apart; anything else 1."""
    if _canon(a) == _canon(b):
        return 0.0
    x, y = _numbers(a), _numbers(b)
    if x is None or y is None or len(x) != len(y) or not x:
        return 1.0
    spread = max(
        abs(math.log2(1 + abs(p)) - math.log2(1 + abs(q))) for p, q in zip(x, y, strict=True)
    )
    return min(1.0, spread / 3.0)


def near_copies(a: Mapping[str, Any], b: Mapping[str, Any], keys: Iterable[str]) -> bool:
    """True when no key of `keys` differs by more than NEAR_COPY: variants of one value."""
    return all(value_distance(a.get(k), b.get(k)) < NEAR_COPY for k in keys)


def config_distance(a: Mapping[str, Any], b: Mapping[str, Any], keys: Iterable[str]) -> float:
    """The mean value distance over `keys` (the keys candidates change)."""
    chosen = list(keys)
    if not chosen:
        return 0.0 if config_key(a) == config_key(b) else 1.0
    return sum(value_distance(a.get(k), b.get(k)) for k in chosen) / len(chosen)


# --- building, filtering, selecting ------------------------------------------------------------


def _canon(value: Any) -> str:
    return codec.canonical_json(value)


def _changes(best: Mapping[str, Any], config: Mapping[str, Any], keys: Sequence[str]) -> str:
    changed = [
        f"{k} {_canon(best[k]) if k in best else '(unset)'} -> {_canon(config[k])}"
        for k in keys
        if k in config and (k not in best or _canon(best[k]) != _canon(config[k]))
    ]
    return "sets " + "; ".join(changed) if changed else "changes nothing"


def _shorten(text: str) -> str:
    return text if len(text) <= PROVENANCE_LIMIT else text[: PROVENANCE_LIMIT - 3] + "..."


def _merge(config: dict[str, Any], priors: list[Prior], change: str) -> Candidate:
    """One candidate from every prior that leads to the same config: agreement raises the
    score (noisy-or of the weights); the strongest prior names it."""
    ranked = sorted(priors, key=lambda p: (-p.weight, p.kind, p.provenance))
    miss = 1.0
    for prior in ranked:
        miss *= 1.0 - min(max(prior.weight, 0.0), 1.0)
    text = ranked[0].provenance
    if len(ranked) > 1:
        others = sorted({p.kind for p in ranked[1:]})
        text += f" (+{len(ranked) - 1} more: {', '.join(others)})"
    reasons = [change] + [
        p.provenance + (f" [{'; '.join(p.reasons)}]" if p.reasons else "") for p in ranked
    ]
    kinds = tuple(k for k in KINDS if any(p.kind == k for p in ranked))
    return Candidate(
        config=config, prior=_shorten(text), score=1.0 - miss, reasons=tuple(reasons), kinds=kinds
    )


def build_candidates(
    best: Mapping[str, Any], keys: Sequence[str], priors: Iterable[Prior]
) -> tuple[list[Candidate], int]:
    """Candidates from priors (identical configs merged) and how many priors set none of `keys`."""
    groups: dict[str, tuple[dict[str, Any], list[Prior]]] = {}
    unrelated = 0
    for prior in priors:
        values = {k: prior.values[k] for k in keys if k in prior.values}
        if not values:
            unrelated += 1
            continue
        config = {**best, **values}
        groups.setdefault(config_key(config), (config, []))[1].append(prior)
    built = [
        _merge(config, group, _changes(best, config, keys))
        for _, (config, group) in sorted(groups.items())
    ]
    return built, unrelated


def _matches(failed: FailedConfig, config: Mapping[str, Any], keys: Sequence[str]) -> bool:
    shared = [k for k in keys if k in failed.values]
    return bool(shared) and all(
        k in config and _canon(config[k]) == _canon(failed.values[k]) for k in shared
    )


def _rank_mismatch(best: Mapping[str, Any], config: Mapping[str, Any]) -> str | None:
    """Why a vec tile cannot fit the kernel: one axis per tensor axis, as in the best config."""
    tile, ours = config.get("vec_tile_shape"), best.get("vec_tile_shape")
    if isinstance(tile, list) and isinstance(ours, list) and len(tile) != len(ours):
        return (
            f"vec_tile_shape has {len(tile)} axes, the best config's has {len(ours)}: "
            "written for a tensor of another rank"
        )
    return None


def screen(
    state: State, candidate: Candidate, keys: Sequence[str], failures: Sequence[FailedConfig]
) -> Candidate | Filtered:
    """The candidate (with failure warnings) or why it is left out (invalid, another rank,
    R9, R3, failed in a very similar op)."""

    def out(reason: str, rule: str | None = None) -> Filtered:
        return Filtered(config=candidate.config, prior=candidate.prior, reason=reason, rule=rule)

    best = state.best.config if state.best is not None else {}

    try:
        config = validate_config(candidate.config, "the candidate config")
    except BadInput as e:
        return out(e.message)
    mismatch = _rank_mismatch(best, config)
    if mismatch is not None:
        return out(mismatch)
    earlier = state.measured_configs.get(config_key(config))
    if earlier is not None:
        name = "the baseline" if earlier == "baseline" else f"attempt {earlier}"
        return out(f"already measured by {name}: {outcome_of(state, earlier)}", "R9")
    cube_m = state.target.cube_m if state.target else None
    beyond = limit_refusal(state, config, "the candidate config", cube_m)
    if beyond is not None:
        return out(beyond.message, "R3")
    matched = sorted(
        (f for f in failures if _matches(f, config, keys)),
        key=lambda f: (-f.similarity, f.op, f.attempt),
    )
    if matched and matched[0].similarity >= FAILED_EXCLUDE_SIMILARITY:
        worst = matched[0]
        return out(
            f"failed ({worst.failure}) in {worst.op} attempt {worst.attempt}, an op "
            f"this alike (similarity {worst.similarity:.2f} >= "
            f"{FAILED_EXCLUDE_SIMILARITY})"
        )
    score = candidate.score
    warnings = []
    for failed in matched:
        score *= 1.0 - 0.5 * failed.similarity
        warnings.append(
            f"warning: failed ({failed.failure}) in {failed.op} attempt "
            f"{failed.attempt} (similarity {failed.similarity:.2f}); score lowered"
        )
    return Candidate(
        config=config,
        prior=candidate.prior,
        score=score,
        reasons=(*candidate.reasons, *warnings),
        kinds=candidate.kinds,
    )


def select(pool: Sequence[Candidate], count: int, keys: Sequence[str]) -> list[Candidate]:
    """Up to `count` candidates by maximal marginal relevance (near copies of a pick last), then
    every source kind in the pool represented when there is room; in the order of picking."""
    remaining = sorted(pool, key=lambda c: (-c.score, config_key(c.config)))
    chosen: list[Candidate] = []
    while remaining and len(chosen) < count:
        fresh = [
            c for c in remaining if not any(near_copies(c.config, p.config, keys) for p in chosen)
        ]
        # max keeps the first of equals, so ties fall back to score order.
        pick = max(fresh or remaining, key=lambda c: marginal_gain(c, chosen, keys))
        chosen.append(pick)
        remaining.remove(pick)
    return _cover_kinds(chosen, remaining)


def marginal_gain(candidate: Candidate, chosen: Sequence[Candidate], keys: Sequence[str]) -> float:
    """MMR: the candidate's score, less its closeness to the closest earlier pick and a nudge
    when its source kinds were picked already."""
    closest = max(
        (1.0 - config_distance(candidate.config, c.config, keys) for c in chosen), default=0.0
    )
    shared = sum(1 for c in chosen if set(c.kinds) & set(candidate.kinds))
    share = shared / len(chosen) if chosen else 0.0
    return MMR_LAMBDA * candidate.score - (1 - MMR_LAMBDA) * closest - KIND_PENALTY * share


def _cover_kinds(chosen: list[Candidate], remaining: list[Candidate]) -> list[Candidate]:
    """Swap late picks for the best candidate of each source kind not picked yet."""
    for kind in KINDS:
        if any(kind in c.kinds for c in chosen):
            continue
        offer = next((c for c in remaining if kind in c.kinds), None)
        if offer is None:
            continue
        for index in range(len(chosen) - 1, -1, -1):
            others = chosen[:index] + chosen[index + 1 :]
            if all(any(k in c.kinds for c in others) for k in chosen[index].kinds):
                chosen[index] = offer
                remaining.remove(offer)
                break
    return chosen


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
