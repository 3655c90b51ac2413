"""The closed set of event payloads of a tuning campaign (DESIGN §3), schema version 1.

Every payload is a frozen attrs class with a stable `TYPE` name and a `SCHEMA` version. Values
are validated on construction (R11), so a bad value can neither be appended nor replayed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, ClassVar, Literal

import attrs
from attrs import field, frozen

Stage = Literal["frontend", "swimlane", "incore", "algorithm"]
STAGES: tuple[Stage, ...] = ("frontend", "swimlane", "incore", "algorithm")
CONFIG_STAGES: tuple[Stage, ...] = ("frontend", "swimlane", "incore")

BASE_SKILLS = ("pypto-op-perf-tune", "perf-analyzer")
TUNE_SKILLS = {"tune-frontend": "frontend", "tune-swimlane": "swimlane", "tune-incore": "incore"}
SKILLS = BASE_SKILLS + tuple(TUNE_SKILLS)

Verdict = Literal["rollback", "no-gain", "adopt", "target-reached"]
VERDICTS: tuple[Verdict, ...] = ("rollback", "no-gain", "adopt", "target-reached")
Failure = Literal["accuracy", "layout", "timeout", "oom", "compile", "runtime"]
FAILURES: tuple[Failure, ...] = ("accuracy", "layout", "timeout", "oom", "compile", "runtime")
AttemptKind = Literal["candidate", "mutation", "algorithm"]
StopReason = Literal["target-reached", "utilization", "user"]
ExitCondition = Literal["target-met", "points-closed", "utilization", "user"]
TargetSource = Literal["spec", "upstream", "torch-eager"]
# How a measurement reached the ledger (R11): run by the ledger itself, parsed from an
# artefact whose digest is recorded, or only reported by the caller.
OriginLevel = Literal["measured", "artefact", "reported"]


# --- value checks (R11) -------------------------------------------------------------------


def _finite(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"expected a finite number, got {value!r}")
    return number


def _time(value: Any) -> float:
    number = _finite(value)
    if number <= 0:
        raise ValueError(f"a time must be > 0, got {value!r}")
    return number


def _times(values: Iterable[Any]) -> tuple[float, ...]:
    times = tuple(_time(v) for v in values)
    if not times:
        raise ValueError("at least one time is needed")
    return times


def _percent_or_none(value: Any) -> float | None:
    if value is None:
        return None
    number = _finite(value)
    if not 0 <= number <= 100:
        raise ValueError(f"a percentage must be within [0, 100], got {value!r}")
    return number


def _float_or_none(value: Any) -> float | None:
    return None if value is None else _finite(value)


def _int(value: Any) -> int:
    if isinstance(value, bool) or int(value) != value:
        raise ValueError(f"expected an integer, got {value!r}")
    return int(value)


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected text, got {value!r}")
    return value


def _nonempty(_instance: Any, attribute: attrs.Attribute[Any], value: str) -> None:
    if not value.strip():
        raise ValueError(f"{attribute.name} must not be empty")


def _metrics(value: Any) -> dict[str, float]:
    return {str(k): _finite(v) for k, v in dict(value).items()}


def _json_object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"a config must be a JSON object, got {value!r}")
    return dict(value)


# --- shared parts ----------------------------------------------------------------------------


@frozen
class Origin:
    """Where measured data came from: the command or tool, its version and output digest."""

    level: OriginLevel
    command: str | None = None
    tool: str | None = None
    tool_version: str | None = None
    exit_code: int | None = None
    output_digest: str | None = None
    duration_s: float | None = field(default=None, converter=_float_or_none)


@frozen
class OutputCheck:
    """One output of an E2E tensor compare: all_close, and the largest difference if known."""

    name: str = field(validator=_nonempty)
    all_close: bool
    max_diff: float | None = field(default=None, converter=_float_or_none)


def _outputs(values: Iterable[OutputCheck]) -> tuple[OutputCheck, ...]:
    outputs = tuple(values)
    names = [o.name for o in outputs]
    if not outputs:
        raise ValueError("at least one output is needed")
    if len(set(names)) != len(names):
        raise ValueError(f"output names repeat: {names}")
    return tuple(sorted(outputs, key=lambda o: o.name))


# --- payloads ------------------------------------------------------------------------------


@frozen
class OpInitialized:
    """The op's ledger was created."""

    TYPE: ClassVar[str] = "op.initialized"
    SCHEMA: ClassVar[int] = 1
    op: str = field(validator=_nonempty)


