"""Whether a candidate fits the op at all (issue 15 item 10): tiles no larger than the P0
shape, values inside the manifest's knob domains, and a real change from the best.

A prior written for another op may carry a tile with 16 on an axis of size 1, a value the op
manifest excludes, or the manifest's own default: measuring any of them spends a run on
nothing the search can learn from, so they are filtered with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ledger.domain.configs import canonical_config, filled
from ledger.domain.knobs import Knob
from ledger.domain.state import State
from ledger.log import codec

# "32x32x1x256", "32×32×1×256" or "[32, 32, 1, 256]": the spellings a target sheet's shape takes.
_SHAPE = re.compile(r"^\s*[\[(]?\s*\d+(\s*[x×,]\s*\d+)*\s*[\])]?\s*$")


def p0_shape(state: State) -> tuple[tuple[int, ...], str] | None:
    """The P0 shape and where it comes from: the recorded manifest, else the target sheet."""
    manifest = state.manifest
    shapes = manifest.declared.get("p0_shapes") if manifest is not None else None
    if manifest is not None and isinstance(shapes, list) and shapes:
        first = shapes[0]
        if isinstance(first, list) and all(isinstance(d, int) for d in first):
            return tuple(first), f"the op manifest ({manifest.source})"
    if state.target is not None and _SHAPE.match(state.target.shape):
        return tuple(int(d) for d in re.findall(r"\d+", state.target.shape)), "the target sheet"
    return None


def shape_misfit(state: State, config: Mapping[str, Any]) -> str | None:
    """Why the vec tile has an axis larger than the P0 shape's dimension, or None."""
    tile, found = config.get("vec_tile_shape"), p0_shape(state)
    if found is None or not isinstance(tile, list) or len(tile) != len(found[0]):
        return None
    shape, source = found
    for axis, (size, dim) in enumerate(zip(tile, shape, strict=True)):
        if isinstance(size, int | float) and size > dim:
            return (
                f"vec_tile_shape {codec.canonical_json(tile)} has {size:g} on axis {axis}, "
                f"larger than the P0 shape's {dim} ({codec.canonical_json(list(shape))}, "
                f"from {source})"
            )
    return None


def domain_misfit(state: State, config: Mapping[str, Any]) -> str | None:
    """Why a value lies outside its knob's declared kind, domain or range, or None."""
    manifest = state.manifest
    if manifest is None:
        return None
    for name, spec in sorted(manifest.knobs.items()):
        if name not in config:
            continue
        domain = spec.get("domain")
        knob = Knob(
            name=name,
            stage=str(spec.get("stage", "")),
            kind=str(spec.get("kind", "json")),
            default=spec.get("default"),
            domain=tuple(domain) if isinstance(domain, list) else None,
            minimum=spec.get("min"),
            maximum=spec.get("max"),
        )
        problem = knob.refusal(config[name])
        if problem is not None:
            return f"{problem} in the op manifest ({manifest.source})"
    return None


def no_change(state: State, config: Mapping[str, Any]) -> str | None:
    """Why the config is the best's once the manifest's defaults are filled in (R6), or None."""
    manifest, best = state.manifest, state.best
    if manifest is None or best is None:
        return None
    defaults = manifest.defaults()
    if filled(config, defaults) != filled(best.config, defaults):
        return None
    spelt = sorted(
        k
        for k, v in config.items()
        if k in defaults
        and k not in best.config
        and canonical_config({k: v}) == canonical_config({k: defaults[k]})
    )
    named = ", ".join(f"{k} {codec.canonical_json(defaults[k])}" for k in spelt)
    which = f": {named} {'is its default' if len(spelt) == 1 else 'are their defaults'}"
    return (
        f"no change: equal to the best config once the defaults of the op manifest "
        f"({manifest.source}) are filled in{which if spelt else ''}"
    )


def equals_defaults(state: State, config: Mapping[str, Any]) -> str | None:
    """Why the config is nothing but the manifest's defaults (the kernel's own config), or None."""
    manifest = state.manifest
    if manifest is None:
        return None
    defaults = manifest.defaults()
    if filled(config, defaults) != filled(defaults):
        return None
    return f"equal to the defaults of the op manifest ({manifest.source})"
