"""Optimisations made for the benchmark give the same answers as the code they replaced."""

from __future__ import annotations

from driver import in_stage
from hypothesis import event, given, settings
from hypothesis import strategies as st

from stages import commands as cmd
from stages.retry import _similar, idea_retry, normalize_idea, similarity

_WORDS = (
    "fuse",
    "split",
    "the",
    "loop",
    "into",
    "two",
    "passes",
    "cache",
    "row",
    "max",
    "online",
    "softmax",
    "tile",
    "rows",
    "a",
    "b",
    "k",
)
_IDEAS = st.lists(st.sampled_from(_WORDS), min_size=0, max_size=12).map(" ".join)


@settings(max_examples=400, deadline=None)
@given(first=_IDEAS, second=_IDEAS, threshold=st.floats(min_value=0.0, max_value=1.0))
def test_the_prefiltered_similarity_keeps_every_decision_and_score(
    first: str, second: str, threshold: float
) -> None:
    first, second = normalize_idea(first), normalize_idea(second)
    full = similarity(first, second)
    assert _similar(first, second, threshold) == (full if full >= threshold else None)


@given(text=st.text(max_size=80), other=st.text(max_size=80))
def test_the_prefilter_agrees_on_arbitrary_text(text: str, other: str) -> None:
    full = similarity(text, other)
    assert _similar(text, other, 0.9) == (full if full >= 0.9 else None)


@settings(max_examples=100, deadline=None)
@given(firsts=st.lists(_IDEAS, min_size=2, max_size=6), second=_IDEAS)
def test_an_earlier_idea_indexed_once_answers_every_later_comparison_alike(
    firsts: list[str], second: str
) -> None:
    """R9 keeps difflib's index of each earlier idea and compares every new idea with it: each
    comparison gets the score a fresh matcher gives, whatever was compared before."""
    for first in firsts:
        assert _similar(first, second, 0.0) == similarity(first, second)
        assert _similar(second, first, 0.0) == similarity(second, first)


@settings(max_examples=60, deadline=None)
@given(
    earlier=st.lists(st.tuples(_IDEAS, st.booleans()), min_size=1, max_size=8),
    idea=_IDEAS,
    threshold=st.sampled_from([0.5, 0.75, 0.9, 1.0]),
)
def test_r9_refuses_the_idea_a_scan_of_every_earlier_one_with_the_full_score_names(
    earlier: list[tuple[str, bool]], idea: str, threshold: float
) -> None:
    """R9 compares a new idea with each earlier one by kept signatures and bounds before
    difflib's ratio: it refuses (or allows) exactly as comparing it in full with every earlier
    unsuccessful idea in start order does, and names the same earlier attempt."""
    driver = in_stage("algorithm")
    driver.run(cmd.SetPolicy(key="retry_similarity", value=threshold))
    tried: list[tuple[str, str, bool]] = []  # (attempt, idea, unsuccessful)
    for number, (text, slower) in enumerate(earlier):
        words = f"{text} idea {number}"  # each started: no earlier idea refuses it
        attempt = driver.start(cmd.TryAlgorithm(description=words, override="set-up"))
        driver.verify(attempt, 120.0 if slower else 90.0 - number)
        tried.append((attempt, words, slower))
    new = normalize_idea(idea)
    unsuccessful = [
        (attempt, words)
        for attempt, words, _slower in tried
        if driver.state.attempts[attempt].verdict in ("rollback", "no-gain")
    ]
    assert len(unsuccessful) == sum(slower for _a, _w, slower in tried)
    expected = next(
        (a for a, words in unsuccessful if similarity(new, normalize_idea(words)) >= threshold),
        None,
    )
    refusal = idea_retry(driver.state, idea)
    event("refused" if expected else "allowed")
    if expected is None:
        assert refusal is None
    else:
        assert refusal is not None and f"repeats attempt {expected} " in refusal.message
