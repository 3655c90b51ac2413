"""Optimisations made for the benchmark give the same answers as the code they replaced."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from stages.retry import _similar, normalize_idea, similarity

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
