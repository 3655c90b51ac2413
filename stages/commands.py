"""The commands an agent can give, as plain values; `stages.decide` turns each into events.

Each names the CLI command that gives it (`NAME`, the word `allowed` lists for it; `try` gives
both changes), as a payload names its event type.
"""

from __future__ import annotations

from typing import Any, ClassVar

from attrs import field, frozen

from ledger.schema.events import Binding, Device, Origin, OutputCheck


@frozen
class Init:
    """Create the op's ledger."""

    NAME: ClassVar[str] = "init"
    op: str


@frozen
class RecordCompare:
    """Record E2E tensor-compare evidence for the implementation with this digest (R1)."""

    NAME: ClassVar[str] = "evidence compare"
    outputs: tuple[OutputCheck, ...]
    impl_path: str
    impl_digest: str
    origin: Origin


@frozen
class RecordLayout:
    """Record a layout check's exit code for the implementation with this digest (R1)."""

    NAME: ClassVar[str] = "evidence layout"
    exit_code: int
    impl_path: str
    impl_digest: str
    origin: Origin


@frozen
class Activate:
    """Check the evidence against the current implementation digest (R1)."""

    NAME: ClassVar[str] = "activate"
    impl_digest: str


@frozen
class SetTarget:
    """Write the Performance target sheet (R3)."""

    NAME: ClassVar[str] = "target"
    baseline_us: float
    shape: str
    target_us: float
    target_source: str
    source_ref: str | None
    config: dict[str, Any]
    origin: Origin
    metric: str = "time"
    cube_m: int | None = None
    baseline_samples_us: tuple[float, ...] = ()
    util_pct: float | None = None
    bubble_pct: float | None = None
    device: Device | None = None  # where the baseline ran; None: unknown
    # A target measured by the ledger (R3's fallbacks): the run's provenance and samples.
    target_origin: Origin | None = None
    target_samples_us: tuple[float, ...] = ()


@frozen
class Relax:
    """Relax a tile-shape upper limit, with its basis (R3)."""

    NAME: ClassVar[str] = "relax"
    what: str
    limit: Any
    basis: str
    # False only when audit re-decides a relaxation recorded before relaxations named the one
    # they supersede (issue 18): it is then decided, and compared, without that field.
    record_premise: bool = True
    # The measured attempts of this op it rests on (R3), ids as the state holds them.
    evidence: tuple[str, ...] = ()
    # The person who relaxes without evidence (a person's decision); None for the agent.
    person: str | None = None
    # True only when audit re-decides a relaxation recorded before issue 27 (no evidence, the
    # person unknown): it is decided by the rules of its time.
    legacy: bool = False


@frozen
class LoadSkill:
    """Load a skill (R2)."""

    NAME: ClassVar[str] = "skill load"
    name: str


@frozen
class UnloadSkill:
    """Unload a skill (R2)."""

    NAME: ClassVar[str] = "skill unload"
    name: str


@frozen
class EnterStage:
    """Enter the next stage (R4)."""

    NAME: ClassVar[str] = "stage enter"
    stage: str


@frozen
class ExitStage:
    """Exit the current stage; `by_user` claims the user's stop as the exit condition (R4)."""

    NAME: ClassVar[str] = "stage exit"
    stage: str
    reason: str = ""
    by_user: bool = False
    # The algorithm stage hands the result back to the orchestrator with the report (R4).
    hand_back: bool = False


@frozen
class OpenPoint:
    """Open an optimization point in the current stage for named knobs (R5, R7)."""

    NAME: ClassVar[str] = "point open"
    name: str
    knobs: tuple[str, ...] = ()


@frozen
class ClosePoint:
    """Close the open optimization point (R7); not_applicable needs a reason."""

    NAME: ClassVar[str] = "point close"
    name: str
    reason: str
    not_applicable: bool = False


@frozen
class ProposeCandidate:
    """Measure a full config proposed from a prior (R7 candidate phase)."""

    NAME: ClassVar[str] = "candidate"
    config: dict[str, Any]
    prior: str
    override: str | None = None
    # The digest of the implementation on disk and its file, computed by the shell (R6:
    # a new attempt starts from the best); None skips the check.
    disk_digest: str | None = None
    impl_file: str | None = None


