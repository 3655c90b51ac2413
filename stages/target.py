"""R3 Target sheet: baseline, target and source, tile-shape upper limits, config validation."""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise
from typing import TYPE_CHECKING, Any, NamedTuple, get_args

from ledger.domain.hints import TEXT, Fill, Step
from ledger.domain.samples import median
from ledger.domain.state import Relaxation, State
from ledger.errors import BadInput
from ledger.schema.events import LimitRelaxed, TargetSheetWritten, TargetSource
from stages.outcome import Result, accept, build, nonempty, plain, refuse
from stages.person import person_name
from stages.policy import measured_only
from stages.refusal import Refusal

if TYPE_CHECKING:  # annotations only: priors reads the limits, not the commands (~5 ms)
    from stages.commands import Relax, SetTarget

VEC_LIMIT = 64
# The design range of a vec tile axis; its top is the limit the ledger enforces until relaxed.
VEC_DESIGN_RANGE = (16, VEC_LIMIT)
# Cube tile upper limits [[mL0, mL1], [kL0, kL1], [nL0, nL1]] by M (DESIGN §3 R3). None stands
# for the table's "K": the full K dimension, which the sheet does not record, so no bound here.
# M = 1 reads "[16, K, 256]" as kL0 <= 16 and kL1 <= 256 (K, capped at 256).
CubeLimit = tuple[tuple[int | None, int | None], ...]


class CubeRow(NamedTuple):
    """A row of the M-based cube tile table: M from `m_min` to `m_max` (None: no top) (R3)."""

    m_min: int
    m_max: int | None
    limit: CubeLimit


# The design's 16-31 row starts at 2 here: the cube unit pads an M of 2..15 to 16, so the
# design table, which has no row for such M, bounds them by that row. The built-in priors
# offer these rows as cube tiles (ledger/priors/knowledge.py).
CUBE_TABLE: tuple[CubeRow, ...] = (
    CubeRow(64, None, ((128, 128), (64, 256), (256, 256))),
    CubeRow(32, 63, ((64, 64), (64, 256), (128, 128))),
    CubeRow(2, 31, ((16, 16), (16, None), (128, 128))),
    CubeRow(1, 1, ((16, 16), (16, 256), (256, 256))),
)
_AXES = ("m", "k", "n")


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _int_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(_positive_int(v) for v in value)


def _cube_shape(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) == len(_AXES)
        and all(
            isinstance(pair, list) and len(pair) == 2 and all(_positive_int(v) for v in pair)
            for pair in value
        )
    )


def validate_config(config: Any, what: str = "config") -> dict[str, Any]:
    """The config as plain JSON; BadInput when a key the ledger knows is malformed (R3)."""
    if not isinstance(config, dict):
        raise BadInput(f"{what} must be a JSON object, got {config!r}")
    value: dict[str, Any] = plain(config, what)
    vec = value.get("vec_tile_shape")
    if "vec_tile_shape" in value and not _int_list(vec):
        raise BadInput(f"{what}: vec_tile_shape must be a list of positive ints, got {vec!r}")
    cube = value.get("cube_tile_shape")
    if "cube_tile_shape" in value and not _cube_shape(cube):
        raise BadInput(
            f"{what}: cube_tile_shape must be [[mL0,mL1],[kL0,kL1],[nL0,nL1]] of "
            f"positive ints, got {cube!r}"
        )
    unroll = value.get("unroll_list", [])
    if "unroll_list" in value and not (
        _int_list(unroll) and all(a > b for a, b in pairwise(unroll))
    ):
        raise BadInput(
            f"{what}: unroll_list must be strictly descending positive ints, got {unroll!r}"
        )
    return value


def cube_table_row(cube_m: int) -> CubeRow | None:
    """The row of the M-based cube tile table that holds M = `cube_m`; None for M < 1 (R3)."""
    for row in CUBE_TABLE:
        if row.m_min <= cube_m and (row.m_max is None or cube_m <= row.m_max):
            return row
    return None


def cube_row(cube_m: int) -> CubeLimit | None:
    """The cube tile upper limits the M-based table gives for M = `cube_m` (R3)."""
    row = cube_table_row(cube_m)
    return row.limit if row else None


def latest_relaxation(state: State, what: str) -> Relaxation | None:
    """The relaxation of the `what` ("vec" or "cube") limit in force: the latest one (R3)."""
    relaxed = [r for r in state.relaxations if r.what == what]
    return relaxed[-1] if relaxed else None


