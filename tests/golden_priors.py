"""Builds the golden ranking of priors: what `propose` ranks for ledgers with no measurement but
the baseline's, on the built-in knowledge file and a fixed set of other priors.

tests/data/priors/ranking.json was written by this builder before the ranking learnt from the
op's own measurements (issue 28 item 5); tests/test_priors_learned.py checks that a ledger with
nothing measured but its baseline still ranks exactly so. Regenerate it only when a change of
the ranking itself is meant, and review the diff: `python tests/golden_priors.py`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from driver import Driver, in_point

from ledger.priors.focus import resolve_focus
from ledger.priors.knowledge import builtin_priors
from ledger.priors.prior import Prior
from ledger.priors.profile import OpProfile
from ledger.priors.rank import proposal_json, propose
from ledger.shell.priors_load import load_knowledge
from stages import commands as cmd
from stages.target import vec_limit

GOLDEN = Path(__file__).parent / "data" / "priors" / "ranking.json"
SOFTMAX_CONFIG: dict[str, Any] = {"vec_tile_shape": [1, 4, 1, 64], "unroll_list": [1]}
SOFTMAX_KNOBS: dict[str, Any] = {
    "vec_tile_shape": {"stage": "frontend", "kind": "tile", "default": [1, 4, 1, 64]},
    "unroll_list": {"stage": "frontend", "kind": "int-list", "default": [1]},
    "stitch_function_max_num": {"stage": "swimlane", "kind": "int", "min": 1, "max": 1024},
    "device_sched_mode": {"stage": "swimlane", "domain": [0, 1, 2, 3], "default": 0},
}
MATMUL_CONFIG: dict[str, Any] = {
    "cube_tile_shape": [[32, 32], [32, 32], [32, 32]],
    "vec_tile_shape": [32, 32],
}
MATMUL_KNOBS: dict[str, Any] = {
    "cube_tile_shape": {"stage": "frontend", "kind": "json", "default": [[32, 32]] * 3},
    "vec_tile_shape": {"stage": "frontend", "kind": "tile", "default": [32, 32]},
}


def _driver(
    config: dict[str, Any], knobs: dict[str, Any], p0: list[int], point: str, **sheet: Any
) -> Driver:
    driver = in_point(name=point, config=config, **sheet)
    declared = {"knobs": knobs, "p0_shapes": [p0]}
    driver.run(cmd.RecordManifest(digest="m1", source="SPEC.md", declared=declared))
    return driver


def _others(key: str, values: list[Any]) -> list[Prior]:
    """Priors from other ops' ledgers and kernel sources, a fixed mix of weights."""
    return [
        Prior(
            values={key: value},
            kind="ledger" if index % 2 else "source",
            provenance=f"{'ledger' if index % 2 else 'source'} {key} #{index}",
            weight=round(0.3 + 0.07 * (index % 7), 2),
        )
        for index, value in enumerate(values)
    ]


def _ranked(driver: Driver, op: OpProfile, others: list[Prior], **focus: Any) -> dict[str, Any]:
    state = driver.state
    assert state.best is not None
    chosen = resolve_focus(state, **focus)
    builtin, _ = builtin_priors(
        load_knowledge(),
        state.best.config,
        op,
        keys=chosen.keys,
        cube_m=op.cube_m,
        vec_max=vec_limit(state),
    )
    data = proposal_json(propose(state, chosen, [*builtin, *others]))
    return {
        "candidates": [
            {k: entry[k] for k in ("rank", "config", "prior", "score", "sources")}
            for entry in data["candidates"]
        ],
        "filtered": [
            {k: entry[k] for k in ("config", "reason", "rule")} for entry in data["filtered"]
        ],
        "unselected": data["unselected"],
    }


def build() -> dict[str, Any]:
    """The golden rankings: softmax's vec tile and unroll points, matmul's cube tile point."""
    softmax = OpProfile(name="softmax", shapes=((32, 32, 1, 256),))
    matmul = OpProfile(name="matmul_bias_relu", shapes=((64, 256, 256),), cube_m=64, cube_k=256)
    vec_tiles = [[1, 8, 1, 128], [1, 2, 1, 64], [1, 32, 1, 32], [1, 4, 1, 256], [1, 16, 1, 64]]
    unrolls = [[2, 1], [16, 1], [4, 1], [32, 8, 1]]
    cubes = [[[64, 64], [64, 64], [64, 64]], [[16, 16], [64, 64], [32, 32]]]
    return {
        "softmax vec_tile_shape": _ranked(
            _driver(SOFTMAX_CONFIG, SOFTMAX_KNOBS, [32, 32, 1, 256], "vec_tile_shape"),
            softmax,
            _others("vec_tile_shape", vec_tiles),
        ),
        "softmax unroll_list": _ranked(
            _driver(SOFTMAX_CONFIG, SOFTMAX_KNOBS, [32, 32, 1, 256], "unroll_list"),
            softmax,
            _others("unroll_list", unrolls),
        ),
        "softmax frontend stage keys": _ranked(
            _driver(SOFTMAX_CONFIG, SOFTMAX_KNOBS, [32, 32, 1, 256], "F-1"),
            softmax,
            _others("vec_tile_shape", vec_tiles) + _others("unroll_list", unrolls),
            stage="frontend",
            keys=("vec_tile_shape", "unroll_list"),
        ),
        "matmul cube_tile_shape": _ranked(
            _driver(MATMUL_CONFIG, MATMUL_KNOBS, [64, 256, 256], "cube_tile_shape", cube_m=64),
            matmul,
            _others("cube_tile_shape", cubes),
        ),
    }


if __name__ == "__main__":
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(build(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN}")
