"""R8's bootstrap re-derives the same verdicts on any NumPy, old ledgers' included.

The golden vectors below were computed once with the draw used before issue 27 item 9
(`numpy.random.default_rng(seed).integers`, `numpy.median`, `numpy.quantile`) on NumPy 1.26.0
and on 2.4.6, which agreed, and reviewed: they are what old ledgers recorded, and what the
written-out draw of stages/bootstrap.py must keep giving. tools/test.sh runs this file on the
oldest NumPy pyproject.toml allows too (tools/oldest_numpy.sh).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import golden_bootstrap
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.log.file_store import FileStore
from ledger.shell import audit
from stages.bootstrap import DrawStream, bootstrap_interval, linear_quantile, uniform_indices
from stages.verdict import seed_of

GOLDEN_LEDGER = Path(__file__).parent / "data" / "ledger" / "v1-bootstrap.jsonl"


@pytest.mark.parametrize(
    ("seed", "n", "first"),
    [
        (0, 5, [4, 3, 2, 1, 1, 0, 0, 0, 0, 4, 3, 4]),
        (2**32 - 1, 7, [1, 1, 5, 1, 6, 2, 1, 4, 4, 6, 0, 2]),
        (0xDEADBEEF, 3, [0, 1, 1, 1, 0, 2, 0, 2, 0, 0, 2, 1]),
        # Nearly half the draws are rejected for this n: the rejection rule is pinned too.
        (7, 2**31 + 1, [1926751966, 1241873585, 1790251937, 483628757, 119253154, 644602188]),
    ],
)
def test_the_first_indices_of_a_seed_are_the_golden_ones(
    seed: int, n: int, first: list[int]
) -> None:
    """The same seed gives the same indices as the old ledgers' draw, on any NumPy."""
    assert uniform_indices(DrawStream(seed), n, len(first)).tolist() == first


def test_a_half_word_left_by_one_draw_starts_the_next() -> None:
    """Best's indices and the attempt's come from one stream: an odd count leaves the high
    half of its last word to the next draw, as the old draw did."""
    draws = DrawStream(42)
    assert uniform_indices(draws, 5, 3).tolist() == [0, 3, 3]
    assert uniform_indices(draws, 9, 4).tolist() == [3, 3, 7, 0]


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(min_value=0, max_value=2**32 - 1),
    n=st.one_of(st.integers(min_value=2, max_value=64), st.integers(2**31, 2**32)),
    count=st.integers(min_value=0, max_value=40),
)
def test_the_indices_follow_the_documented_mapping(seed: int, n: int, count: int) -> None:
    """Each index is Lemire's multiply-shift of the next 32-bit half word (low half first),
    a draw whose low product is below 2**32 mod n being skipped (stages/bootstrap.py)."""
    words = np.random.PCG64(seed).random_raw(2 * count + 64).tolist()
    halves = [half for word in words for half in (word & 0xFFFFFFFF, word >> 32)]
    expected = []
    for half in halves:
        if len(expected) == count:
            break
        if (half * n) % 2**32 >= 2**32 % n:
            expected.append(half * n >> 32)
    assert len(expected) == count  # 64 spare words: more rejections than that never happen
    assert uniform_indices(DrawStream(seed), n, count).tolist() == expected


def test_one_choice_is_index_zero_and_uses_no_draw() -> None:
    draws = DrawStream(0)
    assert uniform_indices(draws, 1, 3).tolist() == [0, 0, 0]
    assert uniform_indices(draws, 5, 3).tolist() == [4, 3, 2]  # the seed's first three


@pytest.mark.parametrize("n", [0, 2**32 + 1])
def test_a_count_of_samples_outside_the_draw_is_refused(n: int) -> None:
    with pytest.raises(ValueError, match="2\\*\\*32"):
        uniform_indices(DrawStream(0), n, 1)


