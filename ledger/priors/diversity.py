"""How far apart two configs are, and the maximal-marginal-relevance pick of diverse candidates.

Each next pick trades its score against its closeness to the picks before it, and a near copy
of a pick waits until nothing else is left, so ten candidates are never ten variants of one
value; then every source kind in the pool gets a place when there is room.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ledger.domain.configs import config_key
from ledger.log import codec
from ledger.priors.prior import KINDS, Candidate

MMR_LAMBDA = 0.7  # weight of a candidate's score against its closeness to earlier picks
KIND_PENALTY = 0.1  # nudge towards sources not yet picked
# Value distance below which two configs are variants of one value (about 1.4x apart on every
# axis): such a near copy of an earlier pick waits until no other candidate is left.
NEAR_COPY = 0.15


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
    if codec.canonical_json(a) == codec.canonical_json(b):
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
