"""Softmax over the last axis of a 4-D tensor, as a PyPTO kernel whose knobs come from a config.

The adapter (tools/pypto) calls `build_kernel(shape, dtype, config)` once per config: each call
defines a fresh jitted function, so compiled caches of different configs never clash.

Config keys (every one was checked to compile and change nothing or something measurable in
SIM mode with pypto 0.2.0; see SPEC.md "Knobs"):
- vec_tile_shape: 4 positive ints, `pypto.set_vec_tile_shapes`.
- unroll_list: descending positive ints, the `unroll_list` of the batch loop
  (`pypto.loop_unroll`; the body processes `rows` batches per step).
- stitch_function_max_num, stitch_function_num_initial, stitch_function_num_step,
  device_sched_mode: runtime options.
- vec_nbuffer_setting: pass option, a map {merge group id: count}; JSON keys are strings,
  converted to ints here.
"""

# No `from __future__ import annotations` here: pypto's parser reads the kernel's parameter
# annotations as objects, and postponed (string) annotations make it treat tensors as scalars.
from typing import Any

import pypto

OP_NAME = "softmax"
INPUT_NAMES = ("x",)
OUTPUT_NAMES = ("y",)
DTYPES = {"fp32": pypto.DT_FP32}

# The untuned kernel: the vector tile of the upstream softmax example, no unrolling.
DEFAULT_CONFIG: dict[str, Any] = {"vec_tile_shape": [1, 4, 1, 64], "unroll_list": [1]}

RUNTIME_KNOBS = {  # name: (smallest, largest) allowed by pypto's option schema
    "stitch_function_max_num": (1, 1024),
    "stitch_function_num_initial": (1, 1024),
    "stitch_function_num_step": (0, 1024),
    "device_sched_mode": (0, 3),
}
PASS_MAP_KNOBS = ("vec_nbuffer_setting",)
KNOWN_KEYS = ("vec_tile_shape", "unroll_list", *RUNTIME_KNOBS, *PASS_MAP_KNOBS)


def _positive_ints(value: Any, key: str) -> list[int]:
    if (not isinstance(value, list) or not value
            or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)):
        raise ValueError(f"{key} must be a non-empty list of positive ints, got {value!r}")
    return list(value)


def resolve_config(config: dict[str, Any], rank: int = 4) -> dict[str, Any]:
    """DEFAULT_CONFIG overlaid with `config`, validated; ValueError names the bad key."""
    unknown = sorted(set(config) - set(KNOWN_KEYS))
    if unknown:
        raise ValueError(f"unknown config keys {unknown}; known: {list(KNOWN_KEYS)}")
    merged = {**DEFAULT_CONFIG, **config}
    tile = _positive_ints(merged["vec_tile_shape"], "vec_tile_shape")
    if len(tile) != rank:
        raise ValueError(f"vec_tile_shape needs {rank} axes, got {tile}")
    unroll = _positive_ints(merged["unroll_list"], "unroll_list")
    if unroll != sorted(set(unroll), reverse=True):
        raise ValueError(f"unroll_list must be strictly descending, got {unroll}")
    for key, (low, high) in RUNTIME_KNOBS.items():
        value = merged.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or not low <= value <= high):
            raise ValueError(f"{key} must be an int in [{low}, {high}], got {value!r}")
    for key in PASS_MAP_KNOBS:
        if key in merged:
            merged[key] = _int_map(merged[key], key)
    return merged


def _int_map(value: Any, key: str) -> dict[int, int]:
    if not isinstance(value, dict):
        raise ValueError(f"{key} must be an object like {{\"-1\": 2}}, got {value!r}")
    try:
        return {int(k): int(v) for k, v in value.items()}
    except (TypeError, ValueError) as e:
        raise ValueError(f"{key} must map ints to ints, got {value!r}") from e


def build_kernel(shape: list[int], dtype: str, config: dict[str, Any], *,
                 verify_options: dict[str, Any] | None = None,
                 run_mode: Any = None) -> Any:
    """A jitted softmax for one input shape, dtype name and config, run where `run_mode`
    says (pypto.RunMode.NPU or .SIM; None: as pypto chooses, NPU when ASCEND_HOME_PATH is set)."""
    if len(shape) != 4:
        raise ValueError(f"softmax_impl handles 4-D inputs, got shape {shape}")
    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r} not supported; supported: {list(DTYPES)}")
    cfg = resolve_config(config, rank=len(shape))
    dims = tuple(shape)
    elem = DTYPES[dtype]
    tile = tuple(cfg["vec_tile_shape"])
    unroll = list(cfg["unroll_list"])
    batch = dims[0]
    runtime = {**({"run_mode": run_mode} if run_mode is not None else {}),
               **{k: cfg[k] for k in RUNTIME_KNOBS if cfg.get(k) is not None}}
    passes = {k: cfg[k] for k in PASS_MAP_KNOBS if k in cfg}

    @pypto.frontend.jit(runtime_options=runtime, pass_options=passes or None,
                        verify_options=verify_options)
    def softmax_kernel(x: pypto.Tensor(dims, elem), y: pypto.Tensor(dims, elem)):
        pypto.set_vec_tile_shapes(*tile)
        for b, rows in pypto.loop_unroll(0, batch, 1, unroll_list=unroll):
            block = x[b:b + rows, :, :, :]
            shifted = pypto.sub(block, pypto.amax(block, dim=-1, keepdim=True))
            e = pypto.exp(shifted)
            y[b:b + rows, :, :, :] = pypto.div(e, pypto.sum(e, dim=-1, keepdim=True))

    return softmax_kernel
