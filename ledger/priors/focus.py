"""Which config keys candidates change (R7): named by --keys, by the open point, or by its stage."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from attrs import frozen

from ledger.domain.hints import Fill, arg
from ledger.domain.state import State
from ledger.errors import BadInput
from ledger.schema.vocabulary import CONFIG_STAGES

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


@frozen
class Focus:
    """Which config keys the candidates change, for which stage and point, and why."""

    stage: str | None
    point: str | None
    keys: tuple[str, ...]
    explicit: tuple[str, ...] = ()  # named by --keys or the point: added even if absent
    basis: str = ""


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
        hint=f"open a point of stages 1-3, or give {arg('point', Fill('NAME'))}, "
        f"{arg('stage', Fill('STAGE'))} or {arg('keys', 'k1,k2')}",
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
