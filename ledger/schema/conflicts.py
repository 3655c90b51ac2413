"""A protocol conflict left by merged branches, as a typed value: its kind and its parties
(DESIGN §8). stages/conflicts.py finds them, projections render them as text, and a
`conflict.resolved` event records the one it resolves; its `id` names it on the command line.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, get_args

from attrs import field, frozen

# The kinds, with what each one's parties are (in order):
#   attempts-pending   R6   two attempts still pending at once
#   after-stop         R10  an attempt started after the campaign stopped
#   pending-at-stop    R10  an attempt another branch still had pending at the stop
#   bests              R8   an attempt adopted against another best, and the best it competes
#                           with ("baseline" when that is the baseline)
#   remeasure          R8   two competing bests whose configs are being measured again
#   points-open        R7   two points still open at once
#   point-reopened     R7   a point opened again while it existed
#   stages-apart       R4   the stage of a step, and the later stage another branch entered
#   stage-order        R4   a stage entered out of order, and the stage expected
#   limits-apart       R3   relaxations of one limit (event ids, 12 hex), one per limit the
#                           branches end with
#   skill-budget       R2   the skills loaded beyond the budget
#   sheet-after-adopt  R3   a target sheet (event id, 12 hex) written after adoptions
#   finished-twice     R6   an attempt, the status it had, the status it got again
ConflictKind = Literal[
    "attempts-pending",
    "after-stop",
    "pending-at-stop",
    "bests",
    "remeasure",
    "points-open",
    "point-reopened",
    "stages-apart",
    "stage-order",
    "limits-apart",
    "skill-budget",
    "sheet-after-adopt",
    "finished-twice",
]
CONFLICT_KINDS: tuple[ConflictKind, ...] = get_args(ConflictKind)


def _kind(value: str) -> ConflictKind:
    if value not in CONFLICT_KINDS:
        raise ValueError(f"unknown conflict kind {value!r}")
    return value


def _parties(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


@frozen
class Conflict:
    """One protocol conflict: what kind of rule it breaks, and between which parties."""

    kind: ConflictKind = field(converter=_kind)
    parties: tuple[str, ...] = field(converter=_parties)

    @property
    def id(self) -> str:
        """The conflict's stable name, from its kind and parties (`resolve --conflict ID`)."""
        return f"{self.kind}:{'+'.join(self.parties)}"
