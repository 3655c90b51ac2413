"""What an op is, for priors: its family, dtypes and P0 shapes from SPEC.md, and how alike two are.

The values come from SPEC.md's front matter as the manifest's reader parses it (YAML:
ledger/domain/manifest.py, through ledger/shell/manifest_file.py), the one reader of that file;
priors use keys the manifest does not declare (op_family, supported_dtypes, cube_m), and a
value of an unexpected type stays unknown.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from attrs import frozen

# Keys read from the front matter, in order of preference.
FAMILY_KEYS = ("op_family", "family", "category")
DTYPE_KEYS = ("supported_dtypes", "dtypes", "dtype")
SHAPE_KEYS = ("p0_shapes", "shapes")
# How much each aspect counts in the similarity of two ops (sums to 1).
WEIGHTS: Mapping[str, float] = {"family": 0.4, "dtype": 0.25, "shape": 0.35}
# An aspect unknown on either side counts as half alike: no evidence either way.
UNKNOWN = 0.5


@frozen
class OpProfile:
    """The facts about an op that make another op's configs relevant to it."""

    name: str
    family: str | None = None
    dtypes: tuple[str, ...] = ()
    shapes: tuple[tuple[int, ...], ...] = ()
    cube_m: int | None = None  # M of the cube tile table, when the SPEC gives it
    cube_k: int | None = None  # the full K dimension, for the table's "K"


# --- profiles ------------------------------------------------------------------------------


def profile(name: str, values: Mapping[str, Any]) -> OpProfile:
    """The op's profile from its front matter values; missing or odd values stay unknown."""
    family = next((str(values[k]) for k in FAMILY_KEYS if isinstance(values.get(k), str)), None)
    dtypes: tuple[str, ...] = ()
    for key in DTYPE_KEYS:
        raw = values.get(key)
        if isinstance(raw, str):
            raw = [raw]
        if isinstance(raw, list) and raw:
            dtypes = tuple(sorted({str(d).lower() for d in raw if isinstance(d, str)}))
            break
    shapes: tuple[tuple[int, ...], ...] = ()
    for key in SHAPE_KEYS:
        raw = values.get(key)
        if isinstance(raw, list) and raw and all(isinstance(d, int) for d in raw):
            raw = [raw]  # a single shape given without the outer list
        if isinstance(raw, list):
            shapes = tuple(tuple(s) for s in raw if _is_shape(s))
            if shapes:
                break
    op_name = values.get("op_name")
    return OpProfile(
        name=op_name if isinstance(op_name, str) and op_name else name,
        family=family,
        dtypes=dtypes,
        shapes=shapes,
        cube_m=_positive(values.get("cube_m")),
        cube_k=_positive(values.get("cube_k")),
    )


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _is_shape(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in value)
    )


def name_tokens(text: str, shortest: int = 1) -> set[str]:
    """The lower-case words of a name (split at anything but a letter or digit)."""
    return {t for t in re.split(r"[^a-z0-9]+", text.lower()) if len(t) >= shortest}


def family_similarity(a: OpProfile, b: OpProfile) -> float:
    """1 for the same family (or name), else the Jaccard index of their name tokens."""
    first, second = a.family or a.name, b.family or b.name
    if first.lower() == second.lower():
        return 1.0
    x, y = name_tokens(first), name_tokens(second)
    return len(x & y) / len(x | y) if x | y else 0.0


def dtype_similarity(a: OpProfile, b: OpProfile) -> float | None:
    """The Jaccard index of the dtype sets; None when either is unknown."""
    if not a.dtypes or not b.dtypes:
        return None
    x, y = set(a.dtypes), set(b.dtypes)
    return len(x & y) / len(x | y)


def shape_similarity(a: Sequence[int], b: Sequence[int]) -> float:
    """How alike two shapes are: per axis (trailing axes aligned) 1 - |log2 ratio| / 8, averaged;
    a different rank costs a fifth."""
    rank = max(len(a), len(b))
    x = [1] * (rank - len(a)) + list(a)
    y = [1] * (rank - len(b)) + list(b)
    per_axis = [
        max(0.0, 1.0 - abs(math.log2(p) - math.log2(q)) / 8.0) for p, q in zip(x, y, strict=True)
    ]
    score = sum(per_axis) / rank
    return score if len(a) == len(b) else score * 0.8


def shapes_similarity(a: OpProfile, b: OpProfile) -> float | None:
    """The best similarity over pairs of P0 shapes; None when either has none."""
    if not a.shapes or not b.shapes:
        return None
    return max(shape_similarity(x, y) for x in a.shapes for y in b.shapes)


def similarity(a: OpProfile, b: OpProfile) -> tuple[float, str]:
    """How alike two ops are, in [0, 1], and the reason in words (family, dtype, shape)."""
    parts = {
        "family": family_similarity(a, b),
        "dtype": dtype_similarity(a, b),
        "shape": shapes_similarity(a, b),
    }
    score = sum(WEIGHTS[k] * (UNKNOWN if v is None else v) for k, v in parts.items())
    words = [
        f"family {a.family or a.name} vs {b.family or b.name}",
        "dtypes unknown"
        if parts["dtype"] is None
        else f"dtypes {','.join(a.dtypes)} vs {','.join(b.dtypes)}",
        "shapes unknown" if parts["shape"] is None else f"shapes {_shapes(a)} vs {_shapes(b)}",
    ]
    return score, f"similarity {score:.2f} ({'; '.join(words)})"


def _shapes(p: OpProfile) -> str:
    return " ".join("[" + ",".join(str(d) for d in s) + "]" for s in p.shapes)
