"""The built-in knowledge file (data/priors.json): typical values, vec tile and cube tile rules.

`parse_knowledge` checks the file's contents; `builtin_priors` turns them into `Prior`s for the
keys asked for: typical values, vec tiles within the design range (R3; larger powers of two
once a relaxation is recorded) and the cube tile row for the op's M (the table is R3's,
stages/target.py; the file says how much it is trusted). All pure.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Collection, Mapping, Sequence
from functools import partial
from typing import Any

import cattrs
from attrs import field, frozen, validators

from ledger.log.codec import canonical_json
from ledger.priors.prior import Prior
from ledger.priors.profile import OpProfile
from stages.target import CUBE_TABLE, VEC_LIMIT, CubeRow, cube_table_row

# A trust: each weight of the file lies in [0, 1].
_UNIT = [validators.ge(0), validators.le(1)]


@frozen
class KnownValue:
    """A typical value of one key, with the sources that give it."""

    key: str
    weight: float = field(validator=_UNIT)
    basis: str  # stated by the sources, or derived from them (the note says how)
    sources: tuple[str, ...]
    note: str
    value: Any = None


@frozen
class VecRule:
    """Vec tile recommendations: values per tiled axis."""

    axis_values: tuple[int, ...]
    weight: float = field(validator=_UNIT)
    sources: tuple[str, ...]
    note: str
    max_varied_axes: int


@frozen
class CubeRule:
    """How much the rows of R3's M-based cube tile table are trusted as priors."""

    weight: float = field(validator=_UNIT)
    sources: tuple[str, ...]
    note: str


@frozen
class Knowledge:
    """The built-in priors file: sources by id, typical values, vec and cube tile rules."""

    sources: dict[str, str]
    values: tuple[KnownValue, ...]
    vec_tile: VecRule | None = None
    cube_tiles: CubeRule | None = None


def parse_knowledge(doc: Any) -> Knowledge:
    """The knowledge file's contents, checked; ValueError names what is malformed."""
    if not isinstance(doc, dict) or doc.get("schema_version") != 1:
        raise ValueError("not a priors file of schema_version 1")
    if not isinstance(doc.get("values"), list):  # cattrs would read a mapping's keys
        raise ValueError("priors: values must be a list")
    converter = cattrs.Converter()
    for kind in (str, int, float):
        converter.register_structure_hook(kind, partial(_exactly, kind))
    try:
        knowledge = converter.structure(doc, Knowledge)
    except cattrs.BaseValidationError as e:
        raise ValueError("; ".join(cattrs.transform_error(e, path="priors"))) from e
    for part in (*knowledge.values, knowledge.vec_tile, knowledge.cube_tiles):
        if part is not None and (not part.sources or set(part.sources) - set(knowledge.sources)):
            raise ValueError(f"sources {list(part.sources)!r} must name entries of 'sources'")
    return knowledge


def _exactly(kind: type, value: Any, _type: Any) -> Any:
    """`value` when JSON gave it as `kind` (an int for a float), never converted from another
    type (cattrs would take str(5) as a string)."""
    allowed = (int, float) if kind is float else kind
    if isinstance(value, bool) or not isinstance(value, allowed):
        raise TypeError(f"{value!r} is not a {kind.__name__}")
    return kind(value)


def _value_priors(knowledge: Knowledge) -> list[Prior]:
    """One prior per typical value of the knowledge file."""
    return [
        Prior(
            values={v.key: v.value},
            kind="builtin",
            weight=v.weight,
            provenance=f"builtin: {v.key} {canonical_json(v.value)}, {v.note.split(';')[0]} "
            f"({', '.join(v.sources)})",
            reasons=(v.note, f"basis: {v.basis}", _cited(v.sources)),
        )
        for v in knowledge.values
    ]


def _cited(sources: Sequence[str]) -> str:
    return f"sources: {', '.join(sources)} (see builtin_sources)"


def _vec_template(best: Mapping[str, Any], op: OpProfile) -> list[int] | None:
    tile = best.get("vec_tile_shape")
    if isinstance(tile, list) and tile and all(isinstance(v, int) for v in tile):
        return list(tile)
    if op.shapes:  # no tile yet: tile the P0 shape's axes, leading ones one row at a time
        return [1] * len(op.shapes[0])
    return None


def _varied_axes(template: Sequence[int], op: OpProfile, limit: int) -> list[int]:
    axes = [i for i, v in enumerate(template) if v != 1]
    if not axes and op.shapes and len(op.shapes[0]) == len(template):
        axes = [i for i, d in enumerate(op.shapes[0]) if d != 1]
    return axes[-limit:] if limit > 0 else []