@frozen
class CompareEvidence:
    """An E2E tensor compare of the implementation with the golden reference (R1)."""

    TYPE: ClassVar[str] = "evidence.compare"
    SCHEMA: ClassVar[int] = 1
    outputs: tuple[OutputCheck, ...] = field(converter=_outputs)
    impl_path: str
    impl_digest: str
    origin: Origin


@frozen
class LayoutEvidence:
    """A layout check of the implementation and its exit code (R1)."""

    TYPE: ClassVar[str] = "evidence.layout"
    SCHEMA: ClassVar[int] = 1
    exit_code: int = field(converter=_int)
    impl_path: str
    impl_digest: str
    origin: Origin


@frozen
class ActivationPassed:
    """Both pieces of evidence pass for the current implementation (R1)."""

    TYPE: ClassVar[str] = "activation.passed"
    SCHEMA: ClassVar[int] = 1
    impl_digest: str
    compare_event: str
    layout_event: str


@frozen
class ActivationFailed:
    """Activation failed; control goes back to the orchestrator (R1, exit 5)."""

    TYPE: ClassVar[str] = "activation.failed"
    SCHEMA: ClassVar[int] = 1
    impl_digest: str
    problems: tuple[str, ...]
    handed_back_to: str = "pypto-op-orchestrator"


@frozen
class SkillLoaded:
    """A skill document was loaded into the agent's context (R2)."""

    TYPE: ClassVar[str] = "skill.loaded"
    SCHEMA: ClassVar[int] = 1
    name: str


@frozen
class SkillUnloaded:
    """A skill document was unloaded (R2)."""

    TYPE: ClassVar[str] = "skill.unloaded"
    SCHEMA: ClassVar[int] = 1
    name: str


@frozen
class TargetSheetWritten:
    """The Performance target sheet: measured baseline, target and its source (R3)."""

    TYPE: ClassVar[str] = "target.set"
    SCHEMA: ClassVar[int] = 1
    baseline_us: float = field(converter=_time)
    shape: str = field(validator=_nonempty)
    target_us: float = field(converter=_time)
    target_source: TargetSource
    source_ref: str | None
    config: dict[str, Any] = field(converter=_json_object)
    origin: Origin
    # Which execution time verdicts compare (e.g. "max core work time"); named on the sheet.
    metric: str = "time"
    # M of the cube problem, when known: selects the row of the cube tile table (R3).
    cube_m: int | None = None
    baseline_samples_us: tuple[float, ...] = field(default=(), converter=tuple)
    util_pct: float | None = field(default=None, converter=_percent_or_none)
    bubble_pct: float | None = field(default=None, converter=_percent_or_none)


@frozen
class LimitRelaxed:
    """A tile-shape upper limit relaxed with its basis in profiling data (R3)."""

    TYPE: ClassVar[str] = "limit.relaxed"
    SCHEMA: ClassVar[int] = 1
    what: Literal["vec", "cube"]
    limit: Any
    basis: str = field(validator=_nonempty)


@frozen
class StageEntered:
    """A stage of the pipeline was entered (R4)."""

    TYPE: ClassVar[str] = "stage.entered"
    SCHEMA: ClassVar[int] = 1
    stage: Stage


@frozen
class StageExited:
    """A stage was exited under one of its exit conditions (R4)."""

    TYPE: ClassVar[str] = "stage.exited"
    SCHEMA: ClassVar[int] = 1
    stage: Stage
    condition: ExitCondition
    reason: str = ""


@frozen
class PointOpened:
    """An optimization point of the current stage was opened (R7)."""

    TYPE: ClassVar[str] = "point.opened"
    SCHEMA: ClassVar[int] = 1
    stage: Stage
    name: str = field(validator=_nonempty)


@frozen
class PointClosed:
    """An optimization point was closed: exhausted, not applicable, or by the agent (R7)."""

    TYPE: ClassVar[str] = "point.closed"
    SCHEMA: ClassVar[int] = 1
    stage: Stage
    name: str
    outcome: Literal["exhausted", "not-applicable", "closed"]
    reason: str = field(validator=_nonempty)


@frozen
class AttemptStarted:
    """One change was applied and awaits verification (R5, R6, R7).

    Its id is the first characters of this event's id. `config` is the full resulting config.
    """

    TYPE: ClassVar[str] = "attempt.started"
    SCHEMA: ClassVar[int] = 1
    kind: AttemptKind
    stage: Stage
    point: str | None
    config: dict[str, Any] = field(converter=_json_object)
    param: str | None = None
    value: Any = None
    prior: str | None = None
    description: str | None = None
    impl_digest: str | None = None
    retry_override: str | None = None


