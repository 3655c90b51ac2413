"""The closed set of event payloads of a tuning campaign (DESIGN §3), schema version 1.

`Payload` is the one list of event types: `PAYLOAD_TYPES`, replay's handlers and audit's
commands are derived from it or checked against it. The classes are defined by concept: the
protocol's steps in `ledger.schema.protocol`, the bookkeeping beside them (notes, policies,
the manifest, repairs, merges) in `ledger.schema.bookkeeping`; every one is importable from
here.
"""

from __future__ import annotations

from typing import get_args

from ledger.schema.bookkeeping import (
    ConflictResolved,
    LedgerRepaired,
    ManifestRecorded,
    NewlineRestored,
    NoteAdded,
    PolicySet,
    RollbackAccepted,
)
from ledger.schema.conflicts import Conflict
from ledger.schema.protocol import (
    ActivationFailed,
    ActivationPassed,
    AttemptAbandoned,
    AttemptFailed,
    AttemptMeasured,
    AttemptStarted,
    BestRemeasured,
    CampaignHandedBack,
    CampaignResumed,
    CampaignStopped,
    CompareEvidence,
    LayoutEvidence,
    LimitRelaxed,
    OpInitialized,
    PointClosed,
    PointOpened,
    ReportGenerated,
    SkillLoaded,
    SkillUnloaded,
    StageEntered,
    StageExited,
    TargetSheetWritten,
    VerdictReached,
)
from ledger.schema.values import (
    Binding,
    Device,
    Origin,
    OutputCheck,
)
from ledger.schema.vocabulary import (
    BASE_SKILLS,
    CONFIG_STAGES,
    FAILURES,
    SKILLS,
    STAGES,
    TUNE_SKILLS,
    VERDICTS,
    AttemptKind,
    ExitCondition,
    Failure,
    OriginLevel,
    Stage,
    StopReason,
    TargetSource,
    Verdict,
)

Payload = (
    OpInitialized
    | CompareEvidence
    | LayoutEvidence
    | ActivationPassed
    | ActivationFailed
    | SkillLoaded
    | SkillUnloaded
    | TargetSheetWritten
    | LimitRelaxed
    | StageEntered
    | StageExited
    | PointOpened
    | PointClosed
    | AttemptStarted
    | AttemptMeasured
    | VerdictReached
    | BestRemeasured
    | AttemptFailed
    | AttemptAbandoned
    | ReportGenerated
    | CampaignStopped
    | PolicySet
    | NoteAdded
    | LedgerRepaired
    | ConflictResolved
    | ManifestRecorded
    | NewlineRestored
    | RollbackAccepted
    | CampaignHandedBack
    | CampaignResumed
)

PAYLOAD_CLASSES: tuple[type[Payload], ...] = get_args(Payload)

PAYLOAD_TYPES: dict[str, type[Payload]] = {cls.TYPE: cls for cls in PAYLOAD_CLASSES}

__all__ = [
    "BASE_SKILLS",
    "CONFIG_STAGES",
    "FAILURES",
    "PAYLOAD_CLASSES",
    "PAYLOAD_TYPES",
    "SKILLS",
    "STAGES",
    "TUNE_SKILLS",
    "VERDICTS",
    "ActivationFailed",
    "ActivationPassed",
    "AttemptAbandoned",
    "AttemptFailed",
    "AttemptKind",
    "AttemptMeasured",
    "AttemptStarted",
    "BestRemeasured",
    "Binding",
    "CampaignHandedBack",
    "CampaignResumed",
    "CampaignStopped",
    "CompareEvidence",
    "Conflict",
    "ConflictResolved",
    "Device",
    "ExitCondition",
    "Failure",
    "LayoutEvidence",
    "LedgerRepaired",
    "LimitRelaxed",
    "ManifestRecorded",
    "NewlineRestored",
    "NoteAdded",
    "OpInitialized",
    "Origin",
    "OriginLevel",
    "OutputCheck",
    "Payload",
    "PointClosed",
    "PointOpened",
    "PolicySet",
    "ReportGenerated",
    "RollbackAccepted",
    "SkillLoaded",
    "SkillUnloaded",
    "Stage",
    "StageEntered",
    "StageExited",
    "StopReason",
    "TargetSheetWritten",
    "TargetSource",
    "Verdict",
    "VerdictReached",
]
