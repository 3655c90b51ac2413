"""The autopilot's search space, read from the op manifest: points, mutations, relaxations.

This is the agent's side of constrained search (the ledger only gates and judges): each knob
of SPEC.md's manifest is one optimization point of its stage, in manifest order; its kind or
domain says which neighbours of the best config a mutation may try; measured data says when a
tile limit may be relaxed. Nothing here names an op or a knob of one op.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from attrs import frozen

from ledger.domain.keys import measured_key
from ledger.domain.knobs import Knob
from ledger.domain.manifest import Manifest
from ledger.domain.state import Attempt, State
from ledger.errors import BadInput
from ledger.log import codec
from ledger.shell.manifest_file import read_front_matter_of, read_manifest
from stages import commands as cmd
from stages.target import VEC_LIMIT

# A relaxation needs a measured trend: growing a tile axis gave at least this speed-up.
RELAX_MIN_GAIN = 1.10
# Typical unroll lists of production kernels (PYPTO.md), tried for an int-list knob.
UNROLL_LISTS = ([2, 1], [4, 1], [4, 2, 1], [8, 4, 2, 1], [8, 1], [16, 4, 1])
# Buffer counts tried for a pass option map ({merge group: count}; -1: every group).
BUFFER_COUNTS = (1, 2, 4)


@frozen
class Spec:
    """What the autopilot reads from the manifest about the measured problem."""

    shape: list[int]
    target_us: float
    cube_m: int | None = None


@frozen
class Space:
    """One op's search space."""

    spec: Spec
    baseline_config: dict[str, Any]
    knobs: dict[str, Knob]

    def points(self, stage: str) -> tuple[str, ...]:
        """The optimization points the stage opens, in manifest order: one per knob."""
        return tuple(name for name, knob in self.knobs.items() if knob.stage == stage)

    def candidates(
        self, state: State, root: Path, op: str, point: str
    ) -> Iterator[tuple[dict[str, Any], str]]:
        """Full configs proposed by the priors for the point, with their provenance (R7)."""
        from ledger.shell.priors_load import gather

        proposal = gather(root, op, point=point).proposal
        for candidate in proposal.candidates:
            yield dict(candidate.config), candidate.prior

    def mutations(self, state: State, point: str) -> Iterator[tuple[str, Any]]:
        """Single-parameter neighbours of the best config for the point (R6), untried first."""
        assert state.best is not None  # a stage is entered only after the target sheet
        best = state.best.config
        knob = self.knobs[point]
        current = best.get(point, knob.default)
        measured = state.measured_configs  # keyed with the manifest's defaults filled in (R9)
        for value in _neighbours(knob, current, self.spec.shape, vec_limit(state)):
            config = {**best, point: value}
            if knob.refusal(value) is None and measured_key(state, config) not in measured:
                yield point, value

    def relaxation(self, state: State, point: str) -> cmd.Relax | None:
        """Relax the vec limit when the best tile sits at it and growing tiles measured faster."""
        if point != "vec_tile_shape" or state.best is None:
            return None
        limit = vec_limit(state)
        tile = state.best.config.get("vec_tile_shape")
        if not isinstance(tile, list) or len(tile) != len(self.spec.shape):
            return None
        blocked = [
            i
            for i, (t, dim) in enumerate(zip(tile, self.spec.shape, strict=True))
            if t == limit and t * 2 <= dim
        ]
        growth = _growth_evidence(state)
        if not blocked or growth is None:
            return None
        evidence, attempt_id = growth
        new_limit = limit * 2
        return cmd.Relax(
            what="vec",
            limit=new_limit,
            basis=(
                f"measured: {evidence}; best tile {tile} sits at the limit {limit} on axis "
                f"{blocked[0]} of a {self.spec.shape[blocked[0]]}-wide dimension"
            ),
            # The measured attempt the relaxation rests on (R3, issue 27.5).
            evidence=(attempt_id,),
        )


def vec_limit(state: State) -> int:
    """The vec tile limit in force: the latest relaxation, else the design default (R3)."""
    limits = [r.limit for r in state.relaxations if r.what == "vec"]
    return int(limits[-1]) if limits else VEC_LIMIT


