"""R9 No retry: a config already measured, or an algorithm idea like a failed one, is refused."""

from __future__ import annotations

import copy
import functools
import re
from typing import TYPE_CHECKING, Any

from attrs import define, field

from ledger.domain.hints import Fill, arg
from ledger.domain.keys import measured_key
from ledger.domain.state import Attempt, State
from ledger.domain.tail import added_since
from ledger.errors import BadInput
from ledger.schema.shared_methods import SharedRepr

if TYPE_CHECKING:
    import difflib
from stages.outcome import refuse
from stages.policy import effective_policy
from stages.refusal import Refusal

_UNSUCCESSFUL = ("rollback", "no-gain")
_IDEAS = "algorithm-ideas"  # the key of `_Ideas` in State.derived


def next_idea() -> str:
    """R9's way forward: another idea, or the retry measured anyway with its reason."""
    return (
        f"try another idea, or measure it again anyway: add {arg('override_retry', Fill('REASON'))}"
    )


def override_reason(override: str | None) -> str | None:
    """The override's reason, None when absent; BadInput when it gives no reason (R9)."""
    if override is None:
        return None
    if not override.strip():
        raise BadInput("an override of R9 needs a reason")
    return override


def outcome_of(state: State, attempt_id: str) -> str:
    """How an earlier measurement ended, in words (R9 names it)."""
    if attempt_id == "baseline":
        return "the baseline of the target sheet"
    attempt = state.attempts[attempt_id]
    if attempt.failure:
        return f"{attempt.verdict} ({attempt.failure} failure)"
    return attempt.verdict or attempt.status


def config_retry(state: State, config: dict[str, Any]) -> Refusal | None:
    """Refuse a config already measured in this op, naming the earlier attempt (R9)."""
    earlier = state.measured_configs.get(measured_key(state, config))
    if earlier is None:
        return None
    outcome = outcome_of(state, earlier)
    name = "the baseline" if earlier == "baseline" else f"attempt {earlier}"
    return refuse(
        "R9",
        f"this config was already measured by {name}: {outcome}",
        f"{name} measured this config ({outcome})",
        next_idea(),
        kind="retry",
    )


def normalize_idea(text: str) -> str:
    """An idea's words in lower case without punctuation or repeated whitespace (R9)."""
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


# Earlier ideas are normalized again at every new one: kept by text (a pure function).
_normalized = functools.lru_cache(maxsize=4096)(normalize_idea)


def similarity(first: str, second: str) -> float:
    """How alike two normalized ideas are: the higher of difflib's ratio and token Jaccard."""
    import difflib  # here: only a step that compares ideas needs it (~2 ms to import)

    ratio = difflib.SequenceMatcher(None, first, second).ratio()
    return max(ratio, _jaccard(first, second))


def _jaccard(first: str, second: str) -> float:
    a, b = set(first.split()), set(second.split())
    return len(a & b) / len(a | b) if a | b else 1.0


@functools.lru_cache(maxsize=4096)
def _indexed(second: str) -> difflib.SequenceMatcher[str]:
    """A matcher holding difflib's index of `second` as the second sequence (`b2j`). Indexing
    each earlier idea anew was most of R9's time (~10 ms a `try` at 10k events); a pure
    function of the text, so kept by text."""
    import difflib  # here: only a step that compares ideas needs it (~2 ms to import)

    return difflib.SequenceMatcher(None, "", second)


@functools.lru_cache(maxsize=4096)
def _signature(text: str) -> tuple[int, frozenset[str], dict[str, int]]:
    """What the bounds below read of a text: its length, its words, and how many times each
    character occurs (difflib's `fullbcount`). A pure function of the text, kept by text, so
    each earlier idea is counted once, and a new idea once per `try`."""
    counts: dict[str, int] = {}
    for char in text:
        counts[char] = counts.get(char, 0) + 1
    return len(text), frozenset(text.split()), counts


def _ratio(matches: int, length: int) -> float:
    """difflib's `_calculate_ratio`, so that the bounds are the very floats difflib computes."""
    return 2.0 * matches / length if length else 1.0


def _similar(first: str, second: str, threshold: float) -> float | None:
    """`similarity(first, second)` when it reaches `threshold`, else None."""
    # difflib's full ratio is quadratic in the text and runs once per earlier idea; its
    # upper bounds rule most pairs out first, same answer: real_quick_ratio (the lengths)
    # and quick_ratio (the characters both have), here from each text's kept signature
    # rather than from a matcher copied and re-pointed at `first` for every earlier idea.
    length, mine, counts = _signature(first)
    other_length, words, other_counts = _signature(second)
    union = len(mine | words)
    jaccard = len(mine & words) / union if union else 1.0
    if jaccard < threshold:
        total = length + other_length
        if _ratio(min(length, other_length), total) < threshold:
            return None
        if len(counts) > len(other_counts):
            counts, other_counts = other_counts, counts
        common = 0
        for char, count in counts.items():
            other = other_counts.get(char)
            if other is not None:
                common += count if count < other else other
        if _ratio(common, total) < threshold:
            return None
    matcher = copy.copy(_indexed(second))  # its own first sequence; the index is shared
    matcher.set_seq1(first)
    score = max(matcher.ratio(), jaccard)
    return score if score >= threshold else None


@define(repr=False)
class _Ideas(SharedRepr):
    """Every algorithm attempt's id in start order: an index kept in `State.derived` and
    extended with the attempts started since (an attempt's kind never changes, and attempts
    are only added), so finding the earlier ideas costs O(ideas), not O(attempts). Ids, not
    attempts: their status and verdict are read fresh (see stages/alternates.py `_Candidates`)."""

    seen: int = 0
    ids: list[str] = field(factory=list)


def warm_idea_index(state: State) -> _Ideas:
    """The index of algorithm ideas kept in `state.derived`, extended to every attempt. The
    state snapshot carries it: built cold, it reads every attempt (every part of them)."""
    ideas = state.derived.get(_IDEAS)
    if not isinstance(ideas, _Ideas):
        ideas = state.derived[_IDEAS] = _Ideas()
    ideas.ids += [a.id for a in added_since(state.attempts, ideas.seen) if a.kind == "algorithm"]
    ideas.seen = len(state.attempts)
    return ideas


def _unsuccessful_ideas(state: State) -> list[Attempt]:
    ideas = warm_idea_index(state)
    return [
        a
        for a in map(state.attempts.__getitem__, ideas.ids)
        if a.status in ("verified", "failed") and a.verdict in _UNSUCCESSFUL and a.description
    ]


def idea_retry(state: State, description: str) -> Refusal | None:
    """Refuse an algorithm idea equal or nearly equal to an earlier unsuccessful one (R9)."""
    threshold = float(effective_policy(state)["retry_similarity"])
    idea = normalize_idea(description)
    for attempt in sorted(_unsuccessful_ideas(state), key=lambda a: a.seq):
        earlier = _normalized(attempt.description or "")
        score = 1.0 if earlier == idea else _similar(idea, earlier, threshold)
        if score is not None and score >= threshold:
            outcome = outcome_of(state, attempt.id)
            return refuse(
                "R9",
                f"this idea repeats attempt {attempt.id} ({outcome}): "
                f"{attempt.description!r} (similarity {score:.2f})",
                f"attempt {attempt.id} tried it: {outcome}",
                next_idea(),
                kind="retry",
            )
    return None
