"""The value types of event payloads: checked values (R11), and the parts payloads share
(where measured data came from, one output's compare result). The protocol's words (stages,
verdicts, failures...) are in ledger/schema/vocabulary.py.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import attrs
from attrs import field, frozen

from ledger.schema.vocabulary import OriginLevel

# --- value checks (R11) -------------------------------------------------------------------


def finite(value: Any) -> float:
    """A number as a finite float; booleans, NaN and infinities raise ValueError."""
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"expected a finite number, got {value!r}")
    return number


# The range of a time in µs the ledger records (R11): a picosecond to about eleven days. Far
# beyond any kernel either way, and narrow enough that every ratio of two times (a speedup, a
# verdict's ratio) stays a finite float, which JSON and the views can carry.
TIME_MIN_US = 1e-6
TIME_MAX_US = 1e12


def positive_time(value: Any) -> float:
    """A finite time in µs within [TIME_MIN_US, TIME_MAX_US] (R11)."""
    number = finite(value)
    if number <= 0:
        raise ValueError(f"a time must be > 0, got {value!r}")
    if not TIME_MIN_US <= number <= TIME_MAX_US:
        raise ValueError(
            f"a time must be within {TIME_MIN_US:g} µs .. {TIME_MAX_US:g} µs, got {value!r} µs"
        )
    return number


def positive_times(values: Iterable[Any]) -> tuple[float, ...]:
    """At least one finite time > 0, as a tuple."""
    times = tuple(positive_time(v) for v in values)
    if not times:
        raise ValueError("at least one time is needed")
    return times


def percent_or_none(value: Any) -> float | None:
    """None, or a finite percentage within [0, 100]."""
    if value is None:
        return None
    number = finite(value)
    if not 0 <= number <= 100:
        raise ValueError(f"a percentage must be within [0, 100], got {value!r}")
    return number


def float_or_none(value: Any) -> float | None:
    """None, or a finite float."""
    return None if value is None else finite(value)


def integer(value: Any) -> int:
    """An integral number as an int; booleans and fractions raise ValueError."""
    if isinstance(value, bool) or int(value) != value:
        raise ValueError(f"expected an integer, got {value!r}")
    return int(value)


def nonempty(_instance: Any, attribute: attrs.Attribute[Any], value: str) -> None:
    """An attrs validator: the text must hold more than whitespace."""
    if not value.strip():
        raise ValueError(f"{attribute.name} must not be empty")


def metrics(value: Any) -> dict[str, float]:
    """A mapping of metric names to finite floats."""
    return {str(k): finite(v) for k, v in dict(value).items()}


def json_object(value: Any) -> dict[str, Any]:
    """A config: a JSON object, copied."""
    if not isinstance(value, dict):
        raise ValueError(f"a config must be a JSON object, got {value!r}")
    return dict(value)


# --- shared parts ----------------------------------------------------------------------------


@frozen
class CachedRun:
    """A result recorded from the measurement cache: the entry's key, and when and where the
    run that produced it really ran (its command, exit code and output are the origin's)."""

    key: str
    at: str
    host: str


@frozen
class Origin:
    """Where measured data came from: the command or tool, its version and output digest."""

    level: OriginLevel
    command: str | None = None
    tool: str | None = None
    tool_version: str | None = None
    exit_code: int | None = None
    output_digest: str | None = None
    duration_s: float | None = field(default=None, converter=float_or_none)
    # Set when the run was not made for this event but read from the measurement cache
    # (ledger/shell/measure_cache.py): every other field then describes that earlier run.
    cached: CachedRun | None = None
    # The digest of the declared verifier (or layout check) that ran: its declaration and the
    # files it names (ledger/shell/manifest_file.py `verifier_digest`); None for any other run
    # and for events written before it was recorded.
    verifier_digest: str | None = None


def _text_or_none(value: Any) -> str | None:
    """None, or a device field as text (an NPU's number is kept as its decimal text)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(f"a device field must be text or a number, got {value!r}")
    return str(value)


@frozen
class Device:
    """The device a measurement ran on, as its verifier named it (issue 29): the run mode
    (`sim`, `npu`), the part (SoC), the device's number on its host, the CANN toolkit's and the
    driver's versions; each None when the verifier did not say. A measurement that names no
    device at all records None instead of a Device: device unknown."""

    run_mode: str | None = field(default=None, converter=_text_or_none)
    soc: str | None = field(default=None, converter=_text_or_none)
    id: str | None = field(default=None, converter=_text_or_none)
    cann: str | None = field(default=None, converter=_text_or_none)
    driver: str | None = field(default=None, converter=_text_or_none)


def json_object_or_none(value: Any) -> dict[str, Any] | None:
    """None, or a JSON object, copied."""
    return None if value is None else json_object(value)


@frozen
class Binding:
    """What a measurement says it ran (R11): the config and the kernel file's sha256."""

    config: dict[str, Any] | None = field(default=None, converter=json_object_or_none)
    impl_digest: str | None = None


@frozen
class OutputCheck:
    """One output of an E2E tensor compare: all_close, and the largest difference if known."""

    name: str = field(validator=nonempty)
    all_close: bool
    max_diff: float | None = field(default=None, converter=float_or_none)


def sorted_outputs(values: Iterable[OutputCheck]) -> tuple[OutputCheck, ...]:
    """At least one output check, names unique, sorted by name."""
    outputs = tuple(values)
    names = [o.name for o in outputs]
    if not outputs:
        raise ValueError("at least one output is needed")
    if len(set(names)) != len(names):
        raise ValueError(f"output names repeat: {names}")
    return tuple(sorted(outputs, key=lambda o: o.name))
