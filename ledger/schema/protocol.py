"""The payloads of the protocol's steps (DESIGN §3, R1-R10): activation, skills, the target
sheet, stages and points, attempts and their verdicts, the stop and what follows it.

Every payload is a frozen attrs class with a stable `TYPE` name and a `SCHEMA` version. Values
are validated on construction (R11), so a bad value can neither be appended nor replayed. The
closed set of event types is `ledger.schema.events.Payload`; the payloads written beside the
protocol's steps (notes, policies, repairs, merges) are in `ledger.schema.bookkeeping`.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from attrs import field, frozen

from ledger.schema.values import (
    Binding,
    Device,
    Origin,
    OutputCheck,
    float_or_none,
    integer,
    json_object,
    metrics,
    nonempty,
    percent_or_none,
    positive_time,
    positive_times,
    sorted_outputs,
)
from ledger.schema.vocabulary import (
    AttemptKind,
    ExitCondition,
    Failure,
    Stage,
    StopReason,
    TargetSource,
    Verdict,
)


@frozen
class OpInitialized:
    """The op's ledger was created."""

    TYPE: ClassVar[str] = "op.initialized"
    SCHEMA: ClassVar[int] = 1
    op: str = field(validator=nonempty)


@frozen
class CompareEvidence:
    """An E2E tensor compare of the implementation with the golden reference (R1)."""

    TYPE: ClassVar[str] = "evidence.compare"
    SCHEMA: ClassVar[int] = 1
    outputs: tuple[OutputCheck, ...] = field(converter=sorted_outputs)
    impl_path: str
    impl_digest: str
    origin: Origin


@frozen
class LayoutEvidence:
    """A layout check of the implementation and its exit code (R1)."""

    TYPE: ClassVar[str] = "evidence.layout"
    SCHEMA: ClassVar[int] = 1
    exit_code: int = field(converter=integer)
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
    # Schema 2 adds `device` (issue 29); a schema-1 sheet is read with device unknown.
    SCHEMA: ClassVar[int] = 2
    baseline_us: float = field(converter=positive_time)
    shape: str = field(validator=nonempty)
    target_us: float = field(converter=positive_time)
    target_source: TargetSource
    source_ref: str | None
    config: dict[str, Any] = field(converter=json_object)
    origin: Origin
    # Which execution time verdicts compare (e.g. "max core work time"); named on the sheet.
    metric: str = "time"
    # M of the cube problem, when known: selects the row of the cube tile table (R3).
    cube_m: int | None = None
    baseline_samples_us: tuple[float, ...] = field(default=(), converter=tuple)
    util_pct: float | None = field(default=None, converter=percent_or_none)
    bubble_pct: float | None = field(default=None, converter=percent_or_none)
    # The device the baseline ran on; None: unknown (typed in, or a verifier that names none).
    device: Device | None = None
    # Where the target came from when it was measured (R3's fallbacks: an upstream kernel or
    # torch eager, run by the ledger; issue 29.6) and its samples; left out of the line when
    # the target was SPEC.md's budget or typed in.
    target_origin: Origin | None = None
    target_samples_us: tuple[float, ...] = field(default=(), converter=tuple)


@frozen
class LimitRelaxed:
    """A tile-shape upper limit relaxed with its basis in profiling data (R3)."""

    TYPE: ClassVar[str] = "limit.relaxed"
    # Schema 2 (issue 27) added `evidence` and `person`; ledger/log/upcast.py reads a schema-1
    # relaxation as one without evidence whose person is unknown.
    SCHEMA: ClassVar[int] = 2
    what: Literal["vec", "cube"]
    limit: Any
    basis: str = field(validator=nonempty)
    # The relaxations of this limit that no other one had superseded yet, as the deciding
    # branch saw them (their event ids; empty under the table's limit): what this one
    # supersedes. Two branches' relaxations that neither supersedes are a merge conflict
    # (DESIGN §8). None, and left out of the line, only in relaxations recorded before issue 18.
    supersedes: tuple[str, ...] | None = None
    # The measured attempts of this op the relaxation rests on (R3); empty only when a person
    # relaxed without evidence (`person` then names them).
    evidence: tuple[str, ...] = field(default=(), converter=tuple)
    # Who decided a relaxation without evidence (a person's decision, DESIGN §3.3); None when
    # the relaxation rests on evidence, or (a schema-1 relaxation) the person is unknown.
    person: str | None = None


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
    name: str = field(validator=nonempty)
    # The op manifest's knobs the point tunes (R7); added later, left out while empty.
    knobs: tuple[str, ...] = ()