def vec_limit(state: State) -> int:
    """The per-axis vec tile upper limit: 64, or the latest recorded relaxation (R3)."""
    relaxed = latest_relaxation(state, "vec")
    return int(relaxed.limit) if relaxed else VEC_LIMIT


def cube_limit(state: State, cube_m: int | None) -> CubeLimit | None:
    """The cube tile upper limits: the latest relaxation, else the table row of M (R3)."""
    relaxed = latest_relaxation(state, "cube")
    if relaxed:
        return tuple((int(a), int(b)) for a, b in relaxed.limit)
    return cube_row(cube_m) if cube_m is not None else None


def _relax_step(op: str | None) -> Step:
    return Step("relax", op, what=Fill("vec|cube"), limit=Fill("LIMIT"), basis=Fill("BASIS"),
                evidence=[Fill("ATTEMPT")])  # fmt: skip


def _beyond(what: str, detail: str, op: str | None) -> Refusal:
    return refuse(
        "R3",
        f"{what} is beyond the tile-shape upper limit: {detail}",
        detail,
        "choose tiles within the limits, or relax the limit on measured attempts "
        f"({_relax_step(op)})",
    )


def limit_refusal(
    state: State, config: dict[str, Any], what: str, cube_m: int | None
) -> Refusal | None:
    """Refuse a config whose tiles exceed an unrelaxed upper limit (R3), else None."""
    vec = config.get("vec_tile_shape")
    if isinstance(vec, list):
        limit = vec_limit(state)
        over = [(i, v) for i, v in enumerate(vec) if v > limit]
        if over:
            index, size = over[0]
            return _beyond(what, f"vec_tile_shape axis {index} is {size} > {limit}", state.op)
    cube = config.get("cube_tile_shape")
    limits = cube_limit(state, cube_m)
    if isinstance(cube, list) and limits is not None:
        for axis, pair, bounds in zip(_AXES, cube, limits, strict=True):
            for level, size, bound in zip(("L0", "L1"), pair, bounds, strict=True):
                if bound is not None and size > bound:
                    return _beyond(
                        what,
                        f"cube_tile_shape {axis}{level} is {size} > {bound}"
                        + (f" (M = {cube_m})" if cube_m is not None else ""),
                        state.op,
                    )
    return None


def _samples(
    values: Sequence[Any], baseline_us: float, what: str = "baseline"
) -> tuple[float, ...]:
    samples: list[float] = []
    for value in values:
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not (math.isfinite(value) and value > 0)
        ):
            raise BadInput(f"a {what} sample must be a finite time > 0, got {value!r}")
        samples.append(float(value))
    if samples and not math.isclose(median(samples), baseline_us, rel_tol=1e-9):
        raise BadInput(
            f"the {what} {baseline_us} µs is not the median of its samples ({median(samples)} µs)"
        )
    return tuple(samples)


def decide_target(state: State, command: SetTarget) -> Result:
    """Write the Performance target sheet before any stage is entered (R3)."""
    if state.entered:
        return refuse(
            "R3",
            "the target sheet is fixed once tuning has started",
            f"stage {state.entered[0]} was entered",
            "keep the recorded sheet",
        )
    if command.target_source not in get_args(TargetSource):
        raise BadInput(
            f"unknown target source {command.target_source!r}",
            hint="spec, upstream or torch-eager (in this order of precedence)",
        )
    if command.cube_m is not None and not _positive_int(command.cube_m):
        raise BadInput(f"M must be a positive integer, got {command.cube_m!r}")
    if measured_only(state) and command.origin.level != "measured":
        return refuse(
            "R11",
            f"the target sheet's baseline must be measured by the op's verifier, not "
            f"{command.origin.level}",
            "SPEC.md declares a verifier, so policy require_measured is on",
            f"let the ledger measure the baseline: {Step('target', state.op, from_spec=True)}",
        )
    config = validate_config(command.config, "the baseline config")
    sheet = build(
        TargetSheetWritten,
        "target sheet",
        baseline_us=command.baseline_us,
        shape=command.shape,
        target_us=command.target_us,
        target_source=command.target_source,
        source_ref=command.source_ref,
        config=config,
        origin=command.origin,
        metric=command.metric,
        cube_m=command.cube_m,
        baseline_samples_us=_samples(command.baseline_samples_us, float(command.baseline_us)),
        util_pct=command.util_pct,
        bubble_pct=command.bubble_pct,
        device=command.device,
        target_origin=command.target_origin,
        target_samples_us=_samples(command.target_samples_us, float(command.target_us), "target"),
    )
    # Derived values are checked like recorded ones: the views print this ratio (R11).
    if not math.isfinite(sheet.baseline_us / sheet.target_us):
        raise BadInput(
            f"the required speedup {sheet.baseline_us:g} µs / {sheet.target_us:g} µs is not "
            "a finite number",
            hint="give a baseline and a target of realistic size (for example 100us and 50us)",
        )
    beyond = limit_refusal(state, config, "the baseline config", command.cube_m)
    if beyond is not None:
        return beyond
    warnings = []
    if sheet.baseline_us <= sheet.target_us:
        warnings.append(
            "the baseline already meets the target (required speedup "
            f"{sheet.baseline_us / sheet.target_us:.2f}x, Baseline/Target): "
            "consider stopping the campaign"
        )
    return accept(sheet, warnings=warnings)


