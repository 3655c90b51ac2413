"""The generic layout check of an op folder: the lint rules on its kernel, and its golden.

    python -m tools.pypto.layout --op-dir custom/OP [--config JSON] [--before-tuning]

An op's own `layout_check.py` calls `main` with its folder (docs/OP_FOLDER.md); nothing here
knows an op's name or finds a folder by a relative path. Exit 0 when no rule fails, 1 when
one does, 2 for bad arguments or an op folder that cannot be read; one line per finding.
The kernel is read with `ast` (pypto is never imported); the golden runs on the P0 shape when
torch is importable (LC8, and the dtype part of LC7), else that part is reported as skipped.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from ledger.domain.front_matter import read_front_matter
from ledger.domain.manifest import parse_manifest
from ledger.errors import BadInput

from . import lint_rules as rules

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
# Golden tensors' torch dtypes by the names SPEC.md's supported_dtypes and pypto's DT_* use.
TORCH_DTYPE_NAMES = {
    "float32": "fp32",
    "float16": "fp16",
    "bfloat16": "bf16",
    "int8": "int8",
    "int16": "int16",
    "int32": "int32",
    "int64": "int64",
}


class OpFolderError(ValueError):
    """The op folder cannot be checked: a file is missing or SPEC.md is unreadable."""


def op_files(op_dir: Path) -> tuple[str, dict[str, Any], Path, Path]:
    """(op name, SPEC.md front matter, impl path, golden path) of an op folder."""
    spec = op_dir / "SPEC.md"
    if not spec.is_file():
        raise OpFolderError(f"{op_dir} has no SPEC.md")
    try:
        front = read_front_matter(spec.read_text(encoding="utf-8"), str(spec))
    except BadInput as e:
        raise OpFolderError(str(e)) from e
    name = str(front.get("op_name") or op_dir.name)
    return name, front, op_dir / f"{name}_impl.py", op_dir / f"{name}_golden.py"


def knob_defaults(spec: Path) -> dict[str, Any]:
    """The manifest's knob defaults (the config a kernel runs when given `{}`)."""
    try:
        manifest = parse_manifest(spec.read_text(encoding="utf-8"), str(spec))
    except BadInput as e:
        raise OpFolderError(str(e)) from e
    return manifest.filled(manifest.baseline_config)


def check(
    op_dir: Path,
    config: dict[str, Any],
    before_tuning: bool,
    *,
    impl: Path | None = None,
    spec: Path | None = None,
) -> rules.Findings:
    """Every rule on the op folder's kernel (or `impl`, a variant of it) and one config."""
    _name, front, default_impl, golden = op_files(op_dir)
    if spec is not None:
        front = read_front_matter(spec.read_text(encoding="utf-8"), str(spec))
    impl = impl or default_impl
    if not impl.is_file():
        raise OpFolderError(f"{op_dir} has no {impl.name}")
    out = rules.Findings(impl.name)
    tree = ast.parse(impl.read_text(encoding="utf-8"), str(impl))
    found = rules.kernels(tree)
    if len(found) != 1:
        out.add("FAIL", "LC0", f"expected one @jit kernel, found {len(found)}")
        return out
    kernel = found[0]
    rules.check_cube_tiles(tree, kernel, out)
    rules.check_vec_tile(kernel, out)
    rules.check_unroll(kernel, out, before_tuning)
    rules.check_config(config, knob_defaults(spec or op_dir / "SPEC.md"), out, before_tuning)
    names = rules.check_signature(tree, kernel, out)
    check_golden(tree, kernel, front, golden, names, out)
    rules.check_annotations(tree, out)
    return out


def check_golden(
    tree: ast.Module,
    kernel: ast.FunctionDef,
    front: dict[str, Any],
    golden_path: Path,
    names: tuple[list[str], list[str]] | None,
    out: rules.Findings,
) -> None:
    """LC8: the golden gives a tensor per name in every supported dtype; LC7: literal dtypes
    in the kernel's annotations are the golden's."""
    supported = [str(d) for d in front.get("supported_dtypes") or []]
    declared = rules.dict_keys(tree, "DTYPES")
    missing = sorted(set(supported) - set(declared or []))
    if declared is None or missing:
        out.add(
            "FAIL", "LC8", f"SPEC dtypes {missing or supported} are not keys of the impl's DTYPES"
        )
    if names is None:
        return
    if importlib.util.find_spec("torch") is None:
        out.add("SKIP", "LC8", "torch not importable: the golden was not run")
        return
    golden = _load(golden_path)
    shapes = front.get("p0_shapes") or []
    literal = rules.literal_dtypes(kernel)
    inputs, outputs = names
    for dtype in supported:
        made = list(golden.make_inputs(list(shapes[0]), dtype, 0))
        expected = list(golden.golden(*made))
        if len(made) != len(inputs) or len(expected) != len(outputs):
            out.add(
                "FAIL",
                "LC8",
                f"{dtype}: the golden made {len(made)} inputs and {len(expected)} outputs, the "
                f"kernel takes {len(inputs)} and writes {len(outputs)}",
            )
            continue
        out.add("PASS", "LC8", f"{dtype}: the golden gives {inputs} → {outputs} on {shapes[0]}")
        for param, tensor in zip(inputs + outputs, made + expected, strict=True):
            given = TORCH_DTYPE_NAMES.get(str(tensor.dtype).removeprefix("torch."))
            if param in literal and literal[param] != given:
                out.add(
                    "FAIL",
                    "LC7",
                    f"{param} is declared DT_{literal[param].upper()} but the golden's is "
                    f"{given} for SPEC dtype {dtype}",
                    kernel,
                )


def _load(path: Path) -> ModuleType:
    if not path.is_file():
        raise OpFolderError(f"{path} is missing")
    spec = importlib.util.spec_from_file_location(f"_layout_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise OpFolderError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None, op_dir: Path | None = None) -> int:
    """Run the check on the command line's op folder (or `op_dir`); the exit code."""
    parser = argparse.ArgumentParser(description="The layout check of an op folder.")
    parser.add_argument("--op-dir", type=Path, default=op_dir, required=op_dir is None)
    parser.add_argument("--impl", type=Path, help="check this kernel file instead")
    parser.add_argument("--config", default="{}", help="the config to check, as JSON")
    parser.add_argument(
        "--before-tuning",
        action="store_true",
        help="activation time: unroll lists must be single-valued",
    )
    parser.add_argument("--rules", action="store_true", help="list the rules and exit")
    args = parser.parse_args(argv)
    if args.rules:
        print("\n".join(f"{rule} {text}" for rule, text in rules.RULES.items()))
        return EXIT_OK
    try:
        config = json.loads(args.config)
        if not isinstance(config, dict):
            raise ValueError("not a JSON object")
        findings = check(args.op_dir.resolve(), config, args.before_tuning, impl=args.impl)
    except (ValueError, OpFolderError, SyntaxError) as e:
        print(f"layout check: {e}", file=sys.stderr)
        return EXIT_USAGE
    print("\n".join(findings.lines))
    print(f"layout check: {findings.failed} failing rule(s)")
    return EXIT_FAILED if findings.failed else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
