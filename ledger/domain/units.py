"""Parsing user-given values: times with units (a bare number is ms, as in the seed), names."""

from __future__ import annotations

import math
import re

from ledger.errors import BadInput

_UNITS_US = {"us": 1.0, "µs": 1.0, "μs": 1.0, "ms": 1_000.0, "s": 1_000_000.0, "ns": 0.001}
_TIME = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([a-zµμ]*)\s*$")
_OP_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def parse_time_us(text: str, what: str = "time") -> float:
    """Parse `71.1us`, `0.0711ms`, `1e-4s` or a bare number of ms into finite µs > 0."""
    match = _TIME.match(text)
    if match is None:
        raise BadInput(
            f"{what} {text!r} is not a time",
            hint="give a positive number with a unit: 71.1us, 0.0711ms, 1e-4s (bare = ms)",
        )
    number, unit = match.groups()
    factor = _UNITS_US.get(unit or "ms")
    if factor is None:
        raise BadInput(
            f"{what} {text!r} has an unknown unit {unit!r}",
            hint="use one of us, ms, s, ns (a bare number is ms)",
        )
    value = float(number) * factor
    if not math.isfinite(value) or value <= 0:
        raise BadInput(
            f"{what} must be finite and > 0 (R11), got {text!r}",
            rule="R11",
            hint="give the measured time, e.g. 71.1us",
        )
    return value


def check_op_name(name: str) -> str:
    """Return `name` if it is a safe op folder name (no '/', '..', control characters)."""
    if not _OP_NAME.fullmatch(name) or ".." in name:
        raise BadInput(
            f"op name {name!r} is not allowed",
            hint="use letters, digits, '_', '-', '.' (no '/', no '..', at most 64 characters)",
        )
    return name