@frozen
class PointClosed:
    """An optimization point was closed: exhausted, not applicable, or by the agent (R7)."""

    TYPE: ClassVar[str] = "point.closed"
    SCHEMA: ClassVar[int] = 1
    stage: Stage
    name: str
    outcome: Literal["exhausted", "not-applicable", "closed"]
    reason: str = field(validator=nonempty)


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
    config: dict[str, Any] = field(converter=json_object)
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
    # Schema 2 adds `device` (issue 29); a schema-1 measurement is read with device unknown.
    SCHEMA: ClassVar[int] = 2
    attempt: str
    outputs: tuple[OutputCheck, ...] = field(converter=sorted_outputs)
    layout_exit: int = field(converter=integer)
    times_us: tuple[float, ...] = field(converter=positive_times)
    origin: Origin
    util_pct: float | None = field(default=None, converter=percent_or_none)
    bubble_pct: float | None = field(default=None, converter=percent_or_none)
    metrics: dict[str, float] = field(factory=dict, converter=metrics)
    # What the verifier says it ran; checked against the attempt before recording (R11).
    binding: Binding | None = None
    # Where outputs and layout exit came from when not from `origin`'s run (accuracy and
    # performance measured apart, e.g. typed-in compare results beside a PyPTO perf folder).
    accuracy_origin: Origin | None = None
    # The device it ran on; None: unknown. A verdict never compares two devices (R8).
    device: Device | None = None


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
    best_median_us: float = field(converter=positive_time)
    attempt_median_us: float = field(converter=positive_time)
    ratio: float | None = field(converter=float_or_none)
    low: float | None = field(default=None, converter=float_or_none)
    high: float | None = field(default=None, converter=float_or_none)
    threshold: float | None = field(default=None, converter=float_or_none)
    seed: int | None = None
    policy: dict[str, Any] = field(factory=dict)


@frozen
class BestRemeasured:
    """The best's config measured again on another device (issue 29): that measurement is the
    best from here on, so later verdicts compare measurements of one device (R8). Written with
    the attempt's `attempt.measured`, instead of a verdict: no speed is claimed."""

    TYPE: ClassVar[str] = "best.remeasured"
    SCHEMA: ClassVar[int] = 1
    attempt: str
    previous: str | None  # the best it stands for: an attempt id, None for the baseline


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
    reason: str = field(validator=nonempty)


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


# --- protocol fidelity (issue 15 items 6, 8): how a stopped campaign ends or goes on ---------


@frozen
class CampaignHandedBack:
    """The stopped campaign's result was handed back to the orchestrator with its report (R10)."""

    TYPE: ClassVar[str] = "campaign.handed_back"
    SCHEMA: ClassVar[int] = 1
    stop: str  # the stop's reason, as campaign.stopped recorded it
    report: str = field(validator=nonempty)
    summary: str = ""


@frozen
class CampaignResumed:
    """The user lifted a utilization stop, or a person a budget stop; tuning goes on (R10)."""

    TYPE: ClassVar[str] = "campaign.resumed"
    # Schema 2 (issue 27) added `person`; a schema-1 resume reads with person None (unknown).
    SCHEMA: ClassVar[int] = 2
    lifted: str
    reason: str = field(validator=nonempty)
    # The person who decided (lifting a budget stop needs one, DESIGN §3.3); None otherwise.
    person: str | None = None


# --- end of the protocol fidelity block ------------------------------------------------------
