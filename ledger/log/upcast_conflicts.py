"""Schema 1 of `conflict.resolved` named its conflict by the English text replay recorded
then; schema 2 names the typed conflict (kind and parties, ledger/schema/conflicts.py). The
texts are read here, once, when an old event is upcast; nothing else parses them.

Every text schema-1 code wrote has a pattern below; a text none matches was never written
by tune-ledger, and the line is refused as damage (exit 7) rather than guessed at.
"""

from __future__ import annotations

import re
from typing import Any

from ledger.schema.conflicts import ConflictKind

_ID = r"[0-9a-f]{12}"
_ATTEMPT = r"\S+"  # an attempt id, or "baseline" for the baseline best
_LEGACY: tuple[tuple[ConflictKind, re.Pattern[str]], ...] = (
    ("attempts-pending", re.compile(rf"attempts ({_ATTEMPT}) and ({_ATTEMPT}) pending at once")),
    ("after-stop", re.compile(rf"attempt ({_ATTEMPT}) started after the campaign stopped \(.*\)")),
    (
        "pending-at-stop",
        re.compile(
            rf"attempt ({_ATTEMPT}) was pending on another branch when the campaign stopped "
            r"\(.*\)"
        ),
    ),
    (
        "bests",
        re.compile(
            rf"attempt ({_ATTEMPT}) was adopted against best \S+ while attempt ({_ATTEMPT}) "
            r"was the best \(adopted on another branch\)"
        ),
    ),
    ("remeasure", re.compile(rf"bests ({_ATTEMPT}) and ({_ATTEMPT}) to be re-measured")),
    ("points-open", re.compile(r"points (.+) and (.+) open at once")),
    ("point-reopened", re.compile(r"point (.+) opened twice")),
    ("stages-apart", re.compile(r"stages (\S+) and (\S+) in progress on two branches")),
    ("stage-order", re.compile(r"stage (\S+) entered out of order \(expected (\S+)\)")),
    ("sheet-after-adopt", re.compile(rf"target sheet ({_ID}) written after attempts were adopted")),
    ("finished-twice", re.compile(rf"attempt ({_ATTEMPT}) (\S+) after it was (\S+)")),
)
_RELAXED = re.compile(r"(?:vec|cube) limit relaxed apart on merged branches: (.+)")
_RELAXED_PARTY = re.compile(rf"\S+ by ({_ID})")
_SKILLS = re.compile(r"skill budget exceeded: (.+)")


def conflict_of_text(text: str) -> dict[str, Any]:
    """The typed conflict (as plain data) a schema-1 conflict text names; ValueError when no
    schema-1 code wrote such a text."""
    if match := _RELAXED.fullmatch(text):
        return _plain("limits-apart", _RELAXED_PARTY.findall(match[1]))
    if match := _SKILLS.fullmatch(text):
        return _plain("skill-budget", match[1].split(", "))
    for kind, pattern in _LEGACY:
        if match := pattern.fullmatch(text):
            parties = match.groups()
            if kind == "finished-twice":  # "attempt A <again> after it was <before>"
                parties = (parties[0], parties[2], parties[1])
            return _plain(kind, parties)
    raise ValueError(f"conflict.resolved schema 1 names no conflict tune-ledger recorded: {text!r}")


def _plain(kind: ConflictKind, parties: Any) -> dict[str, Any]:
    return {"kind": kind, "parties": list(parties)}


def conflict_resolved_1_to_2(payload: dict[str, Any]) -> dict[str, Any]:
    """`conflict.resolved` schema 1 → 2: the conflict's text becomes the typed conflict."""
    return {**payload, "conflict": conflict_of_text(str(payload["conflict"]))}
