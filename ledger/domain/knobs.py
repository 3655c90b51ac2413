"""An op's knob (DESIGN §4): the stage that may change it (R5) and the values it may take."""

from __future__ import annotations

import math
from typing import Any, TypeGuard

from attrs import frozen

from ledger.domain.configs import canonical_config
from ledger.log import codec

KNOB_KINDS = ("int", "float", "bool", "str", "tile", "int-list", "json")


@frozen
class Knob:
    """One config key the op declares: the stage that may change it (R5) and its values."""

    name: str
    stage: str
    kind: str
    default: Any
    domain: tuple[Any, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None

    def refusal(self, value: Any) -> str | None:
        """Why `value` is not a value of this knob, or None when it is."""
        if value is None and self.default is None:
            return None  # null: left unset, the kernel's own default
        wrong_kind = kind_error(self.kind, value)
        if wrong_kind:
            return f"{self.name}={codec.canonical_json(value)} is not {wrong_kind}"
        if self.domain is not None and canonical_config({"v": value}) not in [
            canonical_config({"v": allowed}) for allowed in self.domain
        ]:
            allowed = ", ".join(codec.canonical_json(v) for v in self.domain)
            return f"{self.name}={codec.canonical_json(value)} is outside its domain [{allowed}]"
        for number in numbers_in(value):
            shown = codec.canonical_json(value)
            if self.minimum is not None and number < self.minimum:
                return f"{self.name}={shown} is below its minimum {self.minimum:g}"
            if self.maximum is not None and number > self.maximum:
                return f"{self.name}={shown} is above its maximum {self.maximum:g}"
        return None


def kind_error(kind: str, value: Any) -> str | None:
    """What `value` is not, for a knob of `kind`; None when it is of that kind."""
    checks = {
        "int": (is_integral, "an integer"),
        "float": (is_number, "a number"),
        "bool": (lambda v: isinstance(v, bool), "true or false"),
        "str": (lambda v: isinstance(v, str), "a string"),
        "tile": (
            lambda v: isinstance(v, list) and bool(v) and all(is_positive_int(d) for d in v),
            "a list of positive integers (one per axis)",
        ),
        "int-list": (
            lambda v: isinstance(v, list) and all(is_integral(d) for d in v),
            "a list of integers",
        ),
        "json": (lambda v: True, ""),
    }
    accepts, what = checks[kind]
    return None if accepts(value) else what


def is_number(value: object) -> TypeGuard[int | float]:
    """A JSON number (booleans are not)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_integral(value: Any) -> bool:
    """A finite number with an integer value."""
    return is_number(value) and math.isfinite(value) and float(value).is_integer()


def is_positive_int(value: Any) -> bool:
    """An integral number > 0."""
    return is_integral(value) and value > 0


def is_finite_positive(value: object) -> TypeGuard[int | float]:
    """A finite number > 0."""
    return is_number(value) and math.isfinite(value) and value > 0


def numbers_in(value: Any) -> list[float]:
    """Every number in a value, lists searched."""
    if is_number(value):
        return [float(value)]
    if isinstance(value, list):
        return [n for item in value for n in numbers_in(item)]
    return []
