"""R8's bootstrap interval, written out so that any NumPy re-derives it bit for bit.

NumPy promises a stable stream only for its bit generators (PCG64: "a fixed seed will always
produce the same random integer stream"), not for `Generator.integers`, `median` or `quantile`
(NEP 19; numpy.random's compatibility policy). So each step is spelt out here, on NumPy's
sort and IEEE arithmetic only:

- Draws: `PCG64(seed).random_raw()`, each 64-bit word split into two 32-bit draws, low half
  first, one continuous stream for the whole bootstrap.
- An index in [0, n) from a draw u: Lemire's multiply-shift with rejection. m = u * n; u is
  rejected when m mod 2**32 < 2**32 mod n, else the index is m >> 32. Exact: every index has
  probability 1/n (the rejection removes the bias, and rejects fewer than n / 2**32 draws).
  One choice (n = 1) is index 0 and uses no draw.
- Resamples: first `resamples` rows of len(best) indices into best's sorted samples, row by
  row, then as many rows of len(attempt) indices into the attempt's.
- A row's median: its middle value, or (a + b) / 2 of its two middle values.
- The interval: the ratios median(attempt row i) / median(best row i), sorted, at the
  quantiles q = (1 - confidence) / 2 and 1 - q by linear interpolation (Hyndman and Fan's
  type 7, NumPy's default), with the arithmetic NumPy uses (`linear_quantile`).

That is what `numpy.random.default_rng(seed).integers(0, n, size)`, `numpy.median` and
`numpy.quantile` computed on NumPy 1.26 to 2.4, so intervals recorded before this module
re-derive unchanged (tests/test_bootstrap_draw.py holds the golden vectors).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported where it is used: it is slow to load (DESIGN §3 R8)
    import numpy as np
    from numpy.typing import NDArray

_HALF_BITS = 32
_HALF_MASK = (1 << _HALF_BITS) - 1


class DrawStream:
    """32-bit draws from PCG64(seed)'s raw 64-bit words, the low half of each word first."""

    def __init__(self, seed: int) -> None:
        import numpy as np

        self._words = np.random.PCG64(seed)
        # The high half of the last word read, when a take ended on its low half.
        self._left: NDArray[np.uint64] = np.empty(0, dtype=np.uint64)

    def take(self, count: int) -> NDArray[np.uint64]:
        """The next `count` draws, each in [0, 2**32)."""
        import numpy as np

        words = self._words.random_raw(max(0, count - len(self._left) + 1) // 2)
        halves = np.empty(2 * len(words), dtype=np.uint64)
        halves[0::2] = words & np.uint64(_HALF_MASK)
        halves[1::2] = words >> np.uint64(_HALF_BITS)
        draws = np.concatenate((self._left, halves))
        self._left = draws[count:]
        return draws[:count]


def uniform_indices(draws: DrawStream, n: int, count: int) -> NDArray[np.intp]:
    """`count` indices, each uniform in [0, n), by Lemire's method with rejection (R8)."""
    import numpy as np

    if not 1 <= n <= 1 << _HALF_BITS:
        raise ValueError(f"a bootstrap draws among 1 to 2**32 samples, not {n}")
    if n == 1:
        return np.zeros(count, dtype=np.intp)
    # 2**32 mod n: the draws below it in each multiple of n would make small indices likelier.
    threshold = np.uint64((1 << _HALF_BITS) % n)
    kept: list[NDArray[np.uint64]] = []
    missing = count
    while missing > 0:  # a rejection is rare (< n / 2**32): nearly always one pass
        scaled = draws.take(missing) * np.uint64(n)  # u * n < 2**64: no overflow
        accepted = scaled[(scaled & np.uint64(_HALF_MASK)) >= threshold] >> np.uint64(_HALF_BITS)
        kept.append(accepted)
        missing -= len(accepted)
    return np.concatenate(kept).astype(np.intp) if kept else np.zeros(0, dtype=np.intp)


def row_medians(rows: NDArray[np.float64]) -> NDArray[np.float64]:
    """The median of each row: its middle value, or the mean of its two middle values."""
    import numpy as np

    ordered = np.sort(rows, axis=1)
    middle = rows.shape[1] // 2
    if rows.shape[1] % 2:
        return ordered[:, middle]
    return (ordered[:, middle - 1] + ordered[:, middle]) / 2.0


def linear_quantile(ordered: Sequence[float], q: float) -> float:
    """The q-quantile of sorted values by linear interpolation (Hyndman and Fan type 7).

    Interpolated as NumPy does it (from the upper neighbour when the weight is at least one
    half), so the result's last bits match what `numpy.quantile` recorded."""
    position = (len(ordered) - 1) * q
    below = math.floor(position)
    if below >= len(ordered) - 1:
        return float(ordered[-1])
    weight = position - below
    low, high = float(ordered[below]), float(ordered[below + 1])
    step = high - low
    if weight >= 0.5:
        return high - step * (1 - weight)
    return low + step * weight


def bootstrap_interval(
    best: Sequence[float], attempt: Sequence[float], resamples: int, confidence: float, seed: int
) -> tuple[float, float]:
    """The seeded bootstrap interval of median(attempt) / median(best) (R8)."""
    import numpy as np

    draws = DrawStream(seed)

    def resampled_medians(samples: Sequence[float]) -> NDArray[np.float64]:
        # Sorted first: the draw picks positions, so the interval must not depend on order.
        ordered = np.sort(np.asarray(samples, dtype=np.float64))
        picks = uniform_indices(draws, len(ordered), resamples * len(ordered))
        return row_medians(ordered[picks.reshape(resamples, len(ordered))])

    best_medians = resampled_medians(best)  # best's rows first: the order is part of the draw
    ratios = np.sort(resampled_medians(attempt) / best_medians).tolist()
    tail = (1.0 - confidence) / 2.0
    return linear_quantile(ratios, tail), linear_quantile(ratios, 1.0 - tail)
