"""Attempts as JSON rows (`log --json`, `status`'s alternates) and the ids that name them."""

from __future__ import annotations

from typing import Any

from ledger.domain import devices
from ledger.domain.hints import Step
from ledger.domain.state import Attempt, State
from ledger.errors import BadInput
from ledger.log.codec import canonical_json

_MIN_PREFIX = 4


def resolve_attempt(state: State, text: str) -> str:
    """The attempt id that `text` names: a full id, a unique prefix, or `pending`."""
    if text == "pending":
        if state.pending is None:
            raise BadInput("no attempt is pending", hint="start one with `candidate` or `try`")
        return state.pending
    if len(text) < _MIN_PREFIX:
        raise BadInput(f"attempt id {text!r} is too short", hint="give at least 4 characters")
    matches = [a for a in state.attempts if a.startswith(text)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise BadInput(
            f"unknown attempt {text!r}",
            hint=f"see {Step('log', state.op)} for attempt ids, or use `pending`",
        )
    raise BadInput(
        f"attempt id {text!r} is ambiguous: {', '.join(sorted(matches))}",
        hint=f"give more characters of the id (see {Step('log', state.op)})",
    )


def _change(attempt: Attempt) -> str:
    if attempt.kind == "mutation":
        return f"{attempt.param}={canonical_json(attempt.value)}"
    if attempt.kind == "algorithm":
        return attempt.description or ""
    return f"candidate from {attempt.prior}"


def attempt_row(attempt: Attempt) -> dict[str, Any]:
    """One attempt as a JSON row."""
    m = attempt.measurement
    return {
        "attempt": attempt.id,
        "seq": attempt.seq,
        "kind": attempt.kind,
        "stage": attempt.stage,
        "point": attempt.point,
        "change": _change(attempt),
        "config": attempt.config,
        "status": attempt.status,
        "verdict": attempt.verdict,
        "failure": attempt.failure,
        "detail": attempt.detail,
        "time_us": m.median_us if m else None,
        "util_pct": m.util_pct if m else None,
        "bubble_pct": m.bubble_pct if m else None,
        "provenance": m.origin_level if m else None,
        # Where it was measured (ledger/domain/devices.py); None: not measured.
        "device": devices.label(m.device) if m else None,
        "retry_override": attempt.retry_override,
    }


def attempt_rows(
    state: State,
    *,
    stage: str | None = None,
    verdict: str | None = None,
    failure: str | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """The attempts in the order they were started (`state.attempts`' order), filtered; the
    last `limit` of them."""
    chosen = [
        a
        for a in state.attempts.values()
        if (stage is None or a.stage == stage)
        and (verdict is None or a.verdict == verdict)
        and (failure is None or a.failure == failure)
    ]
    return [attempt_row(a) for a in (chosen[-limit:] if limit else chosen)]
