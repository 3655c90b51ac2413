"""`new-op`: write `custom/<op>/` following docs/OP_FOLDER.md, with a kernel that runs as is.

The kernel is an elementwise placeholder (`y = x + x`) on a small 4-D fp32 input; the person
replaces its body and the manifest's numbers. Every name in the files is derived from the op's
name; the adapter's package is the one importable where the scaffold runs.
"""

from __future__ import annotations

import re
from pathlib import Path
from string import Template

from ledger.errors import BadInput
from ledger.shell.op_folder import adapter_package

NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")

SPEC = Template("""---
schema_version: 1
op_name: $op
supported_dtypes: ["fp32"]
p0_shapes: [[16, 16, 1, 128]]
tolerance: {"rtol": 1.0e-5, "atol": 1.0e-6}
perf_target: {"time_us": 2.0, "metric": "max_work_time_us", "tool": "pypto-sim 0.2.0"}
# The op manifest (docs/OP_FOLDER.md): what the ledger knows of this op without asking.
baseline_config: {"vec_tile_shape": [1, 4, 1, 64], "unroll_list": [1]}
knobs:
  vec_tile_shape: {stage: frontend, kind: tile, default: [1, 4, 1, 64]}
  unroll_list: {stage: frontend, kind: int-list, default: [1]}
  stitch_function_max_num: {stage: swimlane, kind: int, min: 1, max: 1024, default: 128}
  device_sched_mode: {stage: swimlane, domain: [0, 1, 2, 3], default: 0}
  vec_nbuffer_setting: {stage: incore, kind: json, default: null}
verifier:
  command: ["{python}", "-m", "$package.pypto.run", "--op-dir", "{op_dir}", "--config", "{config}",
            "--timeout", "300", "--memory-mb", "{memory_mb}", "--verify-passes", "last",
            "--json"]
  # The kernel run: 300 s (upstream's timeout); the whole verifier more, for the first run's
  # build of pypto's host library and a loaded machine.
  timeout_s: 900
  memory_mb: 6144
---

# $op

What the op computes, its inputs and outputs (`${op}_impl.py`, `${op}_golden.py`). The
scaffold's kernel is a placeholder, `y = x + x`: replace its body, then the P0 shape, the
target and the knobs above (docs/OP_FOLDER.md), and run `tune-ledger check-op $op`.
""")

