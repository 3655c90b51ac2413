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
import re
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


# JSON text that may hold a float: orjson writes every float with a "." or an exponent
# ("e+16", "e-07") right after a digit. Text with no ".", no "E" and no digit followed by "e"
# holds ints only and is canonical already. Three cheap tests rather than one regex
# `\d[.eE]`: a pattern that starts with a literal is searched for that character first.
_DIGIT_E = re.compile(r"e(?<=[0-9]e)")


def _maybe_float(text: str) -> bool:
    """True when JSON text from orjson may hold a float (false positives only cost time)."""
    return "." in text or "E" in text or _DIGIT_E.search(text) is not None


def config_key(config: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> str:
    """The key a config is filed under (R9: measured configs): the sorted JSON of `filled`, so
    equal by value and defaults, equal keys. In memory only, never written.

    A config of ints (the usual one) is canonical as it is: its text is the key, without the
    canonical form's walk (a fifth of the cost; replay makes one key per measured attempt)."""
    plain = {**defaults, **config} if defaults else config
    text = codec.sorted_json(plain)
    if _maybe_float(text):
        return codec.sorted_json(filled(plain))
    return text
