"""The replayed state of one op's campaign: everything the stage machines decide from (an
accumulator that `evolve` updates in place: ledger/domain/replay.py says why)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from attrs import define, field

from ledger.log.position import Position

if TYPE_CHECKING:
    from ledger.log.record import Event


@define
class Evidence:
    """The latest accuracy evidence of one kind (R1)."""

    event: str
    impl_digest: str
    impl_path: str
    passed: bool
    # compare: [{"name", "all_close", "max_diff"}]; layout: []
    outputs: list[dict[str, Any]] = field(factory=list)
    exit_code: int | None = None
    origin_level: str = "reported"


@define
class TargetSheet:
    """The Performance target sheet (R3)."""

    event: str
    baseline_us: float
    shape: str
    target_us: float
    target_source: str
    source_ref: str | None
    metric: str
    cube_m: int | None
    tool: str | None
    origin_level: str
    # When the sheet was recorded (its event's provenance time): where the wall-clock budget
    # of the campaign starts (R10)
    at: str | None = None
    # How the target came to the sheet when the ledger measured it (R3's fallbacks)
    target_origin_level: str | None = None
    # The device the baseline ran on, as recorded (plain data); None: unknown.
    device: dict[str, Any] | None = None

    @property
    def required_speedup(self) -> float:
        """Baseline / Target: how many times faster the kernel must become (R3)."""
        return self.baseline_us / self.target_us


@define
class Relaxation:
    """A tile-limit relaxation with its basis (R3)."""

    event: str
    what: str
    limit: Any
    basis: str
    # The measured attempts it rests on (issue 27), and the person who relaxed without any.
    evidence: tuple[str, ...] = ()
    person: str | None = None


@define
class PersonAct:
    """A step that may be a person's decision (DESIGN §3.3), as recorded: every policy change
    after init (whether it lowered a guard is stages.person's call), every relaxation without
    evidence, resumed stop and accepted rollback. `person` None: not given (unknown for events
    written before issue 27)."""

    event: str
    kind: str  # "policy", "relax", "resume-campaign", "accept-rollback"
    what: str
    reason: str
    person: str | None
    # policy only: the key, the value in force before, and the value set
    key: str | None = None
    before: Any = None
    value: Any = None


@define
class Measurement:
    """A verified attempt's (or the baseline's) measured data."""

    times_us: tuple[float, ...]
    median_us: float
    util_pct: float | None
    bubble_pct: float | None
    origin_level: str
    metrics: dict[str, float] = field(factory=dict)
    all_close: bool = True
    layout_exit: int = 0
    # The device it ran on, as recorded (plain data); None: unknown (ledger/domain/devices.py).
    device: dict[str, Any] | None = None
    # The declared verifier's digest it was measured with (R8: a verdict compares only
    # measurements of one verifier); None when not measured by the declared verifier.
    verifier_digest: str | None = None


@define
class Attempt:
    """One measured change, from start to its verdict or failure (R5-R9)."""

    id: str
    seq: int
    kind: str
    stage: str
    point: str | None
    config: dict[str, Any]
    param: str | None = None
    value: Any = None
    prior: str | None = None
    description: str | None = None
    impl_digest: str | None = None
    retry_override: str | None = None
    # pending -> verified | failed | abandoned
    status: str = "pending"
    verdict: str | None = None
    failure: str | None = None
    detail: str = ""
    measurement: Measurement | None = None
    # The best's median time the verdict compared this attempt with (R8), as recorded; not
    # the verdict's whole statistics, which stay in the ledger (audit re-derives from there).
    compared_us: float | None = None
    # The best the verdict compared it with: an attempt id, None for the baseline (R8); it
    # leads back to the best two merged branches last shared (DESIGN §8, "re-measure both").
    compared_best: str | None = None


@define
class Point:
    """An optimization point of a stage and its constrained-search progress (R7)."""

    stage: str
    name: str
    is_open: bool = True
    outcome: str | None = None
    reason: str = ""
    # Consecutive mutations without gain; failures do not count (R7).
    streak: int = 0
    candidates: int = 0
    mutations: int = 0
    attempts: list[str] = field(factory=list)
    # The manifest's knobs this point tunes (R7); empty: any (an op without a manifest)
    knobs: list[str] = field(factory=list)


@define
class Best:
    """The adopted config and its measurement; every new attempt is compared with it (R8)."""

    config: dict[str, Any]
    measurement: Measurement
    attempt: str | None  # None: the baseline of the target sheet

    @property
    def time_us(self) -> float:
        """The best's median time in µs."""
        return self.measurement.median_us


@define
class RecordedManifest:
    """The op manifest the campaign uses (DESIGN §4): its digest and what the deciders need."""

    event: str
    digest: str
    source: str
    declared: dict[str, Any]
    # Recorded as in force by its presence (issue 27): only measured values count under it.
    measured_only: bool = False

    @property
    def knobs(self) -> dict[str, dict[str, Any]]:
        """Each declared knob's spec: stage, kind or domain, default."""
        knobs = self.declared.get("knobs") or {}
        return {str(k): dict(v) for k, v in knobs.items() if isinstance(v, dict)}

    def defaults(self) -> dict[str, Any]:
        """Each knob's default value (a config leaves a knob at its default when it omits it)."""
        return {name: spec.get("default") for name, spec in self.knobs.items()}

    @property
    def has_verifier(self) -> bool:
        """True when the manifest declares the command that measures a config (R11)."""
        return self.declared.get("verifier") is not None


@define
class Adoption:
    """An adopted attempt, the best its verdict compared it with (its branch's best), and the
    best replay held when it came (R8); the two differ only where merged branches each
    adopted a best. None is the baseline."""

    attempt: str
    against: str | None
    held: str | None


