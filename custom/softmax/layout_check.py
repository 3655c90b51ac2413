"""Layout check of the softmax op: static rules on the kernel source, plus output shape/dtype.

Exit 0 when no rule fails, 1 otherwise (2 for bad arguments); one line per finding.
Reads the kernel with `ast` and never imports pypto; the golden is run once on the P0 shape
when torch is importable (rule LC8), otherwise that rule is reported as skipped.

Rules, in the spirit of the upstream op lint rules:
  LC1 cube tile shapes are given as literal ints (`set_cube_tile_shapes`).
  LC2 the vector tile is set once, first thing in the kernel, from literal ints or the config.
  LC3 loop_unroll only on the innermost loop, and only as the iterator of a `for`.
  LC4 an unrolled loop body uses its unroll factor (else one step covers one row, not p).
  LC5 unroll lists are descending positive ints; single-valued before tuning (--before-tuning).
  LC6 the config's vec_tile_shape has one positive int per axis of the P0 shape.
  LC7 outputs are declared with the input's shape and dtype, in INPUT_NAMES/OUTPUT_NAMES order.
  LC8 the golden returns outputs of the input's shape and dtype (SPEC dtypes all supported).
  LC9 no `from __future__ import annotations` in the impl: pypto's parser reads parameter
      annotations as objects, and string annotations turn the tensors into scalars.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


class Findings:
    def __init__(self, source: Path) -> None:
        self.source = source
        self.lines: list[str] = []
        self.failed = 0

    def add(self, status: str, rule: str, message: str, node: ast.AST | None = None) -> None:
        where = f"{self.source.name}:{node.lineno}" if node is not None else self.source.name
        self.lines.append(f"{status:<4} {rule} {where}: {message}")
        self.failed += status == "FAIL"


def _call_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute):
            return func.attr
        if isinstance(func, ast.Name):
            return func.id
    return None


def _literal(tree: ast.Module, name: str) -> Any:
    for node in tree.body:
        targets = [node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", [])
        if any(isinstance(t, ast.Name) and t.id == name for t in targets) and node.value:
            return ast.literal_eval(node.value)
    raise LookupError(name)


def _kernels(tree: ast.Module) -> list[ast.FunctionDef]:
    """Functions decorated with `...jit(...)` anywhere in the module."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for deco in node.decorator_list:
                target = deco.func if isinstance(deco, ast.Call) else deco
                if isinstance(target, ast.Attribute) and target.attr == "jit":
                    found.append(node)
    return found


def _int_list(node: ast.AST) -> list[int] | None:
    if isinstance(node, ast.List | ast.Tuple) and all(
            isinstance(e, ast.Constant) and type(e.value) is int for e in node.elts):
        return [e.value for e in node.elts]
    return None


def _is_loop(node: ast.AST) -> bool:
    return isinstance(node, ast.For) and _call_name(node.iter) in ("loop", "loop_unroll")


def check_cube_tiles(tree: ast.Module, out: Findings) -> None:
    calls = [n for n in ast.walk(tree) if _call_name(n) == "set_cube_tile_shapes"]
    if not calls:
        out.add("N/A", "LC1", "no set_cube_tile_shapes call (vector-only kernel)")
    for call in calls:
        assert isinstance(call, ast.Call)
        if all(_int_list(a) is not None for a in call.args) and len(call.args) == 3:
            out.add("PASS", "LC1", "cube tiles are literal ints", call)
        else:
            out.add("FAIL", "LC1", "cube tile shapes must be three literal int lists", call)


def check_vec_tile(kernel: ast.FunctionDef, out: Findings) -> None:
    calls = [n for n in ast.walk(kernel) if _call_name(n) == "set_vec_tile_shapes"]
    if len(calls) != 1:
        out.add("FAIL", "LC2", f"{len(calls)} set_vec_tile_shapes calls in {kernel.name}, "
                               "expected exactly one", kernel)
        return
    call = calls[0]
    first = kernel.body[0]
    if not (isinstance(first, ast.Expr) and first.value is call):
        out.add("FAIL", "LC2", "set_vec_tile_shapes must be the kernel's first statement", call)
        return
    assert isinstance(call, ast.Call)
    literal = all(isinstance(a, ast.Constant) and type(a.value) is int for a in call.args)
    starred = (len(call.args) == 1 and isinstance(call.args[0], ast.Starred)
               and isinstance(call.args[0].value, ast.Name))
    if literal:
        out.add("PASS", "LC2", "vector tile set first, from literal ints", call)
    elif starred:
        out.add("PASS", "LC2", "vector tile set first, from the config (see LC6)", call)
    else:
        out.add("FAIL", "LC2", "vector tile must be literal ints or *<config tile>", call)


