"""The autopilot's search space: points per stage, single-parameter mutations, relaxations.

This is the agent's side of constrained search (the ledger only gates and judges): which
optimization points each stage opens, which candidates the priors give, which neighbours of
the best config a mutation may try, and when measured data justifies relaxing a tile limit.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from attrs import frozen

from ledger.domain.replay import config_key
from ledger.domain.state import Attempt, State
from ledger.log import codec
from stages import commands as cmd
from tools.pypto.spec import OpSpec, load_spec

VEC_LIMIT = 64  # DESIGN §3 R3: each vec tile axis ≤ 64 unless relaxed with a basis
# A relaxation needs a measured trend: growing a tile axis gave at least this speed-up.
RELAX_MIN_GAIN = 1.10

# Points of each configuration stage and the config key each one tunes.
POINTS: dict[str, tuple[str, ...]] = {
    "frontend": ("vec_tile_shape", "unroll_list"),
    "swimlane": ("stitch_function_max_num", "device_sched_mode"),
    "incore": ("vec_nbuffer_setting",),
}
UNROLL_LISTS = ([2, 1], [4, 1], [4, 2, 1], [8, 4, 2, 1], [8, 1], [16, 4, 1])


@frozen
class Spec:
    """What the autopilot reads from SPEC.md."""

    shape: list[int]
    shape_text: str
    target_us: float


@frozen
class Space:
    """One op's search space."""

    spec: Spec
    baseline_config: dict[str, Any]

    def points(self, stage: str) -> tuple[str, ...]:
        """The optimization points the stage opens, in order."""
        return POINTS.get(stage, ())

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
        current = best.get(point, self.baseline_config.get(point))
        for value in _neighbours(point, current, self.spec.shape, vec_limit(state)):
            config = {**best, point: value}
            if config_key(config) not in state.measured_configs:
                yield point, value

    def relaxation(self, state: State, point: str) -> cmd.Relax | None:
        """Relax the vec limit when the best tile sits at it and growing tiles measured faster."""
        if point != "vec_tile_shape" or state.best is None:
            return None
        limit = vec_limit(state)
        tile = state.best.config.get("vec_tile_shape")
        if not isinstance(tile, list):
            return None
        blocked = [
            i
            for i, (t, dim) in enumerate(zip(tile, self.spec.shape, strict=True))
            if t == limit and t * 2 <= dim
        ]
        evidence = _growth_evidence(state)
        if not blocked or evidence is None:
            return None
        new_limit = limit * 2
        return cmd.Relax(
            what="vec",
            limit=new_limit,
            basis=(
                f"measured: {evidence}; best tile {tile} sits at the limit {limit} on axis "
                f"{blocked[0]} of a {self.spec.shape[blocked[0]]}-wide dimension"
            ),
        )


def vec_limit(state: State) -> int:
    """The vec tile limit in force: the latest relaxation, else the design default (R3)."""
    limits = [r.limit for r in state.relaxations if r.what == "vec"]
    return int(limits[-1]) if limits else VEC_LIMIT


def _neighbours(point: str, current: Any, shape: list[int], limit: int) -> Iterator[Any]:
    if point == "vec_tile_shape" and isinstance(current, list):
        # Larger tiles first: fewer, bigger tasks are what the simulator rewards most.
        for grow in (True, False):
            for axis, (t, dim) in enumerate(zip(current, shape, strict=True)):
                value = t * 2 if grow else t // 2
                if 1 <= value <= min(dim, limit) and value != t:
                    yield [*current[:axis], value, *current[axis + 1 :]]
    elif point == "unroll_list":
        yield from (u for u in UNROLL_LISTS if u != current)
    elif point == "stitch_function_max_num":
        base = current if isinstance(current, int) else 128
        yield from (v for v in (base * 2, base * 4, base // 2) if 1 <= v <= 1024)
    elif point == "device_sched_mode":
        yield from (m for m in (1, 2, 3, 0) if m != current)
    elif point == "vec_nbuffer_setting":
        yield from (v for v in ({"-1": 1}, {"-1": 2}, {"-1": 4}) if v != current)


def _growth_evidence(state: State) -> str | None:
    """The latest measured gain from adopting a bigger vec tile, as a basis text (R3)."""
    if state.target is None:
        return None
    previous_time = state.target.baseline_us
    previous_tile = _tile_of(state.measured_configs, "baseline")
    found: tuple[float, str] | None = None
    for attempt_id in state.adopted:
        attempt = state.attempts[attempt_id]
        if attempt.measurement is None:
            continue
        tile = attempt.config.get("vec_tile_shape")
        now = attempt.measurement.median_us
        if (
            isinstance(tile, list)
            and isinstance(previous_tile, list)
            and _volume(tile) > _volume(previous_tile)
        ):
            gain = previous_time / now
            # The latest growth is the trend the next relaxation extends.
            if gain >= RELAX_MIN_GAIN:
                found = (
                    gain,
                    f"growing the vec tile {previous_tile} → {tile} (attempt "
                    f"{attempt.id}) cut the time {previous_time:.2f} → {now:.2f} µs "
                    f"({gain:.2f}×)",
                )
        previous_time, previous_tile = now, tile
    return found[1] if found else None


def _tile_of(measured: dict[str, str], attempt: str) -> Any:
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
    """Read SPEC.md and the impl's DEFAULT_CONFIG (statically: no pypto import)."""
    spec: OpSpec = load_spec(op_dir)
    target = spec.front_matter.get("perf_target") or {}
    if not isinstance(target, dict) or "time_us" not in target:
        raise ValueError(f"{op_dir}/SPEC.md: perf_target needs time_us")
    shape = list(spec.p0_shape)
    return Space(
        spec=Spec(
            shape=shape,
            shape_text="x".join(str(d) for d in shape) + f" {spec.dtype}",
            target_us=float(target["time_us"]),
        ),
        baseline_config=_default_config(spec.impl_path),
    )


def _default_config(impl: Path) -> dict[str, Any]:
    tree = ast.parse(impl.read_text(encoding="utf-8"))
    for node in tree.body:
        target: ast.expr
        value_node: ast.expr | None
        if isinstance(node, ast.AnnAssign):
            target, value_node = node.target, node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value_node = node.targets[0], node.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id == "DEFAULT_CONFIG" and value_node:
            value = ast.literal_eval(value_node)
            if isinstance(value, dict):
                return value
    raise ValueError(f"{impl}: needs a literal DEFAULT_CONFIG")
