"""The payloads written beside the protocol's steps (DESIGN §3, §4, §8): notes, policies and the
op manifest, the ledger's own repairs, a person's acceptance of a rollback, and the decisions
that resolve a merge's conflicts. The protocol's own payloads are in `ledger.schema.protocol`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from attrs import field, frozen

from ledger.schema.conflicts import Conflict
from ledger.schema.values import integer, json_object, nonempty


@frozen
class PolicySet:
    """A policy threshold of this op was set; later decisions apply it (DESIGN §3)."""

    TYPE: ClassVar[str] = "policy.set"
    # Schema 2 (issue 27) added `person`: who lowered a guard. A schema-1 policy.set reads
    # with person None (unknown).
    SCHEMA: ClassVar[int] = 2
    key: str
    value: Any
    reason: str = ""
    # The person who decided a change that lowers a guard, loosening a budget among them
    # (DESIGN §3.3); None otherwise.
    person: str | None = None


@frozen
class NoteAdded:
    """Free text recorded by the agent or a reviewer."""

    TYPE: ClassVar[str] = "note.added"
    SCHEMA: ClassVar[int] = 1
    text: str = field(validator=nonempty)


@frozen
class LedgerRepaired:
    """A torn tail was moved to a quarantine file before this append (DESIGN §4)."""

    TYPE: ClassVar[str] = "ledger.repaired"
    SCHEMA: ClassVar[int] = 1
    quarantine: str
    line: int
    byte_count: int
    digest: str


@frozen
class ManifestRecorded:
    """SPEC.md's op manifest as the campaign uses it from here on (DESIGN §4, R5-R7, R11).

    `declared` is the front matter's manifest fields as plain data, so replay knows the knobs,
    their stages and defaults without reading SPEC.md; `digest` identifies that content.
    """

    TYPE: ClassVar[str] = "manifest.recorded"
    SCHEMA: ClassVar[int] = 1
    digest: str
    source: str
    declared: dict[str, Any] = field(converter=json_object)
    # Since issue 27: the manifest governs by its presence, and under it only values the
    # ledger measured with the declared verifier count (stages/policy.py `measured_only`).
    # Left out while False, so a manifest recorded by older code keeps its bytes and rule.
    measured_only: bool = False


@frozen
class ConflictResolved:
    """A protocol conflict created by merging branches was resolved by a recorded decision."""

    TYPE: ClassVar[str] = "conflict.resolved"
    # Schema 1 named the conflict by its English text; ledger/log/upcast.py reads
    # that text once into the typed conflict.
    SCHEMA: ClassVar[int] = 2
    conflict: Conflict
    resolution: str
    reason: str = field(validator=nonempty)


# --- reliability (issue 20): repairs and confirmations written outside the protocol's steps --


@frozen
class NewlineRestored:
    """The ledger's last line verified completely but had lost its newline, which was written
    back before this append instead of quarantining the event (DESIGN §4.3)."""

    TYPE: ClassVar[str] = "ledger.newline_restored"
    SCHEMA: ClassVar[int] = 1
    line: int
    event: str


@frozen
class RollbackAccepted:
    """A person accepted that the ledger no longer holds `missing`, the last event MEMORY.md
    was rendered from (a rollback or truncation), for `reason` (DESIGN §7.5)."""

    TYPE: ClassVar[str] = "ledger.rollback_accepted"
    # Schema 2 (issue 27) added `person`; a schema-1 acceptance reads with person None
    # (unknown).
    SCHEMA: ClassVar[int] = 2
    missing: str = field(validator=nonempty)
    events: int = field(converter=integer)  # how many events MEMORY.md was rendered from
    reason: str = field(validator=nonempty)
    person: str | None = None


# --- end of the reliability block ------------------------------------------------------------
