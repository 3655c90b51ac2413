"""Candidates from priors: one per distinct config (agreeing priors merged), then screened (R3, R9).

A candidate is the current best config with one prior's values applied to the keys the current
point tunes. Candidates that were already measured (R9), lie beyond an unrelaxed tile limit
(R3), do not fit the kernel or its P0 shape, fall outside the manifest's knob domains (R5),
change nothing once defaults are filled in (R6), or failed in a very similar op are filtered
out with the reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from ledger.domain.configs import config_key
from ledger.domain.keys import measured_key
from ledger.domain.state import State
from ledger.errors import BadInput
from ledger.log.codec import canonical_json
from ledger.priors import fit
from ledger.priors.prior import KINDS, Candidate, FailedConfig, Filtered, Prior
from stages.retry import outcome_of
from stages.target import limit_refusal, validate_config

FAILED_EXCLUDE_SIMILARITY = 0.8  # failed in an op at least this alike: left out, not warned
PROVENANCE_LIMIT = 240  # characters of --prior text; the full story is in the reasons


def _changes(best: Mapping[str, Any], config: Mapping[str, Any], keys: Sequence[str]) -> str:
    changed = [
        f"{k} {canonical_json(best[k]) if k in best else '(unset)'} -> {canonical_json(config[k])}"
        for k in keys
        if k in config and (k not in best or canonical_json(best[k]) != canonical_json(config[k]))
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
        k in config and canonical_json(config[k]) == canonical_json(failed.values[k])
        for k in shared
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
    out = candidate.left_out
    best = state.best.config if state.best is not None else {}

    try:
        config = validate_config(candidate.config, "the candidate config")
    except BadInput as e:
        return out(e.message)
    mismatch = _rank_mismatch(best, config) or fit.shape_misfit(state, config)
    if mismatch is not None:
        return out(mismatch)
    outside = fit.domain_misfit(state, config)
    if outside is not None:
        return out(outside, "R5")
    earlier = state.measured_configs.get(measured_key(state, config))
    # A config that spells out a default the best leaves out is no change (R6), which says
    # more than "measured"; an exact copy of a measured config stays an R9 retry.
    same = fit.no_change(state, config)
    if same is not None and canonical_json(config) != canonical_json(best):
        return out(same, "R6")
    if earlier is not None:
        name = "the baseline" if earlier == "baseline" else f"attempt {earlier}"
        return out(f"already measured by {name}: {outcome_of(state, earlier)}", "R9")
    unchanged = same or fit.equals_defaults(state, config)
    if unchanged is not None:
        return out(unchanged, "R6")
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
    return attrs.evolve(
        candidate, config=config, score=score, reasons=(*candidate.reasons, *warnings)
    )
