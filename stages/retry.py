"""R9 No retry: a config already measured, or an algorithm idea like a failed one, is refused."""

from __future__ import annotations

import re
from typing import Any

from ledger.domain.hints import Fill, arg
from ledger.domain.keys import measured_key
from ledger.domain.state import Attempt, State
from ledger.errors import BadInput
from stages.outcome import refuse
from stages.policy import effective_policy
from stages.refusal import Refusal

_UNSUCCESSFUL = ("rollback", "no-gain")


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


def similarity(first: str, second: str) -> float:
    """How alike two normalized ideas are: the higher of difflib's ratio and token Jaccard."""
    import difflib  # here: only a step that compares ideas needs it (~2 ms to import)

    ratio = difflib.SequenceMatcher(None, first, second).ratio()
    return max(ratio, _jaccard(first, second))


def _jaccard(first: str, second: str) -> float:
    a, b = set(first.split()), set(second.split())
    return len(a & b) / len(a | b) if a | b else 1.0


def _unsuccessful_ideas(state: State) -> list[Attempt]:
    return [
        a
        for a in state.attempts.values()
        if a.kind == "algorithm"
        and a.status in ("verified", "failed")
        and a.verdict in _UNSUCCESSFUL
        and a.description
    ]


def idea_retry(state: State, description: str) -> Refusal | None:
    """Refuse an algorithm idea equal or nearly equal to an earlier unsuccessful one (R9)."""
    threshold = float(effective_policy(state)["retry_similarity"])
    idea = normalize_idea(description)
    for attempt in sorted(_unsuccessful_ideas(state), key=lambda a: a.seq):
        earlier = normalize_idea(attempt.description or "")
        score = 1.0 if earlier == idea else similarity(idea, earlier)
        if score >= threshold:
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