def _neighbours(knob: Knob, current: Any, shape: list[int], limit: int) -> Iterator[Any]:
    """Values one step away from `current`, by what the knob is."""
    if knob.domain is not None:
        yield from (v for v in knob.domain if v != current)
    elif knob.name == "vec_tile_shape" and isinstance(current, list):
        yield from _tile_neighbours(current, shape, limit)
    elif knob.name == "cube_tile_shape" and isinstance(current, list):
        yield from _cube_neighbours(current)
    elif knob.kind == "int-list":
        yield from (u for u in UNROLL_LISTS if u != current)
    elif knob.kind == "int":
        base = current if isinstance(current, int) else knob.default
        if isinstance(base, int):
            yield from (v for v in (base * 2, base * 4, base // 2) if v >= 1 and v != base)
    elif knob.kind == "json" and knob.name.endswith("nbuffer_setting"):
        yield from ({"-1": n} for n in BUFFER_COUNTS if {"-1": n} != current)


def _tile_neighbours(tile: list[int], shape: list[int], limit: int) -> Iterator[list[int]]:
    # Larger tiles first: fewer, bigger tasks are what the simulator rewards most.
    dims = shape if len(shape) == len(tile) else [max(tile) * 64] * len(tile)
    for grow in (True, False):
        for axis, (t, dim) in enumerate(zip(tile, dims, strict=True)):
            value = t * 2 if grow else t // 2
            if 1 <= value <= min(dim, limit) and value != t:
                yield [*tile[:axis], value, *tile[axis + 1 :]]


def _cube_neighbours(cube: list[Any]) -> Iterator[list[Any]]:
    # One of M, K, N at a time, both levels (L0, L1) together: larger first, as for vec tiles.
    for factor in (2, 0.5):
        for axis, pair in enumerate(cube):
            if isinstance(pair, list) and all(isinstance(v, int) for v in pair):
                scaled = [int(v * factor) for v in pair]
                if all(16 <= v <= 512 for v in scaled):
                    yield [*cube[:axis], scaled, *cube[axis + 1 :]]


def _growth_evidence(state: State) -> tuple[str, str] | None:
    """The latest measured gain from adopting a bigger vec tile, as a basis text, and the
    attempt that measured it (R3); only an attempt the ledger measured is evidence."""
    if state.target is None:
        return None
    previous_time = state.target.baseline_us
    previous_tile = _tile_of(state.measured_configs, "baseline")
    found: tuple[str, str] | None = None
    for attempt_id in state.adopted:
        attempt = state.attempts[attempt_id]
        if attempt.measurement is None:
            continue
        measured = attempt.measurement.origin_level == "measured"
        tile = attempt.config.get("vec_tile_shape")
        now = attempt.measurement.median_us
        if (
            isinstance(tile, list)
            and isinstance(previous_tile, list)
            and _volume(tile) > _volume(previous_tile)
        ):
            gain = previous_time / now
            # The latest growth is the trend the next relaxation extends.
            if gain >= RELAX_MIN_GAIN and measured:
                found = (
                    f"growing the vec tile {previous_tile} → {tile} (attempt "
                    f"{attempt.id}) cut the time {previous_time:.2f} → {now:.2f} µs "
                    f"({gain:.2f}×)",
                    attempt.id,
                )
        previous_time, previous_tile = now, tile
    return found


def _tile_of(measured: Mapping[str, str], attempt: str) -> Any:
    for key, who in measured.items():
        if who == attempt:
            return codec.loads(key).get("vec_tile_shape")
    return None


def _volume(tile: list[int]) -> int:
    volume = 1
    for axis in tile:
        volume *= axis
    return volume


def describe(attempt: Attempt) -> str:
    """A short description of an attempt's change."""
    if attempt.kind == "mutation":
        return f"{attempt.param}={codec.canonical_json(attempt.value)}"
    if attempt.kind == "candidate":
        return f"candidate ({attempt.prior})"
    return attempt.description or "algorithm change"


def load(op_dir: Path) -> Space:
    """The search space SPEC.md's manifest declares (its knobs, P0 shape, target, baseline)."""
    manifest: Manifest | None = read_manifest(op_dir)
    if manifest is None or manifest.p0_shape is None or manifest.target_us is None:
        raise BadInput(
            f"{op_dir}/SPEC.md declares no manifest with p0_shapes and perf_target",
            hint="the autopilot tunes what the manifest declares (docs/OP_FOLDER.md)",
        )
    if not manifest.knobs:
        raise BadInput(
            f"{op_dir}/SPEC.md declares no knobs: the autopilot has nothing to tune",
            hint="declare knobs: {NAME: {stage, kind or domain, default}} (docs/OP_FOLDER.md)",
        )
    cube_m = (read_front_matter_of(op_dir) or {}).get("cube_m")
    return Space(
        spec=Spec(
            shape=list(manifest.p0_shape),
            target_us=manifest.target_us,
            cube_m=cube_m if isinstance(cube_m, int) and cube_m > 0 else None,
        ),
        baseline_config=dict(manifest.baseline_config),
        knobs=dict(manifest.knobs),
    )