@pytest.mark.parametrize(
    ("best", "attempt", "resamples", "confidence", "seed", "interval"),
    [
        (
            (99.0, 100.0, 101.0, 100.5, 99.5),
            (90.0, 91.0, 89.5, 90.5, 90.2),
            2000,
            0.95,
            0x1234ABCD,
            (0.8910891089108911, 0.9141414141414141),
        ),
        (
            (10.1, 9.7, 10.4, 10.0),
            (9.9, 10.3, 9.6, 10.2, 9.8, 10.05),
            500,
            0.9,
            3,
            (0.9603960396039604, 1.0284481412058732),
        ),
        (
            (3.3, 3.1),
            (3.0, 3.25, 2.95),
            2000,
            0.95,
            2**32 - 1,
            (0.893939393939394, 1.0483870967741935),
        ),
        # Its low end is interpolated down from the upper neighbour (weight 0.975): from the
        # lower one, the last bit differs.
        (
            (116.64, 149.0, 77.2757, 147.3909, 93.17, 116.4, 53.0329, 120.64),
            (86.577, 74.2, 121.191, 131.7658, 93.9, 152.4361),
            2000,
            0.95,
            1414621926,
            (0.6661016976291928, 1.4840902410562427),
        ),
    ],
)
def test_a_full_interval_is_the_golden_one(
    best: tuple[float, ...],
    attempt: tuple[float, ...],
    resamples: int,
    confidence: float,
    seed: int,
    interval: tuple[float, float],
) -> None:
    """The interval equals, to the last bit, what the old draw recorded for the same data."""
    assert bootstrap_interval(best, attempt, resamples, confidence, seed) == interval


def test_the_interval_uses_no_generator_method(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the bit generator's raw stream is drawn: Generator, whose stream NumPy may change,
    is never used."""

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("numpy.random.Generator used")

    monkeypatch.setattr(np.random, "default_rng", refuse)
    monkeypatch.setattr(np.random, "Generator", refuse)
    interval = bootstrap_interval((3.3, 3.1), (3.0, 3.25, 2.95), 2000, 0.95, 2**32 - 1)
    assert interval == (0.893939393939394, 1.0483870967741935)


@pytest.mark.parametrize(
    ("q", "expected"),
    [
        (0.0, 1.0),
        (0.25, 1.75),  # weight 0.75: interpolated down from the upper neighbour
        (0.5, 2.5),
        (0.6, 2.8),
        (1.0, 4.0),
    ],
)
def test_the_linear_quantile_interpolates_between_neighbours(q: float, expected: float) -> None:
    assert linear_quantile([1.0, 2.0, 3.0, 4.0], q) == pytest.approx(expected)


def test_the_golden_bootstrap_ledger_audits_clean(tmp_path: Path) -> None:
    """A ledger whose verdicts were drawn with Generator.integers re-derives every one."""
    path = tmp_path / "events.jsonl"
    shutil.copyfile(GOLDEN_LEDGER, path)
    events = FileStore(path).read().events
    assert [e.data["method"] for e in events if e.type == "attempt.verdict"] == ["bootstrap"] * 4
    assert audit.schema_findings(events) == []
    assert audit.legality_findings(events) == []


def test_the_current_code_decides_the_golden_campaign_alike(tmp_path: Path) -> None:
    """The same campaign, decided now, gives the same verdicts on the same medians, and audit
    re-derives every interval it recorded. (Its bytes differ from the golden's: events gained
    fields since, e.g. the device and the person, so ids and the seeds drawn from them do.)"""
    path = tmp_path / "events.jsonl"
    path.write_bytes(golden_bootstrap.build())
    now = FileStore(path).read().events
    then = FileStore(GOLDEN_LEDGER).read().events

    def decided(events: list[Any]) -> list[tuple[Any, ...]]:
        keys = ("verdict", "method", "attempt_median_us", "best_median_us", "ratio")
        return [tuple(e.data[k] for k in keys) for e in events if e.type == "attempt.verdict"]

    assert decided(list(now)) == decided(list(then))
    assert [v[0] for v in decided(list(now))] == ["adopt", "no-gain", "rollback", "target-reached"]
    assert audit.legality_findings(now) == []


def test_each_recorded_seed_is_its_attempt_ids_first_hex_digits(tmp_path: Path) -> None:
    """The seed is read from the recorded attempt id (a content id), nothing else: audit
    re-derives it from the ledger alone."""
    path = tmp_path / "events.jsonl"
    shutil.copyfile(GOLDEN_LEDGER, path)
    events = FileStore(path).read().events
    verdicts = [e.data for e in events if e.type == "attempt.verdict"]
    assert [v["seed"] for v in verdicts] == [int(v["attempt"][:8], 16) for v in verdicts]
    assert seed_of("22a59424f91c") == 0x22A59424
