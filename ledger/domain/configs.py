"""One canonical form of a config, so configs are compared by value, never by spelling; the
one place a config's knob defaults are filled in; and the key a config is filed under.

`128`, `128.0`, `1.28e2` are one number, and `0` and `-0.0` are one number: a float that
holds an integer value becomes that integer (R9: a retried idea must not pass as new by
being spelt differently; R11: a measurement is bound to its attempt by this form). Other
floats keep their value; NaN and the infinities are not values of a config. A config that
leaves a knob out runs the knob's default (the op manifest's), so a default spelt out and one
left out are one config (R6, R9, R11): `filled` is how every comparison sees a config.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ledger.log import codec


def canonical_value(value: Any) -> Any:
    """`value` with every integral float turned into its int, recursively (keys sorted)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} is not a finite number")
        return int(value) if value.is_integer() else value
    if isinstance(value, Mapping):
        return {str(k): canonical_value(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list | tuple):
        return [canonical_value(v) for v in value]
    raise ValueError(f"{value!r} is not a JSON value")


def canonical_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """A config in its canonical form (see the module docstring)."""
    return {str(k): canonical_value(config[k]) for k in sorted(config, key=str)}


def filled(config: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """`config` with every default it leaves out set (`defaults`: each knob's, by name), in
    canonical form."""
    return canonical_config({**defaults, **config} if defaults else config)


def config_key(config: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> str:
    """The key a config is filed under (R9: measured configs): the canonical JSON of `filled`,
    so equal by value and defaults, equal keys."""
    return codec.canonical_json(filled(config, defaults))
