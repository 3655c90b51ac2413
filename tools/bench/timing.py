"""The bench's measuring and reporting primitives: timed calls, alternated sides, one figure."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any


def summary(samples: Sequence[float]) -> dict[str, Any]:
    """min / median / max of repeated samples, and how many there were."""
    return {
        "min": min(samples),
        "median": statistics.median(samples),
        "max": max(samples),
        "n": len(samples),
    }


def figure(
    *,
    value: float | None,
    reference: float | None,
    unit: str,
    ratio: float | None,
    ratio_is: str,
    goal: str,
    met: bool | None,
    what: str,
    reference_is: str,
    noise: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """One figure of the report."""
    return {
        "what": what,
        "value": rounded(value),
        "reference": rounded(reference),
        "reference_is": reference_is,
        "unit": unit,
        "ratio": rounded(ratio),
        "ratio_is": ratio_is,
        "goal": goal,
        "met": met,
        "noise": noise or {},
        **extra,
    }


def rounded(value: float | None) -> float | None:
    """Six significant digits, so a report does not print timer noise; None and inf as they are."""
    if value is None or not math.isfinite(value):
        return value
    return float(f"{value:.6g}")


# A figure's sides are timed alternately, so that drift (thermal, other load) hits both alike.
def alternate(*measures: Callable[[], float], repeats: int) -> list[list[float]]:
    """Time measurements in turn, round after round; each callable returns the seconds it
    measured. The samples of each, in order."""
    samples: list[list[float]] = [[] for _ in measures]
    for _ in range(repeats):
        for measure, taken in zip(measures, samples, strict=True):
            taken.append(measure())
    return samples


def timed(fn: Callable[[], Any]) -> float:
    """The wall time of one call, in seconds."""
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started