@define
class MergeFacts:
    """What replay saw of steps that only merged branches combine (DESIGN §8), as facts:
    which combinations break a rule is decided by stages/conflicts.py."""

    # R10: (attempt, stop reason): attempts started while the campaign was stopped, and the
    # attempt pending when it stopped (on one branch, the stop abandons it in its own batch)
    started_after_stop: list[tuple[str, str]] = field(factory=list)
    pending_at_stop: list[tuple[str, str]] = field(factory=list)
    # R4: (stage of a step, the later stage current then): steps of a stage behind
    steps_behind: list[tuple[str, str]] = field(factory=list)
    # R3: target sheets (event id, 12 hex) written after attempts were adopted
    sheets_after_adopt: list[str] = field(factory=list)
    # R7: points opened again while they existed
    reopened_points: list[str] = field(factory=list)
    # R6: (attempt, status it had, status it got again)
    finished_twice: list[tuple[str, str, str]] = field(factory=list)
    # R8: every adoption, in order
    adoptions: list[Adoption] = field(factory=list)
    # conflict id -> the resolution a `conflict.resolved` event recorded for it
    resolved: dict[str, str] = field(factory=dict)


@define
class State:
    """Everything replay knows about one op's campaign."""

    op: str | None = None
    event_count: int = 0
    last_event: str | None = None
    # R1
    compare: Evidence | None = None
    layout: Evidence | None = None
    activated: bool = False
    activation_digest: str | None = None
    handed_back: bool = False
    activation_problems: list[str] = field(factory=list)
    # R2
    skills: list[str] = field(factory=list)
    # DESIGN §4: the op manifest in use, and the digests of every one recorded, in order
    manifest: RecordedManifest | None = None
    manifests: list[str] = field(factory=list)
    # R3
    target: TargetSheet | None = None
    relaxations: list[Relaxation] = field(factory=list)
    # R3, DESIGN §8: per limit ("vec", "cube"), the relaxations no later one supersedes, in
    # order; more than one only where merged branches relaxed it apart
    relaxation_tips: dict[str, list[str]] = field(factory=dict)
    # R4
    stage: str | None = None
    entered: list[str] = field(factory=list)
    exited: dict[str, str] = field(factory=dict)  # stage -> exit condition
    # R7
    points: dict[str, Point] = field(factory=dict)
    open_point: str | None = None
    open_points: int = 0  # more than one only where merged branches each opened one
    # R6, R8
    attempts: dict[str, Attempt] = field(factory=dict)
    pending: str | None = None
    pending_count: int = 0  # more than one only where merged branches each started one
    best: Best | None = None
    # The first best, from the target sheet: where re-measuring two bests starts when the
    # branches last shared the baseline (DESIGN §8)
    baseline_best: Best | None = None
    # "re-measure both" (DESIGN §8): each of two competing bests -> the attempt re-measuring
    # its config (None until one is started, or after it was abandoned)
    remeasure: dict[str, str | None] = field(factory=dict)
    adopted: list[str] = field(factory=list)  # attempt ids, in order of adoption
    # R9: canonical config JSON -> attempt id that measured it ("baseline" for the sheet)
    measured_configs: dict[str, str] = field(factory=dict)
    # R3: the config the baseline was measured with (kept to re-key it under a new manifest)
    baseline_config: dict[str, Any] = field(factory=dict)
    overrides: list[tuple[str, str]] = field(factory=list)  # (attempt id, reason)
    # R4: how many attempts had started when the latest report was generated (a hand-back
    # needs a report that covers every attempt), and whether one came after incore exited
    attempts_at_report: int = -1
    report_after_incore: bool = False
    # R10
    stopped: str | None = None
    stop_detail: str = ""
    # R10 budgets (issue 29.5), from recorded data only: verifier results recorded (measured or
    # failed), the durations of the verifier runs made for them (cache hits aside, their runs
    # were made earlier), and when the latest attempt started (its event's provenance time)
    evaluations: int = 0
    device_seconds: float = 0.0
    last_started_at: str | None = None
    # R10: the path of a report generated since the latest stop (the hand-back carries it),
    # and the hand-back itself ({"report", "summary"}) once recorded
    stop_report: str | None = None
    handback: dict[str, str] | None = None
    # policy values set by events (defaults live in stages.policy)
    policy: dict[str, Any] = field(factory=dict)
    # the defaults pinned at init, and the reason recorded with each later policy.set (R10:
    # every policy that differs from the pinned defaults is shown with its reason)
    policy_defaults: dict[str, Any] = field(factory=dict)
    policy_reasons: dict[str, str] = field(factory=dict)
    notes: list[str] = field(factory=list)
    repairs: list[dict[str, Any]] = field(factory=list)
    # the event ids a person accepted as lost from the ledger (ledger.rollback_accepted)
    rollbacks_accepted: list[str] = field(factory=list)
    # the steps that may be a person's decision, in ledger order (stages/person.py)
    person_acts: list[PersonAct] = field(factory=list)
    # what replay saw of merged branches' steps (stages/conflicts.py decides the conflicts)
    merge: MergeFacts = field(factory=MergeFacts)
    # --idempotency-key -> the events the keyed command appended (DESIGN §5: a retry returns
    # them instead of appending again); only keyed events are kept, not the whole log.
    keyed: dict[str, list[Event]] = field(factory=dict)

    @property
    def position(self) -> Position:
        """Where the replayed ledger ends: how many events, and the last one's id."""
        return Position(events=self.event_count, last=self.last_event or "")