IMPL = Template('''"""The $op kernel: a PyPTO kernel whose knobs come from a config (OP_FOLDER.md).

The adapter calls `build_kernel(shape, dtype, config)` once per config; each call defines a
fresh jitted function, so compiled caches of different configs never clash.
"""

# No `from __future__ import annotations`: pypto reads the kernel's annotations as objects.
from typing import Any

import pypto

INPUT_NAMES = ("x",)
OUTPUT_NAMES = ("y",)
DTYPES = {"fp32": pypto.DT_FP32}

DEFAULT_CONFIG: dict[str, Any] = {"vec_tile_shape": [1, 4, 1, 64], "unroll_list": [1]}
RUNTIME_KNOBS = ("stitch_function_max_num", "device_sched_mode")
PASS_MAP_KNOBS = ("vec_nbuffer_setting",)
KNOWN_KEYS = (*DEFAULT_CONFIG, *RUNTIME_KNOBS, *PASS_MAP_KNOBS)


def resolve_config(config: dict[str, Any], rank: int = 4) -> dict[str, Any]:
    """DEFAULT_CONFIG overlaid with `config`, validated; ValueError names the bad key."""
    unknown = sorted(set(config) - set(KNOWN_KEYS))
    if unknown:
        raise ValueError(f"unknown config keys {unknown}; known: {list(KNOWN_KEYS)}")
    merged = {**DEFAULT_CONFIG, **config}
    for key in ("vec_tile_shape", "unroll_list"):
        value = merged[key]
        if not (isinstance(value, list) and value
                and all(type(v) is int and v > 0 for v in value)):
            raise ValueError(f"{key} must be a list of positive ints, got {value!r}")
    if len(merged["vec_tile_shape"]) != rank:
        raise ValueError(f"vec_tile_shape needs {rank} axes, got {merged['vec_tile_shape']}")
    for key in PASS_MAP_KNOBS:
        if merged.get(key) is not None:
            merged[key] = {int(k): int(v) for k, v in merged[key].items()}
    return merged


def build_kernel(shape: list[int], dtype: str, config: dict[str, Any], *,
                 verify_options: dict[str, Any] | None = None) -> Any:
    """A jitted $op for one input shape, dtype name and config (SIM mode)."""
    cfg = resolve_config(config, rank=len(shape))
    dims = tuple(shape)
    elem = DTYPES[dtype]
    tile = tuple(cfg["vec_tile_shape"])
    unroll = list(cfg["unroll_list"])
    runtime = {"run_mode": pypto.RunMode.SIM,
               **{k: cfg[k] for k in RUNTIME_KNOBS if cfg.get(k) is not None}}
    passes = {k: cfg[k] for k in PASS_MAP_KNOBS if cfg.get(k) is not None}

    @pypto.frontend.jit(runtime_options=runtime, pass_options=passes or None,
                        verify_options=verify_options)
    def ${op}_kernel(x: pypto.Tensor(dims, elem), y: pypto.Tensor(dims, elem)):
        pypto.set_vec_tile_shapes(*tile)
        for b, rows in pypto.loop_unroll(0, dims[0], 1, unroll_list=unroll):
            block = x[b:b + rows, :, :, :]
            y[b:b + rows, :, :, :] = pypto.add(block, block)  # the placeholder: replace it

    return ${op}_kernel
''')

GOLDEN = Template('''"""Test data and the golden reference of the $op op (torch on the CPU)."""

from __future__ import annotations

import torch

TORCH_DTYPES = {"fp32": torch.float32}


def make_inputs(shape: list[int], dtype: str, seed: int) -> list[torch.Tensor]:
    """Seeded inputs, one per INPUT_NAMES."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(tuple(shape), generator=generator, dtype=torch.float32)
    return [x.to(TORCH_DTYPES[dtype])]


def golden(x: torch.Tensor) -> list[torch.Tensor]:
    """The expected outputs, one per OUTPUT_NAMES."""
    return [x + x]
''')

LAYOUT = Template('''"""Layout check of this op folder: $package.pypto.layout's generic rules.

    python layout_check.py [--config JSON] [--before-tuning]

Exit 0 when no rule fails, 1 otherwise, 2 for bad arguments (docs/OP_FOLDER.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

from $package.pypto import layout

if __name__ == "__main__":
    sys.exit(layout.main(op_dir=Path(__file__).resolve().parent))
''')


def write_op(root: Path, op: str, package: str | None = None) -> list[Path]:
    """Write `root/custom/op/` from the templates; refuse a bad name or an existing folder."""
    if not NAME.match(op):
        raise BadInput(
            f"op name {op!r} is not a lowercase identifier",
            hint="use letters, digits and underscores, starting with a letter (e.g. layer_norm)",
        )
    op_dir = root / "custom" / op
    if op_dir.exists():
        raise BadInput(
            f"{op_dir} exists already",
            hint=f"check it with `tune-ledger check-op {op}`, or pick another name",
        )
    found = adapter_package()
    package = package or (found[0] if found else "tune_ledger_tools")
    values = {"op": op, "package": package}
    files = {
        "SPEC.md": SPEC,
        f"{op}_impl.py": IMPL,
        f"{op}_golden.py": GOLDEN,
        "layout_check.py": LAYOUT,
    }
    op_dir.mkdir(parents=True)
    written = []
    for name, template in files.items():
        path = op_dir / name
        path.write_text(template.substitute(values), encoding="utf-8")
        written.append(path)
    return written
