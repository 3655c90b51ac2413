"""`y = relu(x @ w + b)` in fp16 as a PyPTO kernel whose knobs come from a config.

The matmul runs on the cube (AIC) cores, the bias add and the relu on the vector (AIV)
cores. The adapter calls `build_kernel(shape, dtype, config)` once per config, with
`shape = [M, K, N]`; each call defines a fresh jitted function.

Config keys (see SPEC.md "Knobs"):
- cube_tile_shape: `[[mL0, mL1], [kL0, kL1], [nL0, nL1]]`, `pypto.set_cube_tile_shapes`.
- vec_tile_shape: 2 positive ints, `pypto.set_vec_tile_shapes` (bias add, relu).
- stitch_function_max_num, device_sched_mode: runtime options.
- cube_nbuffer_setting, cube_l1_reuse_setting, vec_nbuffer_setting: pass options, maps
  {merge group id: count}; JSON keys are strings, converted to ints here.
"""

# No `from __future__ import annotations`: pypto reads the kernel's annotations as objects.
from typing import Any

import pypto

INPUT_NAMES = ("x", "w", "b")
OUTPUT_NAMES = ("y",)
DTYPES = {"fp16": pypto.DT_FP16}

DEFAULT_CONFIG: dict[str, Any] = {
    "cube_tile_shape": [[32, 32], [32, 32], [32, 32]],
    "vec_tile_shape": [32, 32],
}
RUNTIME_KNOBS = {"stitch_function_max_num": (1, 1024), "device_sched_mode": (0, 3)}
PASS_MAP_KNOBS = ("cube_nbuffer_setting", "cube_l1_reuse_setting", "vec_nbuffer_setting")
KNOWN_KEYS = (*DEFAULT_CONFIG, *RUNTIME_KNOBS, *PASS_MAP_KNOBS)


def _positive_ints(value: Any, key: str, length: int) -> list[int]:
    if (not isinstance(value, list) or len(value) != length
            or not all(type(v) is int and v > 0 for v in value)):
        raise ValueError(f"{key} must be {length} positive ints, got {value!r}")
    return list(value)


def resolve_config(config: dict[str, Any], rank: int = 3) -> dict[str, Any]:
    """DEFAULT_CONFIG overlaid with `config`, validated; ValueError names the bad key."""
    unknown = sorted(set(config) - set(KNOWN_KEYS))
    if unknown:
        raise ValueError(f"unknown config keys {unknown}; known: {list(KNOWN_KEYS)}")
    merged = {**DEFAULT_CONFIG, **config}
    cube = merged["cube_tile_shape"]
    if not isinstance(cube, list) or len(cube) != 3:
        raise ValueError(f"cube_tile_shape must be [[mL0,mL1],[kL0,kL1],[nL0,nL1]], got {cube!r}")
    merged["cube_tile_shape"] = [_positive_ints(p, "cube_tile_shape", 2) for p in cube]
    merged["vec_tile_shape"] = _positive_ints(merged["vec_tile_shape"], "vec_tile_shape", 2)
    for key, (low, high) in RUNTIME_KNOBS.items():
        value = merged.get(key)
        if value is not None and (type(value) is not int or not low <= value <= high):
            raise ValueError(f"{key} must be an int in [{low}, {high}], got {value!r}")
    for key in PASS_MAP_KNOBS:
        value = merged.get(key)
        if value is not None:
            if not isinstance(value, dict):
                raise ValueError(f"{key} must be an object like {{\"-1\": 2}}, got {value!r}")
            merged[key] = {int(k): int(v) for k, v in value.items()}
    return merged


def build_kernel(shape: list[int], dtype: str, config: dict[str, Any], *,
                 verify_options: dict[str, Any] | None = None,
                 run_mode: Any = None) -> Any:
    """A jitted matmul + bias + relu for `shape = [M, K, N]`, a dtype name and a config, run
    where `run_mode` says (pypto.RunMode.NPU or .SIM; None: as pypto chooses)."""
    if len(shape) != 3:
        raise ValueError(f"matmul_bias_relu takes shape [M, K, N], got {shape}")
    cfg = resolve_config(config)
    m, k, n = shape
    elem = DTYPES[dtype]
    cube = cfg["cube_tile_shape"]
    tile = tuple(cfg["vec_tile_shape"])
    runtime = {**({"run_mode": run_mode} if run_mode is not None else {}),
               **{key: cfg[key] for key in RUNTIME_KNOBS if cfg.get(key) is not None}}
    passes = {key: cfg[key] for key in PASS_MAP_KNOBS if cfg.get(key) is not None}

    @pypto.frontend.jit(runtime_options=runtime, pass_options=passes or None,
                        verify_options=verify_options)
    def matmul_bias_relu_kernel(x: pypto.Tensor((m, k), elem), w: pypto.Tensor((k, n), elem),
                                b: pypto.Tensor((1, n), elem), y: pypto.Tensor((m, n), elem)):
        pypto.set_cube_tile_shapes(*cube)
        pypto.set_vec_tile_shapes(*tile)
        y[:, :] = pypto.relu(pypto.add(pypto.matmul(x, w, elem), b))

    return matmul_bias_relu_kernel
