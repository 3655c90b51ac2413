"""The replayed state of one op's campaign: everything the stage machines decide from.

State is an accumulator, not a value: `evolve` (ledger/domain/replay.py) updates it in place,
so replaying N events costs O(N) rather than copying growing collections at every step. A State
belongs to the one replay that builds it; to know the state at two points of a log, replay twice.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, MutableMapping
from typing import TYPE_CHECKING, Any, Protocol

import attrs
from attrs import define, field

from ledger.log import codec

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


def _as_dict(value: dict[str, Any] | str) -> dict[str, Any]:
    """A mapping held as a dict, or as its JSON text (see `compact_attempts`), as a dict."""
    return value if isinstance(value, dict) else codec.loads(value)


@define
class Measurement:
    """A verified attempt's (or the baseline's) measured data."""

    times_us: tuple[float, ...]
    median_us: float
    util_pct: float | None
    bubble_pct: float | None
    origin_level: str
    # The metrics as recorded: a dict, or its JSON text once compacted (read `metrics`).
    _metrics: dict[str, float] | str = field(factory=dict, eq=_as_dict)
    all_close: bool = True
    layout_exit: int = 0
    # The device it ran on, as recorded (plain data); None: unknown (ledger/domain/devices.py).
    device: dict[str, Any] | None = None

    @property
    def metrics(self) -> dict[str, float]:
        """The measured metrics (a new dict on each read when they are held as text)."""
        return _as_dict(self._metrics)

    @metrics.setter
    def metrics(self, metrics: dict[str, float]) -> None:
        self._metrics = metrics

    def hold_metrics_text(self, text: str) -> None:
        """Hold the metrics as `text`, their JSON text (ledger/domain/compact_attempts.py)."""
        self._metrics = text


@define
class Attempt:
    """One measured change, from start to its verdict or failure (R5-R9)."""

    id: str
    seq: int
    kind: str
    stage: str
    point: str | None
    # The config as recorded: a dict, or its JSON text once compacted (read `config`).
    _config: dict[str, Any] | str = field(eq=_as_dict)
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

    @property
    def config(self) -> dict[str, Any]:
        """The config this attempt measures (a new dict on each read when it is held as text:
        configs are values, never edited in place)."""
        config = self._config  # _as_dict, inlined: replay reads it once per measured attempt
        return config if isinstance(config, dict) else codec.loads(config)

    @config.setter
    def config(self, config: dict[str, Any]) -> None:
        self._config = config

    def hold_config_text(self, text: str) -> None:
        """Hold the config as `text`, its JSON text (ledger/domain/compact_attempts.py)."""
        self._config = text


class AttemptValues(Protocol):
    """The attempts of an `AttemptMap`, in the order they were started, readable from the end."""

    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Attempt]: ...
    def __reversed__(self) -> Iterator[Attempt]: ...


class AttemptMap(Protocol):
    """`State.attempts`: attempt id -> Attempt, in the order they were started.

    A plain dict, as replay builds it; a state restored from the snapshot holds a map that
    unpickles its attempts as they are read (ledger/domain/lazy_attempts.py). These are the
    operations the code uses; both provide them with a dict's meaning."""

    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[str]: ...
    def __contains__(self, key: object, /) -> bool: ...
    def __getitem__(self, key: str, /) -> Attempt: ...
    def __setitem__(self, key: str, value: Attempt, /) -> None: ...
    def get(self, key: str, /) -> Attempt | None: ...
    def values(self) -> AttemptValues: ...


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


def _no_attempts() -> dict[str, Attempt]:
    return {}


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
    attempts: AttemptMap = field(factory=_no_attempts)
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
    # R9: canonical config JSON -> attempt id that measured it ("baseline" for the sheet); a
    # dict, as replay builds it, or a map restored from the snapshot that looks keys up by
    # digest and loads their texts when iterated (ledger/domain/lazy_measured.py)
    measured_configs: MutableMapping[str, str] = field(factory=dict)
    # R3: the config the baseline was measured with (kept to re-key it under a new manifest)
    baseline_config: dict[str, Any] = field(factory=dict)
    overrides: list[tuple[str, str]] = field(factory=list)  # (attempt id, reason)
    # R4: the event ids of reports, and whether one was generated after incore exited
    reports: list[str] = field(factory=list)
    # R4: how many attempts had started when the latest report was generated (a hand-back
    # needs a report that covers every attempt)
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
    # R10: the user's reasons for each utilization stop they lifted, in order
    resumed: list[str] = field(factory=list)
    # what replay saw of merged branches' steps (stages/conflicts.py decides the conflicts)
    merge: MergeFacts = field(factory=MergeFacts)
    # --idempotency-key -> the events the keyed command appended (DESIGN §5: a retry returns
    # them instead of appending again); only keyed events are kept, not the whole log.
    keyed: dict[str, list[Event]] = field(factory=dict)
    # Bumped when an attempt that had already finished, or a point that was closed, changes
    # again (only merged branches do that): work derived from the finished attempts and closed
    # points and kept in `derived` is then redone.
    finished_revision: int = 0
    # Derived data the projections keep between renderings of this same accumulator, so a
    # warm OpLedger (the MCP server), or a process starting from the state snapshot that
    # carries it, renders in time that does not grow with the ledger.
    # Never part of what the state is: not compared, not shown.
    derived: dict[str, Any] = field(factory=dict, eq=False, repr=False)


# --- pickling ------------------------------------------------------------------------------
# A State may be kept on disk between processes (ledger/shell/state_snapshot.py, a disposable
# cache). attrs' slotted classes pickle through a Python `__setstate__` that sets each field
# in turn; rebuilding each object with one positional call to its own `__init__` loads a
# 32k-attempt state in about 60% of the time (0.15 vs 0.24 s, measured at 100k events).
def _pickled_by_position(cls: type, *, skip: tuple[str, ...] = ()) -> None:
    names = [a.name for a in attrs.fields(cls) if a.name not in skip]
    # Only trailing fields may be skipped: the positional call must line up with __init__.
    assert [a.name for a in attrs.fields(cls)][: len(names)] == names
    values = operator.attrgetter(*names)

    def reduce(self: Any) -> tuple[type, tuple[Any, ...]]:
        return cls, values(self)

    cls.__reduce__ = reduce  # type: ignore[assignment,method-assign]


for _cls in (
    Evidence,
    TargetSheet,
    Relaxation,
    Measurement,
    Attempt,
    Point,
    Best,
    RecordedManifest,
    Adoption,
    MergeFacts,
):
    _pickled_by_position(_cls)
# `derived` is pickled with the state it was computed from: what projections keep there is a
# cache of pure functions of this accumulator, extended from the tail as it grows, and one
# pickle keeps the identity of the attempts and points it refers to. A snapshot without it
# made every process rebuild MEMORY.md's walk over all attempts (0.3 s of a write at 100k).
_pickled_by_position(State)