def _relaxed_limit(what: str, limit: Any) -> Any:
    if what == "vec":
        if not _positive_int(limit) or limit <= VEC_LIMIT:
            raise BadInput(
                f"a vec limit relaxation must be an integer above {VEC_LIMIT}, got {limit!r}"
            )
        return limit
    if what == "cube":
        value = plain(limit, "the cube limit")
        if not _cube_shape(value):
            raise BadInput(
                "a cube limit must be [[mL0,mL1],[kL0,kL1],[nL0,nL1]] of positive "
                f"ints, got {limit!r}"
            )
        return value
    raise BadInput(f"unknown limit {what!r}: vec or cube")


def decide_relax(state: State, command: Relax) -> Result:
    """Relax a tile-shape upper limit, recording its basis and the relaxations it supersedes
    (R3; the premise tells a merge of two branches' relaxations from a sequence, DESIGN §8)."""
    limit = _relaxed_limit(command.what, command.limit)
    nonempty(command.basis, "the relaxation's basis")
    evidence = tuple(dict.fromkeys(command.evidence))  # each attempt once, in the order given
    person = person_name(command.person)
    refusal = None if command.legacy else _evidence_refusal(state, command, evidence, person)
    if refusal is not None:
        return refusal
    tips = state.relaxation_tips.get(command.what, [])
    supersedes = tuple(tips) if command.record_premise else None
    return accept(
        build(
            LimitRelaxed,
            "relaxation",
            what=command.what,
            limit=limit,
            basis=command.basis,
            supersedes=supersedes,
            evidence=evidence,
            # A person signs a relaxation without evidence; with evidence, who asked is no
            # decision of theirs to record, but a name given is kept.
            person=person,
        )
    )


def _evidence_refusal(
    state: State, command: Relax, evidence: tuple[str, ...], person: str | None
) -> Refusal | None:
    """R3: a relaxation rests on measured attempts of this op (the seed's "based on profiling
    data"); without any it is a person's decision. BadInput names an attempt this op does not
    have; a refusal names one that was not measured by the ledger."""
    op = state.op or "OP"
    for attempt_id in evidence:
        attempt = state.attempts.get(attempt_id)
        if attempt is None:
            raise BadInput(
                f"--evidence {attempt_id}: op {op} has no such attempt",
                hint=f"name a measured attempt of {op}: tune-ledger log {op} lists them",
            )
        level = attempt.measurement.origin_level if attempt.measurement else None
        if level != "measured":
            fact = (
                f"attempt {attempt_id} is {attempt.status}, without a measurement"
                if level is None
                else f"attempt {attempt_id}'s times are {level}, not measured by the ledger"
            )
            return refuse(
                "R3",
                f"a relaxation rests on measured attempts of {op}; {attempt_id} is not one",
                fact,
                f"measure it with the op's verifier (tune-ledger measure {op} {attempt_id}), "
                "or name another measured attempt",
            )
    if evidence or person is not None:
        return None
    return refuse(
        "R3",
        "a relaxation of a tile limit is based on profiling data: name the measured attempts "
        "it rests on",
        "no evidence attempt was named",
        "measure an attempt at the current limit with the op's verifier "
        f"({Step('measure', op, attempt=Fill('ATTEMPT'))}), then relax naming it: "
        + str(
            Step(
                "relax",
                op,
                what=command.what,
                limit=Fill("LIMIT"),
                basis=TEXT,
                evidence=[Fill("ATTEMPT")],
            )
        )
        + "; relaxing without evidence is a person's decision (the CLI's --person NAME)",
    )
