"""What an op is, for priors: its family, dtypes and P0 shapes from SPEC.md, and how alike two are.

SPEC.md's YAML front matter is read by a deliberately tiny parser (no PyYAML dependency): top-level
`key: value` lines whose value is JSON, a YAML flow collection of plain scalars
(`[fp16, bf16]`, `{rtol: 1e-3}`) or a plain scalar, and block lists of scalars (`- fp32`).
That covers the keys priors use (op_name, op_family, supported_dtypes, p0_shapes); anything
else is ignored, and a line it cannot read is reported, never fatal.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from attrs import frozen

from ledger.schema.shared_methods import SharedValue

FENCE = "---"
# Keys read from the front matter, in order of preference.
FAMILY_KEYS = ("op_family", "family", "category")
DTYPE_KEYS = ("supported_dtypes", "dtypes", "dtype")
SHAPE_KEYS = ("p0_shapes", "shapes")
# How much each aspect counts in the similarity of two ops (sums to 1).
WEIGHTS: Mapping[str, float] = {"family": 0.4, "dtype": 0.25, "shape": 0.35}
# An aspect unknown on either side counts as half alike: no evidence either way.
UNKNOWN = 0.5
_KEY_LINE = re.compile(r"^([A-Za-z_][\w.-]*)\s*:(?:\s+(.*)|\s*)$")


@frozen(repr=False, eq=False)
class FrontMatter(SharedValue):
    """The values read from a front matter, and the lines that could not be read."""

    values: dict[str, Any]
    problems: tuple[str, ...] = ()


@frozen(repr=False, eq=False)
class OpProfile(SharedValue):
    """The facts about an op that make another op's configs relevant to it."""

    name: str
    family: str | None = None
    dtypes: tuple[str, ...] = ()
    shapes: tuple[tuple[int, ...], ...] = ()
    cube_m: int | None = None  # M of the cube tile table, when the SPEC gives it
    cube_k: int | None = None  # the full K dimension, for the table's "K"


# --- the tiny front-matter parser -----------------------------------------------------------


def front_matter(text: str, where: str = "SPEC.md") -> FrontMatter:
    """The top-level keys of the `---` fenced front matter at the start of `text`."""
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != FENCE:
        return FrontMatter(values={})
    values: dict[str, Any] = {}
    problems: list[str] = []
    current: str | None = None  # a key whose value is a following block list
    for number, raw in enumerate(lines[1:], start=2):
        line = _strip_comment(raw).rstrip()
        if line.strip() in (FENCE, "..."):
            return FrontMatter(values=values, problems=tuple(problems))
        if not line.strip():
            continue
        if line[0] in " \t-":
            item = line.strip()
            if current is not None and item.startswith("-"):
                values[current].append(_value(item[1:].strip()))
            continue  # nested mappings are not needed by priors
        match = _KEY_LINE.match(line)
        if match is None:
            problems.append(f"{where}:{number}: front matter line not read: {raw.strip()!r}")
            current = None
            continue
        key, rest = match.group(1), (match.group(2) or "").strip()
        if rest:
            try:
                values[key] = _value(rest)
            except ValueError as e:
                problems.append(f"{where}:{number}: {key}: {e}")
            current = None
        else:
            values[key] = []
            current = key
    problems.append(f"{where}: front matter has no closing {FENCE!r}")
    return FrontMatter(values=values, problems=tuple(problems))


def _strip_comment(line: str) -> str:
    """The line without a ` # comment` that lies outside quotes."""
    quote: str | None = None
    for index, char in enumerate(line):
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1] in " \t"):
            return line[:index]
    return line


def _value(text: str) -> Any:
    """A JSON value, else a YAML flow collection or plain scalar; ValueError when malformed."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    if text[:1] in "[{":
        value, end = _flow(text, 0)
        if text[end:].strip():
            raise ValueError(f"unexpected text after the value: {text[end:].strip()!r}")
        return value
    return _scalar(text)


def _flow(text: str, start: int) -> tuple[Any, int]:
    """Parse a flow collection or scalar at `start`; return it and the index after it."""
    index = _skip_space(text, start)
    if index >= len(text):
        raise ValueError("unexpected end of the value")
    opener = text[index]
    if opener not in "[{":
        end = index
        while end < len(text) and text[end] not in ",]}":
            end += 1
        token = text[index:end].strip()
        return _scalar(token), end
    closer = "]" if opener == "[" else "}"
    items: list[Any] = []
    mapping: dict[str, Any] = {}
    index += 1
    while True:
        index = _skip_space(text, index)
        if index < len(text) and text[index] == closer:
            return (items if opener == "[" else mapping), index + 1
        if opener == "[":
            item, index = _flow(text, index)
            items.append(item)
        else:
            colon = text.find(":", index)
            if colon < 0:
                raise ValueError(f"a mapping entry without ':' in {text!r}")
            key = _scalar(text[index:colon].strip())
            mapping[str(key)], index = _flow(text, colon + 1)
        index = _skip_space(text, index)
        if index < len(text) and text[index] == ",":
            index += 1
        elif index >= len(text) or text[index] != closer:
            raise ValueError(f"expected ',' or {closer!r} in {text!r}")


def _skip_space(text: str, index: int) -> int:
    while index < len(text) and text[index] in " \t":
        index += 1
    return index


def _scalar(token: str) -> Any:
    if len(token) >= 2 and token[0] == token[-1] and token[0] in "'\"":
        return token[1:-1]
    lowered = token.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("null", "~", ""):
        return None
    for kind in (int, float):
        try:
            number = kind(token)
        except ValueError:
            continue
        if isinstance(number, float) and not math.isfinite(number):
            return token
        return number
    return token


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


def _tokens(text: str) -> set[str]:
    return {t for t in re.split(r"[^a-z0-9]+", text.lower()) if t}


def family_similarity(a: OpProfile, b: OpProfile) -> float:
    """1 for the same family (or name), else the Jaccard index of their name tokens."""
    first, second = a.family or a.name, b.family or b.name
    if first.lower() == second.lower():
        return 1.0
    x, y = _tokens(first), _tokens(second)
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
