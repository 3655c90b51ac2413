"""Upcasting: old schema versions of a payload are rewritten, on read, to the current one.

Schema 1 of `attempt.measured` and `target.set` did not record the device a measurement ran
on: they are read with device unknown (None). Schema 1 of `policy.set`, `campaign.resumed`,
`ledger.rollback_accepted` and `limit.relaxed` did not name the person who lowered a guard:
they are read with person unknown (None) unless the line names one. Schema 1 of
`conflict.resolved` named its conflict by the English text replay recorded then; schema 2
names the typed conflict (kind and parties, ledger/schema/conflicts.py). The texts are read
here, once, when an old event is upcast; nothing else parses them. Every text schema-1 code
wrote has a pattern below; a text none matches was never written by tune-ledger, and the line
is refused as damage (exit 7) rather than guessed at.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from ledger.schema.conflicts import ConflictKind
from ledger.schema.events import PAYLOAD_TYPES

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]

# --- conflict.resolved 1 -> 2 ----------------------------------------------------------------

_ID = r"[0-9a-f]{12}"
_ATTEMPT = r"\S+"  # an attempt id, or "baseline" for the baseline best
# Patterns as text: `re` compiles them on the first old event, not in every process.
_LEGACY: tuple[tuple[ConflictKind, str], ...] = (
    ("attempts-pending", rf"attempts ({_ATTEMPT}) and ({_ATTEMPT}) pending at once"),
    ("after-stop", rf"attempt ({_ATTEMPT}) started after the campaign stopped \(.*\)"),
    (
        "pending-at-stop",
        rf"attempt ({_ATTEMPT}) was pending on another branch when the campaign stopped "
        r"\(.*\)",
    ),
    (
        "bests",
        rf"attempt ({_ATTEMPT}) was adopted against best \S+ while attempt ({_ATTEMPT}) "
        r"was the best \(adopted on another branch\)",
    ),
    ("remeasure", rf"bests ({_ATTEMPT}) and ({_ATTEMPT}) to be re-measured"),
    ("points-open", r"points (.+) and (.+) open at once"),
    ("point-reopened", r"point (.+) opened twice"),
    ("stages-apart", r"stages (\S+) and (\S+) in progress on two branches"),
    ("stage-order", r"stage (\S+) entered out of order \(expected (\S+)\)"),
    ("sheet-after-adopt", rf"target sheet ({_ID}) written after attempts were adopted"),
    ("finished-twice", rf"attempt ({_ATTEMPT}) (\S+) after it was (\S+)"),
)
_RELAXED = r"(?:vec|cube) limit relaxed apart on merged branches: (.+)"
_RELAXED_PARTY = rf"\S+ by ({_ID})"
_SKILLS = r"skill budget exceeded: (.+)"


def conflict_of_text(text: str) -> dict[str, Any]:
    """The typed conflict (as plain data) a schema-1 conflict text names; ValueError when no
    schema-1 code wrote such a text."""
    if match := re.fullmatch(_RELAXED, text):
        return _plain("limits-apart", re.findall(_RELAXED_PARTY, match[1]))
    if match := re.fullmatch(_SKILLS, text):
        return _plain("skill-budget", match[1].split(", "))
    for kind, pattern in _LEGACY:
        if match := re.fullmatch(pattern, text):
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


# --- person decisions (issue 27): who lowered a guard -------------------------------------


def person_unknown(payload: dict[str, Any]) -> dict[str, Any]:
    """Schema 1 -> 2 of `policy.set`, `ledger.rollback_accepted` and `campaign.resumed`: the
    person field is new; an event written before it reads as decided by a person unknown."""
    # `{"person": None, **payload}`: main between issue 29 and the merge of issue 27 wrote a
    # schema-1 policy.set / campaign.resumed with an optional `person` (a budget loosened or
    # lifted); that name is kept, not overwritten.
    return {"person": None, **payload}


def relaxed_1_to_2(payload: dict[str, Any]) -> dict[str, Any]:
    """`limit.relaxed` schema 1 -> 2: a relaxation written before evidence was named rests on
    none, and the person who decided it is unknown."""
    return {**payload, "evidence": [], "person": None}


# --- attempt.measured and target.set 1 -> 2 -------------------------------------------------


def device_unknown_1_to_2(payload: dict[str, Any]) -> dict[str, Any]:
    """`attempt.measured` / `target.set` schema 1 → 2: schema 1 did not record the device the
    measurement ran on, so it is unknown (compared only with other unknowns, R8)."""
    return {**payload, "device": None}


# --- absolute paths of old ledgers ------------------------------------------------------------


def relative_op_path(path: str, op: str | None) -> str:
    """A file of op `op`'s folder named relative to the root, as ledgers before issue 27.7
    could record it absolute (a kernel passed by --impl with the machine's path): an absolute
    path that runs through `custom/<op>/` (the op folder of a root, wherever that root was) is
    cut to `custom/<op>/...`, the name a ledger records now; any other path is returned as it
    is. Replay applies it to every recorded `impl_path` (ledger/domain/fold_gates.py), so an
    old ledger still replays and its views name the file the same way in every clone; the
    line's bytes, and so its content id, are never rewritten."""
    marker = f"/custom/{op}/"
    if not path.startswith("/") or not op or marker not in path:
        return path
    rest = path[path.rindex(marker) + 1 :]
    return rest if len(rest) > len(marker) - 1 else path


# (type name, version) -> function from that version's payload to the next version's. A
# change to a payload adds an entry here and a golden ledger of the old version under
# tests/data/ (v1-merged.jsonl holds schema-1 conflict.resolved events).
UPCASTERS: Mapping[tuple[str, int], Upcaster] = {
    ("conflict.resolved", 1): conflict_resolved_1_to_2,
    ("policy.set", 1): person_unknown,
    ("ledger.rollback_accepted", 1): person_unknown,
    ("campaign.resumed", 1): person_unknown,
    ("limit.relaxed", 1): relaxed_1_to_2,
    ("attempt.measured", 1): device_unknown_1_to_2,
    ("target.set", 1): device_unknown_1_to_2,
}


def upcast(
    type_name: str,
    version: int,
    payload: dict[str, Any],
    upcasters: Mapping[tuple[str, int], Upcaster] = UPCASTERS,
) -> dict[str, Any]:
    """Return `payload` rewritten from `version` to the current schema of `type_name`."""
    current = PAYLOAD_TYPES[type_name].SCHEMA
    if version > current:
        raise ValueError(
            f"{type_name} has schema {version}, newer than this tune-ledger knows ({current}); "
            "upgrade tune-ledger"
        )
    while version < current:
        step = upcasters.get((type_name, version))
        if step is None:
            raise ValueError(f"no upcaster for {type_name} schema {version}")
        payload = step(payload)
        version += 1
    return payload