def check_unroll(tree: ast.Module, kernel: ast.FunctionDef, out: Findings,
                 before_tuning: bool) -> None:
    unrolled = [n for n in ast.walk(kernel)
                if isinstance(n, ast.For) and _call_name(n.iter) == "loop_unroll"]
    calls = [n for n in ast.walk(kernel) if _call_name(n) == "loop_unroll"]
    if len(calls) != len(unrolled):
        out.add("FAIL", "LC3", "loop_unroll used outside the iterator of a for loop", kernel)
    if not unrolled:
        out.add("N/A", "LC3", "no loop_unroll in the kernel", kernel)
    for loop in unrolled:
        inner = [n for stmt in loop.body for n in ast.walk(stmt) if _is_loop(n)]
        if inner:
            out.add("FAIL", "LC3", "loop_unroll on a loop that has an inner loop", loop)
        else:
            out.add("PASS", "LC3", "loop_unroll on the innermost loop", loop)
        target = loop.target
        if not (isinstance(target, ast.Tuple) and len(target.elts) == 2
                and isinstance(target.elts[1], ast.Name)):
            out.add("FAIL", "LC4", "loop_unroll must be unpacked as (index, factor)", loop)
            continue
        factor = target.elts[1].id
        used = any(isinstance(n, ast.Name) and n.id == factor
                   for stmt in loop.body for n in ast.walk(stmt))
        out.add("PASS" if used else "FAIL", "LC4",
                f"body {'uses' if used else 'ignores'} the unroll factor '{factor}'", loop)
        assert isinstance(loop.iter, ast.Call)
        for keyword in loop.iter.keywords:
            values = _int_list(keyword.value) if keyword.arg == "unroll_list" else None
            if values is not None:
                _check_unroll_values(values, "literal unroll_list", out, before_tuning, loop)


def _check_unroll_values(values: Any, what: str, out: Findings, before_tuning: bool,
                         node: ast.AST | None) -> None:
    ok = (isinstance(values, list) and values
          and all(type(v) is int and v > 0 for v in values)
          and values == sorted(set(values), reverse=True))
    if not ok:
        out.add("FAIL", "LC5", f"{what} {values!r} must be descending positive ints", node)
    elif before_tuning and len(values) != 1:
        out.add("FAIL", "LC5", f"{what} {values} must be single-valued before tuning", node)
    else:
        out.add("PASS", "LC5", f"{what} {values}", node)


def check_config(tree: ast.Module, config: dict[str, Any], rank: int, out: Findings,
                 before_tuning: bool) -> None:
    merged = {**_literal(tree, "DEFAULT_CONFIG"), **config}
    tile = merged.get("vec_tile_shape")
    if (isinstance(tile, list) and len(tile) == rank
            and all(type(v) is int and v > 0 for v in tile)):
        out.add("PASS", "LC6", f"config vec_tile_shape {tile} fits a rank-{rank} input")
    else:
        out.add("FAIL", "LC6", f"config vec_tile_shape {tile!r} needs {rank} positive ints")
    _check_unroll_values(merged.get("unroll_list"), "config unroll_list", out, before_tuning,
                         None)


def check_signature(tree: ast.Module, kernel: ast.FunctionDef, out: Findings) -> None:
    names = list(_literal(tree, "INPUT_NAMES")) + list(_literal(tree, "OUTPUT_NAMES"))
    params = [a.arg for a in kernel.args.args]
    if params != names:
        out.add("FAIL", "LC7", f"kernel parameters {params} differ from "
                               f"INPUT_NAMES + OUTPUT_NAMES {names}", kernel)
        return
    annotations = [ast.dump(a.annotation) if a.annotation else None for a in kernel.args.args]
    if None in annotations or len(set(annotations)) != 1:
        out.add("FAIL", "LC7", "every input and output needs the same pypto.Tensor(shape, "
                               "dtype) annotation (softmax keeps shape and dtype)", kernel)
    else:
        out.add("PASS", "LC7", "outputs declared with the input's shape and dtype", kernel)


