"""One config of one op, compiled and simulated by pypto; run by runner.py in a child process.

`python -m tools.pypto.child REQUEST.json` reads the request, runs the kernel once on the P0
shape (SIM mode, artefacts under $TILE_FWK_OUTPUT_DIR), compares each output buffer with the
golden, and writes a small result JSON to the request's `result_path`. It never prints the
result (pypto prints a lot), and it records an error instead of raising, so the parent can
classify it. Kept apart from the parent so that a crash, a hang or a memory blow-up of
pypto only takes this process down, and so that the compiler's global state (which a failed
compile leaves broken) never outlives one config.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

# Which compiler passes pass-verify re-checks against the tensor graph. None: pypto's default
# list (six passes from ExpandFunction to CodegenPreproc). A filter naming no pass keeps only
# the tensor graph vs golden check (the CSV is still written).
VERIFY_PASSES: dict[str, list[str] | None] = {
    "all": None,
    "last": ["CodegenPreproc"],
    "graph": ["tensor_graph"],
}


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def error_chain(exc: BaseException) -> str:
    """Every exception of the cause/context chain, outermost first (pypto wraps its errors)."""
    parts, seen = [], set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        parts.append(f"{type(current).__name__}: {current}")
        current = current.__cause__ or current.__context__
    return "\n".join(parts)


def run(request: dict[str, Any]) -> dict[str, Any]:
    """Run the request; the result says `status` ok, config-error, numerics-error or error."""
    from . import phase

    started = time.monotonic()
    result: dict[str, Any] = {"status": "error"}
    phase.report("importing pypto and torch")
    import pypto
    import torch

    from . import host_verify_patch

    result["import_s"] = round(time.monotonic() - started, 3)
    result["torch_version"] = str(torch.__version__)
    numerics = bool(request["numerics"])
    if numerics:
        if not host_verify_patch.calculator_cached():
            phase.report("building pypto's host calculator (first run only, about a minute)")
        try:
            result["numerics_patch"] = host_verify_patch.activate()
        except host_verify_patch.PatchRefused as e:
            return {**result, "status": "numerics-error", "error": str(e)}
        except Exception as e:  # noqa: BLE001 - pypto internals: any error is a numerics error
            return {**result, "status": "numerics-error", "error": error_chain(e)}

    op_dir = Path(request["op_dir"])
    name = request["op_name"]
    impl = _load(op_dir / f"{name}_impl.py", f"_tune_ledger_op_{name}_impl")
    gold = _load(op_dir / f"{name}_golden.py", f"_tune_ledger_op_{name}_golden")
    shape, dtype, config = request["shape"], request["dtype"], request["config"]
    try:
        result["config"] = impl.resolve_config(config, rank=len(shape))
    except ValueError as e:
        return {**result, "status": "config-error", "error": str(e)}
    result["config"] = {
        k: ({str(a): b for a, b in v.items()} if isinstance(v, dict) else v)
        for k, v in result["config"].items()
    }

    inputs = gold.make_inputs(shape, dtype, int(request["seed"]))
    goldens = gold.golden(*inputs)
    outputs = [torch.zeros_like(g) for g in goldens]
    verify_options = None
    if numerics:
        rtol, atol = float(request["rtol"]), float(request["atol"])
        verify_options = {"enable_pass_verify": True, "pass_verify_error_tol": [rtol, atol]}
        passes = VERIFY_PASSES[request.get("verify_passes", "all")]
        if passes is not None:
            verify_options["pass_verify_pass_filter"] = passes
        pypto.set_verify_golden_data(goldens=[None] * len(inputs) + list(goldens))
    run_started = time.monotonic()
    phase.report("compile, simulate" + (", verify" if numerics else ""))
    try:
        kernel = impl.build_kernel(shape, dtype, config, verify_options=verify_options)
        kernel(*inputs, *outputs)
    except Exception as e:  # noqa: BLE001 - the kernel's own failure, classified by the parent
        result.update(error=error_chain(e), traceback=traceback.format_exc()[-4000:])
        result["run_s"] = round(time.monotonic() - run_started, 3)
        return result
    result["run_s"] = round(time.monotonic() - run_started, 3)

    compares = []
    for index, (name_out, out, ref) in enumerate(
        zip(impl.OUTPUT_NAMES, outputs, goldens, strict=True)
    ):
        diff = (out.double() - ref.double()).abs().max().item() if out.numel() else 0.0
        compares.append(
            {
                "name": name_out,
                "index": len(inputs) + index,
                "all_close": bool(
                    torch.allclose(
                        out, ref, rtol=float(request["rtol"]), atol=float(request["atol"])
                    )
                ),
                "max_diff": float(diff),
                "nonzero": bool(out.count_nonzero().item() > 0),
            }
        )
    result.update(status="ok", compares=compares if numerics else [])
    return result


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[1]).read_text())
    try:
        result = run(request)
    except Exception as e:  # noqa: BLE001 - a bug in an op file or here: still hand a result
        result = {
            "status": "error",
            "error": error_chain(e),
            "traceback": traceback.format_exc()[-4000:],
        }
    Path(request["result_path"]).write_text(json.dumps(result, sort_keys=True))
    return 0 if result["status"] == "ok" else 3


if __name__ == "__main__":
    sys.exit(main(sys.argv))