def _vec_priors(
    rule: VecRule, best: Mapping[str, Any], op: OpProfile, vec_max: int
) -> tuple[list[Prior], list[str]]:
    template = _vec_template(best, op)
    if template is None:
        return [], [
            "builtin vec tiles: no vec_tile_shape in the best config and no P0 shape "
            "in SPEC.md to tile"
        ]
    axes = _varied_axes(template, op, rule.max_varied_axes)
    sizes = set(rule.axis_values)
    relaxed = vec_max > VEC_LIMIT
    if relaxed:  # a recorded relaxation opens larger powers of two (R3)
        sizes |= {2**e for e in range(7, int(math.log2(vec_max)) + 1)}
    dims = op.shapes[0] if op.shapes and len(op.shapes[0]) == len(template) else None
    per_axis = [sorted({min(s, dims[i]) if dims else s for s in sizes}) for i in axes]
    tiles: list[tuple[list[int], int]] = []
    for combo in itertools.product(*per_axis):
        tile = list(template)
        for axis, size in zip(axes, combo, strict=True):
            tile[axis] = size
        if tile != template:
            tiles.append((tile, math.prod(combo)))
    top = max((volume for _, volume in tiles), default=1)
    priors = []
    for tile, volume in tiles:
        larger = math.log(volume) / math.log(top) if top > 1 else 1.0
        beyond = " (beyond 64 under the relaxed limit)" if max(tile) > VEC_LIMIT else ""
        priors.append(
            Prior(
                values={"vec_tile_shape": tile},
                kind="builtin",
                weight=rule.weight * (0.6 + 0.4 * larger),
                provenance=f"builtin: vec_tile_shape {canonical_json(tile)}, tiled axes in "
                f"{{{', '.join(str(s) for s in sorted(sizes))}}}{beyond} "
                f"({', '.join(rule.sources)})",
                reasons=(rule.note, _cited(rule.sources)),
            )
        )
    return priors, []


def _cube_priors(
    rule: CubeRule, op: OpProfile, cube_m: int | None
) -> tuple[list[Prior], list[str]]:
    rows = [r for r in CUBE_TABLE if cube_m is None or r == cube_table_row(cube_m)]
    notes = (
        []
        if cube_m is not None
        else [
            "builtin cube tiles: M is unknown (target sheet or SPEC cube_m), every row is offered"
        ]
    )
    priors = []
    for row in rows:
        if any(v is None for pair in row.limit for v in pair) and op.cube_k is None:
            notes.append(
                f"builtin cube tiles: the row for M {_m_range(row)} needs K "
                "(SPEC front matter cube_k) and is left out"
            )
            continue
        tiles = [[op.cube_k if v is None else v for v in pair] for pair in row.limit]
        priors.append(
            Prior(
                values={"cube_tile_shape": tiles},
                kind="builtin",
                weight=rule.weight,
                provenance=f"builtin: cube_tile_shape {canonical_json(tiles)}, the M-based table "
                f"row for M {_m_range(row)} ({', '.join(rule.sources)})",
                reasons=(rule.note, _cited(rule.sources)),
            )
        )
    return priors, notes


def _m_range(row: CubeRow) -> str:
    if row.m_max is None:
        return f">= {row.m_min}"
    return str(row.m_min) if row.m_min == row.m_max else f"{row.m_min}-{row.m_max}"


def builtin_priors(
    knowledge: Knowledge,
    best: Mapping[str, Any],
    op: OpProfile,
    *,
    keys: Collection[str],
    cube_m: int | None,
    vec_max: int,
) -> tuple[list[Prior], list[str]]:
    """Typical values, vec tiles within the design range, and the cube row for M (the tile
    rules only when `keys` has their key), with notes for what could not be offered."""
    priors = [p for p in _value_priors(knowledge) if set(p.values) & set(keys)]
    notes: list[str] = []
    if knowledge.vec_tile is not None and "vec_tile_shape" in keys:
        vec, vec_notes = _vec_priors(knowledge.vec_tile, best, op, vec_max)
        priors.extend(vec)
        notes.extend(vec_notes)
    if knowledge.cube_tiles is not None and "cube_tile_shape" in keys:
        cube, cube_notes = _cube_priors(knowledge.cube_tiles, op, cube_m)
        priors.extend(cube)
        notes.extend(cube_notes)
    return priors, notes