def check_golden(tree: ast.Module, front: dict[str, Any], out: Findings) -> None:
    dtypes = set(_dtype_keys(tree))
    missing = sorted(set(front["supported_dtypes"]) - dtypes)
    if missing:
        out.add("FAIL", "LC8", f"SPEC dtypes {missing} are not in the impl's DTYPES")
    if importlib.util.find_spec("torch") is None:
        out.add("SKIP", "LC8", "torch not importable: golden shape/dtype not checked")
        return
    spec = importlib.util.spec_from_file_location("_layout_golden", HERE / "softmax_golden.py")
    assert spec is not None and spec.loader is not None
    golden = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(golden)
    shape = front["p0_shapes"][0]
    for dtype in front["supported_dtypes"]:
        (x,) = golden.make_inputs(shape, dtype, 0)
        outs = golden.golden(x)
        bad = [o for o in outs if tuple(o.shape) != tuple(x.shape) or o.dtype != x.dtype]
        if bad or not outs:
            out.add("FAIL", "LC8", f"golden outputs for {dtype} {shape} do not keep the "
                                   "input's shape and dtype")
        else:
            out.add("PASS", "LC8", f"golden outputs keep shape {shape} and dtype {dtype}")


def _dtype_keys(tree: ast.Module) -> list[str]:
    for node in tree.body:
        if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "DTYPES"
                                                 for t in node.targets)
                and isinstance(node.value, ast.Dict)):
            return [k.value for k in node.value.keys if isinstance(k, ast.Constant)]
    return []


def _front_matter(path: Path) -> dict[str, Any]:
    sys.path.insert(0, str(HERE.parents[1]))  # the repository root, for tools.pypto.spec
    from tools.pypto.spec import parse_front_matter

    return parse_front_matter(path.read_text(encoding="utf-8"), str(path))


def check_annotations(tree: ast.Module, out: Findings) -> None:
    postponed = [n for n in tree.body if isinstance(n, ast.ImportFrom)
                 and n.module == "__future__" and any(a.name == "annotations" for a in n.names)]
    for node in postponed:
        out.add("FAIL", "LC9", "postponed annotations hide the kernel's tensor types from "
                               "pypto", node)
    if not postponed:
        out.add("PASS", "LC9", "annotations are evaluated (no __future__ annotations)")


def check(impl: Path, spec_path: Path, config: dict[str, Any], before_tuning: bool) -> Findings:
    """Every rule on one kernel file and one config."""
    out = Findings(impl)
    tree = ast.parse(impl.read_text(encoding="utf-8"), str(impl))
    front = _front_matter(spec_path)
    kernels = _kernels(tree)
    if len(kernels) != 1:
        out.add("FAIL", "LC0", f"expected one @jit kernel, found {len(kernels)}")
        return out
    kernel = kernels[0]
    check_cube_tiles(tree, out)
    check_vec_tile(kernel, out)
    check_unroll(tree, kernel, out, before_tuning)
    check_config(tree, config, len(front["p0_shapes"][0]), out, before_tuning)
    check_signature(tree, kernel, out)
    check_golden(tree, front, out)
    check_annotations(tree, out)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", type=Path, default=HERE / "softmax_impl.py")
    parser.add_argument("--spec", type=Path, default=HERE / "SPEC.md")
    parser.add_argument("--config", default="{}", help="the config to check, as JSON")
    parser.add_argument("--before-tuning", action="store_true",
                        help="activation time: unroll lists must be single-valued")
    args = parser.parse_args(argv)
    try:
        config = json.loads(args.config)
        if not isinstance(config, dict):
            raise ValueError("not a JSON object")
    except ValueError as e:
        print(f"--config: {e}", file=sys.stderr)
        return 2
    findings = check(args.impl, args.spec, config, args.before_tuning)
    print("\n".join(findings.lines))
    print(f"layout check: {findings.failed} failing rule(s)")
    return 1 if findings.failed else 0


if __name__ == "__main__":
    sys.exit(main())