@frozen
class TryMutation:
    """Change exactly one parameter of the best config (R6, R7 mutation phase)."""

    NAME: ClassVar[str] = "try"
    param: str
    value: Any
    override: str | None = None
    disk_digest: str | None = None  # as for ProposeCandidate (R6)
    impl_file: str | None = None


@frozen
class TryAlgorithm:
    """Try an algorithm change, described in words, with the new implementation digest (R5)."""

    NAME: ClassVar[str] = "try"
    description: str
    impl_digest: str | None = None
    override: str | None = None


@frozen
class Verify:
    """Record the verifier's result for the pending attempt; the ledger computes the verdict."""

    NAME: ClassVar[str] = "verify"
    attempt: str
    outputs: tuple[OutputCheck, ...]
    layout_exit: int
    times_us: tuple[float, ...]
    origin: Origin
    util_pct: float | None = None
    bubble_pct: float | None = None
    metrics: dict[str, float] = field(factory=dict)
    # What the verifier says it ran (R11): refused when it is not the attempt's config/kernel.
    binding: Binding | None = None
    # Provenance of outputs and layout exit when they come from another source than the times.
    accuracy_origin: Origin | None = None
    # The device the verifier says it ran on; None: unknown (R8 compares only like devices).
    device: Device | None = None


@frozen
class Fail:
    """Record that the attempt failed (compile, timeout, oom, accuracy, runtime)."""

    NAME: ClassVar[str] = "fail"
    attempt: str
    category: str
    detail: str = ""
    origin: Origin | None = None


@frozen
class Abandon:
    """Give up a pending attempt without a result (e.g. interrupted by a crash)."""

    NAME: ClassVar[str] = "abandon"
    attempt: str
    reason: str


@frozen
class Stop:
    """The user stops the campaign (R10)."""

    NAME: ClassVar[str] = "stop"
    reason: str


@frozen
class HandBack:
    """Hand the stopped campaign's result back to the orchestrator with its report (R10)."""

    NAME: ClassVar[str] = "handback"
    summary: str = ""


@frozen
class ResumeCampaign:
    """A person lifts a utilization stop, or a budget stop once the budget no longer holds,
    and tuning goes on (R10): a person's decision."""

    NAME: ClassVar[str] = "resume-campaign"
    reason: str
    person: str | None = None
    # True only when audit re-decides a resume recorded before issue 27 (person unknown).
    legacy: bool = False


@frozen
class RecordReport:
    """Record that a tuning report was written (R4: needed before the algorithm stage)."""

    NAME: ClassVar[str] = "report"
    path: str
    digest: str


@frozen
class SetPolicy:
    """Set a policy threshold for this op; lowering a guard needs a person (DESIGN §3.3)."""

    NAME: ClassVar[str] = "policy"
    key: str
    value: Any
    reason: str = ""
    # Who decided: required to lower a guard, loosening a budget among them (DESIGN §3.3).
    person: str | None = None
    # True only when audit re-decides a policy.set recorded before issue 27 (person unknown).
    legacy: bool = False


@frozen
class AddNote:
    """Record free text."""

    NAME: ClassVar[str] = "note"
    text: str


@frozen
class RecordManifest:
    """Record SPEC.md's op manifest as the one the campaign uses from here on (DESIGN §4)."""

    NAME: ClassVar[str] = "manifest"
    digest: str
    source: str
    declared: dict[str, Any]
    measured_only: bool = True  # see ManifestRecorded.measured_only


Command = (
    Init
    | RecordCompare
    | RecordLayout
    | Activate
    | SetTarget
    | Relax
    | LoadSkill
    | UnloadSkill
    | EnterStage
    | ExitStage
    | OpenPoint
    | ClosePoint
    | ProposeCandidate
    | TryMutation
    | TryAlgorithm
    | Verify
    | Fail
    | Abandon
    | Stop
    | HandBack
    | ResumeCampaign
    | RecordReport
    | SetPolicy
    | AddNote
    | RecordManifest
)
