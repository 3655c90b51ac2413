"""The time axis of the report's chart: linear from 0, or logarithmic when the times span
more than 10x (issue 15 item 12: the interesting end of a campaign is near the target, which
a linear axis squeezes against the bottom)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from attrs import frozen

LOG_SPAN = 10.0  # the times' max/min above which the axis is logarithmic
HEADROOM = 1.25  # the axis ends this far above the larger of baseline and target


def nice_step(span: float, ticks: int = 5) -> float:
    """A round step (1, 2, 2.5 or 5 times a power of ten) giving about `ticks` ticks."""
    raw = span / ticks
    power = 10.0 ** math.floor(math.log10(raw))
    for factor in (1.0, 2.0, 2.5, 5.0, 10.0):
        if raw <= factor * power:
            return factor * power
    return 10.0 * power


def _round_down(value: float) -> float:
    power = 10.0 ** math.floor(math.log10(value))
    return max(f * power for f in (1.0, 2.0, 5.0) if f * power <= value)


def _round_up(value: float) -> float:
    power = 10.0 ** math.floor(math.log10(value))
    return min(f * power for f in (1.0, 2.0, 5.0, 10.0) if f * power >= value)


@frozen
class Scale:
    """Times in µs from `low` to `high` onto a fraction 0..1 of the plot's height."""

    low: float
    high: float
    log: bool
    ticks: tuple[float, ...]

    def fraction(self, time_us: float) -> float:
        """Where `time_us` lies, 0 at the bottom and 1 at the top; clamped to the range."""
        value = min(max(time_us, self.low), self.high)
        if self.log:
            return math.log(value / self.low) / math.log(self.high / self.low)
        return (value - self.low) / (self.high - self.low)

    def clipped(self, time_us: float) -> bool:
        """True when `time_us` lies above the range (drawn as a marked clip at the top)."""
        return time_us > self.high

    def decimals(self) -> int:
        """Decimals the tick labels need."""
        smallest = min((t for t in self.ticks if t > 0), default=1.0)
        return 0 if smallest >= 1 else min(3, math.ceil(-math.log10(smallest)))


def scale_for(baseline_us: float, target_us: float, times_us: Sequence[float]) -> Scale:
    """The axis for a chart of these times with the baseline and target lines."""
    top = max(baseline_us, target_us) * HEADROOM
    lowest = min([baseline_us, target_us, *times_us])
    highest = max([baseline_us, target_us, *(t for t in times_us if t <= top)])
    if highest / lowest <= LOG_SPAN:
        step = nice_step(top)
        high = math.ceil(top / step) * step
        ticks = tuple(i * step for i in range(round(high / step) + 1))
        return Scale(low=0.0, high=high, log=False, ticks=ticks)
    low, high = _round_down(lowest / 1.1), _round_up(top)
    marks: list[float] = []
    power = 10.0 ** math.floor(math.log10(low))
    while power <= high:
        marks.extend(f * power for f in (1.0, 2.0, 5.0) if low <= f * power <= high)
        power *= 10.0
    return Scale(low=low, high=high, log=True, ticks=tuple(marks))