@frozen
class AttemptMeasured:
    """The verifier's result for an attempt: accuracy, layout and time samples (R8, R11)."""

    TYPE: ClassVar[str] = "attempt.measured"
    SCHEMA: ClassVar[int] = 1
    attempt: str
    outputs: tuple[OutputCheck, ...] = field(converter=_outputs)
    layout_exit: int = field(converter=_int)
    times_us: tuple[float, ...] = field(converter=_times)
    origin: Origin
    util_pct: float | None = field(default=None, converter=_percent_or_none)
    bubble_pct: float | None = field(default=None, converter=_percent_or_none)
    metrics: dict[str, float] = field(factory=dict, converter=_metrics)


@frozen
class VerdictReached:
    """The ledger's verdict on a measured attempt, with the statistics that decided it (R8)."""

    TYPE: ClassVar[str] = "attempt.verdict"
    SCHEMA: ClassVar[int] = 1
    attempt: str
    verdict: Verdict
    failure: Literal["accuracy", "layout"] | None
    method: Literal["bootstrap", "threshold", "failure"]
    best_attempt: str | None
    best_median_us: float = field(converter=_time)
    attempt_median_us: float = field(converter=_time)
    ratio: float | None = field(converter=_float_or_none)
    low: float | None = field(default=None, converter=_float_or_none)
    high: float | None = field(default=None, converter=_float_or_none)
    threshold: float | None = field(default=None, converter=_float_or_none)
    seed: int | None = None
    policy: dict[str, Any] = field(factory=dict)


@frozen
class AttemptFailed:
    """An attempt failed to run or verify; the verdict is rollback (R7, R8)."""

    TYPE: ClassVar[str] = "attempt.failed"
    SCHEMA: ClassVar[int] = 1
    attempt: str
    category: Failure
    detail: str = ""
    origin: Origin | None = None


@frozen
class AttemptAbandoned:
    """A pending attempt was given up without a result, e.g. after a crash (R6)."""

    TYPE: ClassVar[str] = "attempt.abandoned"
    SCHEMA: ClassVar[int] = 1
    attempt: str
    reason: str = field(validator=_nonempty)


@frozen
class ReportGenerated:
    """A tuning report was written (needed before the algorithm stage, R4)."""

    TYPE: ClassVar[str] = "report.generated"
    SCHEMA: ClassVar[int] = 1
    path: str
    digest: str


@frozen
class CampaignStopped:
    """Tuning stopped: target reached, utilization limit, or the user (R10)."""

    TYPE: ClassVar[str] = "campaign.stopped"
    SCHEMA: ClassVar[int] = 1
    reason: StopReason
    detail: str = ""


@frozen
class PolicySet:
    """A policy threshold of this op was set; later decisions apply it (DESIGN §3)."""

    TYPE: ClassVar[str] = "policy.set"
    SCHEMA: ClassVar[int] = 1
    key: str
    value: Any
    reason: str = ""


@frozen
class NoteAdded:
    """Free text recorded by the agent or a reviewer."""

    TYPE: ClassVar[str] = "note.added"
    SCHEMA: ClassVar[int] = 1
    text: str = field(validator=_nonempty)


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
class ConflictResolved:
    """A protocol conflict created by merging branches was resolved by a recorded decision."""

    TYPE: ClassVar[str] = "conflict.resolved"
    SCHEMA: ClassVar[int] = 1
    conflict: str
    resolution: str
    reason: str = field(validator=_nonempty)


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
    | AttemptFailed
    | AttemptAbandoned
    | ReportGenerated
    | CampaignStopped
    | PolicySet
    | NoteAdded
    | LedgerRepaired
    | ConflictResolved
)

PAYLOAD_TYPES: dict[str, type[Any]] = {
    cls.TYPE: cls
    for cls in (
        OpInitialized,
        CompareEvidence,
        LayoutEvidence,
        ActivationPassed,
        ActivationFailed,
        SkillLoaded,
        SkillUnloaded,
        TargetSheetWritten,
        LimitRelaxed,
        StageEntered,
        StageExited,
        PointOpened,
        PointClosed,
        AttemptStarted,
        AttemptMeasured,
        VerdictReached,
        AttemptFailed,
        AttemptAbandoned,
        ReportGenerated,
        CampaignStopped,
        PolicySet,
        NoteAdded,
        LedgerRepaired,
        ConflictResolved,
    )
}
