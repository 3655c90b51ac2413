"""One config of one op, compiled and run by pypto; run by runner.py in a child process.

`python -m tools.pypto.child REQUEST.json` reads the request, runs the kernel on the P0 shape
(artefacts under $TILE_FWK_OUTPUT_DIR), compares each output buffer with the golden, and writes
a small result JSON to the request's `result_path`. In SIM mode (here) the kernel runs once in
the simulator; in NPU mode device_run.py runs a warm-up and warm runs on the device. It never
prints the result (pypto prints a lot), and it records an error instead of raising, so the
parent can classify it. Kept apart from the parent so that a crash, a hang or a memory blow-up of
pypto only takes this process down, and so that the compiler's global state (which a failed
compile leaves broken) never outlives one config.
"""

from __future__ import annotations

import importlib.util
import inspect
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
SIM_RUN_MODE = 1  # pypto.RunMode.SIM (NPU is 0), known without importing pypto
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


def plain_config(config: dict[str, Any]) -> dict[str, Any]:
    """The resolved config as JSON keeps it (the int keys of pass-option maps as strings)."""
    return {
        k: ({str(a): b for a, b in v.items()} if isinstance(v, dict) else v)
        for k, v in config.items()
    }


def load_op(request: dict[str, Any]) -> tuple[ModuleType, ModuleType]:
    """The op's `<op>_impl.py` and `<op>_golden.py` modules."""
    op_dir = Path(request["op_dir"])
    name = request["op_name"]
    impl = _load(op_dir / f"{name}_impl.py", f"_tune_ledger_op_{name}_impl")
    gold = _load(op_dir / f"{name}_golden.py", f"_tune_ledger_op_{name}_golden")
    return impl, gold


class ImplError(TypeError):
    """The op's impl cannot do what the run needs (e.g. NPU mode without a run_mode parameter)."""


def build_kernel(
    impl: ModuleType,
    shape: list[int],
    dtype: str,
    config: dict[str, Any],
    *,
    run_mode: Any,
    verify_options: dict[str, Any] | None = None,
) -> Any:
    """`impl.build_kernel(...)` for `run_mode`; an impl written before run modes existed (no
    `run_mode` parameter) hard-codes the simulator, so it builds only for SIM."""
    accepts = "run_mode" in inspect.signature(impl.build_kernel).parameters
    if accepts:
        return impl.build_kernel(
            shape, dtype, config, verify_options=verify_options, run_mode=run_mode
        )
    if run_mode != SIM_RUN_MODE:
        raise ImplError(
            f"{Path(impl.__file__ or '').name}: build_kernel has no run_mode parameter, so it "
            "can only simulate; add `run_mode=None` and pass it to pypto.frontend.jit's "
            "runtime_options (see tools/pypto/scaffold/impl.py.tmpl)"
        )
    return impl.build_kernel(shape, dtype, config, verify_options=verify_options)


def output_compares(
    output_names: tuple[str, ...],
    inputs: list[Any],
    goldens: list[Any],
    outputs: list[Any],
    rtol: float,
    atol: float,
) -> list[dict[str, Any]]:
    """Our compare of each output buffer (on the host) with its golden."""
    import torch

    compares = []
    for index, (name, out, ref) in enumerate(zip(output_names, outputs, goldens, strict=True)):
        diff = (out.double() - ref.double()).abs().max().item() if out.numel() else 0.0
        compares.append(
            {
                "name": name,
                "index": len(inputs) + index,
                "all_close": bool(torch.allclose(out, ref, rtol=rtol, atol=atol)),
                "max_diff": float(diff),
                "nonzero": bool(out.count_nonzero().item() > 0),
            }
        )
    return compares


def run(request: dict[str, Any]) -> dict[str, Any]:
    """Run the request in the simulator; the result says `status` ok, config-error,
    impl-error, numerics-error or error."""
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

    impl, gold = load_op(request)
    shape, dtype, config = request["shape"], request["dtype"], request["config"]
    try:
        result["config"] = impl.resolve_config(config, rank=len(shape))
    except ValueError as e:
        return {**result, "status": "config-error", "error": str(e)}
    result["config"] = plain_config(result["config"])

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
        kernel = build_kernel(
            impl, shape, dtype, config, run_mode=pypto.RunMode.SIM, verify_options=verify_options
        )
        kernel(*inputs, *outputs)
    except ImplError as e:
        return {**result, "status": "impl-error", "error": str(e)}
    except Exception as e:  # noqa: BLE001 - the kernel's own failure, classified by the parent
        result.update(error=error_chain(e), traceback=traceback.format_exc()[-4000:])
        result["run_s"] = round(time.monotonic() - run_started, 3)
        return result
    result["run_s"] = round(time.monotonic() - run_started, 3)

    rtol, atol = float(request["rtol"]), float(request["atol"])
    compares = output_compares(impl.OUTPUT_NAMES, inputs, goldens, outputs, rtol, atol)
    result.update(status="ok", compares=compares if numerics else [])
    return result


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[1]).read_text())
    try:
        if request.get("run_mode") == "npu":
            from . import device_run

            result = device_run.run_request(request, lambda: load_op(request))
        else:
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
