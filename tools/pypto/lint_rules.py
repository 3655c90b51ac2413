"""The static rules of an op's layout check, on a kernel's syntax tree (pure, no pypto import).

Each rule adds PASS, FAIL or N/A findings to a `Findings`; none of them knows an op's name:
what they need (the kernel, its input and output names, the manifest's knob defaults) comes
from the op folder (docs/OP_FOLDER.md). The rules are the upstream op lint rules this project
implements (PYPTO.md: cube tile given as literal ints, unroll only on the innermost loop,
single-valued unroll before tuning), plus the facts of pypto 0.2.0 that break a kernel.
"""

from __future__ import annotations

import ast
from typing import Any

from ledger.domain.configs import filled

# Each rule's one-line statement, shown by `--rules` and in docs/OP_FOLDER.md.
RULES: dict[str, str] = {
    "LC0": "the impl defines exactly one @...jit kernel",
    "LC1": "cube tile shapes are literal ints or trace-time constants from the config",
    "LC2": "the vector tile is set once, first thing in the kernel, from literal ints or the "
    "config",
    "LC3": "loop_unroll only on the innermost loop, and only as the iterator of a `for`",
    "LC4": "an unrolled loop body uses its unroll factor",
    "LC5": "unroll lists are descending positive ints; single-valued before tuning",
    "LC6": "the config's tile shapes are well formed (vec: the default's rank; cube: 3 pairs)",
    "LC7": "kernel parameters are INPUT_NAMES + OUTPUT_NAMES, each a pypto.Tensor(shape, "
    "dtype); a literal dtype agrees with the golden's",
    "LC8": "the golden gives one tensor per name, for every dtype SPEC.md supports",
    "LC9": "no `from __future__ import annotations` in the impl",
}


class Findings:
    """The findings of one check, one line each, and how many failed."""

    def __init__(self, source_name: str) -> None:
        self.source_name = source_name
        self.lines: list[str] = []
        self.failed = 0

    def add(self, status: str, rule: str, message: str, node: ast.AST | None = None) -> None:
        """Record one finding; `node` gives the kernel line it is about."""
        line = getattr(node, "lineno", None)
        where = f"{self.source_name}:{line}" if line is not None else self.source_name
        self.lines.append(f"{status:<4} {rule} {where}: {message}")
        self.failed += status == "FAIL"


def call_name(node: ast.AST) -> str | None:
    """The called function's last name (`pypto.loop_unroll(...)` → `loop_unroll`)."""
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute):
            return func.attr
        if isinstance(func, ast.Name):
            return func.id
    return None


def module_literal(tree: ast.Module, name: str) -> Any:
    """The literal value a module-level assignment gives `name` (LookupError when absent)."""
    for node in tree.body:
        targets = [node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", [])
        value = getattr(node, "value", None)
        if value is not None and any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return ast.literal_eval(value)
    raise LookupError(name)


def dict_keys(tree: ast.Module, name: str) -> list[str] | None:
    """The string keys of a module-level dict display `name = {...}` (values may be code)."""
    for node in tree.body:
        targets = [node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", [])
        value = getattr(node, "value", None)
        if isinstance(value, ast.Dict) and any(
            isinstance(t, ast.Name) and t.id == name for t in targets
        ):
            return [str(k.value) for k in value.keys if isinstance(k, ast.Constant)]
    return None


def kernels(tree: ast.Module) -> list[ast.FunctionDef]:
    """Functions decorated with `...jit` or `...jit(...)` anywhere in the module."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                name = target.attr if isinstance(target, ast.Attribute) else None
                name = target.id if isinstance(target, ast.Name) else name
                if name == "jit":
                    found.append(node)
    return found


def _int_list(node: ast.AST) -> list[int] | None:
    if isinstance(node, ast.List | ast.Tuple) and all(
        isinstance(e, ast.Constant) and type(e.value) is int for e in node.elts
    ):
        return [
            int(e.value) for e in node.elts if isinstance(e, ast.Constant) and type(e.value) is int
        ]
    return None


def _assigned_names(nodes: list[ast.stmt]) -> set[str]:
    """Names bound by assignments, loops and withs among `nodes` (nested scopes included)."""
    names: set[str] = set()
    for statement in nodes:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return names


def _enclosing_function(tree: ast.Module, kernel: ast.FunctionDef) -> ast.FunctionDef | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and kernel in node.body:
            return node
    return None


def _trace_constant(arg: ast.AST, closure: set[str], kernel_local: set[str]) -> bool:
    """A literal int list, or a name (starred or listed) bound outside the kernel: a value the
    tracer sees as a constant, never a tensor or a loop index."""
    if _int_list(arg) is not None:
        return True
    if isinstance(arg, ast.Starred):
        arg = arg.value
    if isinstance(arg, ast.Name):
        return arg.id in closure and arg.id not in kernel_local
    if isinstance(arg, ast.List | ast.Tuple):
        return all(_trace_constant(e, closure, kernel_local) for e in arg.elts)
    return isinstance(arg, ast.Constant) and type(arg.value) is int


def check_cube_tiles(tree: ast.Module, kernel: ast.FunctionDef, out: Findings) -> None:
    """LC1: cube tiles are literal ints or constants the build function took from the config."""
    calls = [n for n in ast.walk(kernel) if call_name(n) == "set_cube_tile_shapes"]
    if not calls:
        out.add("N/A", "LC1", "no set_cube_tile_shapes call (vector-only kernel)")
    outer = _enclosing_function(tree, kernel)
    closure = _assigned_names(outer.body) | {a.arg for a in outer.args.args} if outer else set()
    kernel_local = _assigned_names(kernel.body) | {a.arg for a in kernel.args.args}
    for call in calls:
        assert isinstance(call, ast.Call)
        args = call.args
        starred = len(args) == 1 and isinstance(args[0], ast.Starred)
        if (len(args) == 3 or starred) and all(
            _trace_constant(a, closure, kernel_local) for a in args
        ):
            out.add("PASS", "LC1", "cube tiles are literal ints or config constants", call)
        else:
            out.add(
                "FAIL",
                "LC1",
                "cube tile shapes must be three int lists [mL0,mL1],[kL0,kL1],[nL0,nL1], "
                "literal or taken from the config outside the kernel",
                call,
            )


def check_vec_tile(kernel: ast.FunctionDef, out: Findings) -> None:
    """LC2: one set_vec_tile_shapes call, the kernel's first statement."""
    calls = [n for n in ast.walk(kernel) if call_name(n) == "set_vec_tile_shapes"]
    if not calls:
        out.add("N/A", "LC2", f"no set_vec_tile_shapes call in {kernel.name}", kernel)
        return
    if len(calls) != 1:
        out.add("FAIL", "LC2", f"{len(calls)} set_vec_tile_shapes calls, expected one", kernel)
        return
    call = calls[0]
    first = kernel.body[0]
    cube_first = isinstance(first, ast.Expr) and call_name(first.value) == "set_cube_tile_shapes"
    second = kernel.body[1] if cube_first and len(kernel.body) > 1 else None
    if not any(isinstance(s, ast.Expr) and s.value is call for s in (first, second)):
        out.add(
            "FAIL", "LC2", "set_vec_tile_shapes must open the kernel (after the cube tile)", call
        )
        return
    assert isinstance(call, ast.Call)
    literal = all(isinstance(a, ast.Constant) and type(a.value) is int for a in call.args)
    starred = (
        len(call.args) == 1
        and isinstance(call.args[0], ast.Starred)
        and isinstance(call.args[0].value, ast.Name)
    )
    if literal or starred:
        out.add("PASS", "LC2", "vector tile set first, from literal ints or the config", call)
    else:
        out.add("FAIL", "LC2", "vector tile must be literal ints or *<config tile>", call)


def _is_loop(node: ast.AST) -> bool:
    return isinstance(node, ast.For) and call_name(node.iter) in ("loop", "loop_unroll")


def check_unroll(kernel: ast.FunctionDef, out: Findings, before_tuning: bool) -> None:
    """LC3-LC5: where loop_unroll may stand, that its factor is used, its literal lists."""
    unrolled = [
        n for n in ast.walk(kernel) if isinstance(n, ast.For) and call_name(n.iter) == "loop_unroll"
    ]
    calls = [n for n in ast.walk(kernel) if call_name(n) == "loop_unroll"]
    if len(calls) != len(unrolled):
        out.add("FAIL", "LC3", "loop_unroll used outside the iterator of a for loop", kernel)
    if not unrolled:
        out.add("N/A", "LC3", "no loop_unroll in the kernel", kernel)
    for loop in unrolled:
        inner = [n for statement in loop.body for n in ast.walk(statement) if _is_loop(n)]
        if inner:
            out.add("FAIL", "LC3", "loop_unroll on a loop that has an inner loop", loop)
        else:
            out.add("PASS", "LC3", "loop_unroll on the innermost loop", loop)
        target = loop.target
        if not (
            isinstance(target, ast.Tuple)
            and len(target.elts) == 2
            and isinstance(target.elts[1], ast.Name)
        ):
            out.add("FAIL", "LC4", "loop_unroll must be unpacked as (index, factor)", loop)
            continue
        factor = target.elts[1].id
        used = any(
            isinstance(n, ast.Name) and n.id == factor
            for statement in loop.body
            for n in ast.walk(statement)
        )
        out.add(
            "PASS" if used else "FAIL",
            "LC4",
            f"body {'uses' if used else 'ignores'} the unroll factor '{factor}'",
            loop,
        )
        assert isinstance(loop.iter, ast.Call)
        for keyword in loop.iter.keywords:
            values = _int_list(keyword.value) if keyword.arg == "unroll_list" else None
            if values is not None:
                check_unroll_values(values, "literal unroll_list", out, before_tuning, loop)


def check_unroll_values(
    values: Any, what: str, out: Findings, before_tuning: bool, node: ast.AST | None
) -> None:
    """LC5 on one unroll list."""
    ok = (
        isinstance(values, list)
        and values
        and all(type(v) is int and v > 0 for v in values)
        and values == sorted(set(values), reverse=True)
    )
    if not ok:
        out.add("FAIL", "LC5", f"{what} {values!r} must be descending positive ints", node)
    elif before_tuning and len(values) != 1:
        out.add("FAIL", "LC5", f"{what} {values} must be single-valued before tuning", node)
    else:
        out.add("PASS", "LC5", f"{what} {values}", node)


def check_config(
    config: dict[str, Any], defaults: dict[str, Any], out: Findings, before_tuning: bool
) -> None:
    """LC5/LC6 on the config the kernel will run: `config` over the manifest's defaults."""
    merged = filled(config, defaults)
    tile = merged.get("vec_tile_shape")
    rank = (
        len(defaults["vec_tile_shape"])
        if isinstance(defaults.get("vec_tile_shape"), list)
        else None
    )
    if tile is not None:
        if (
            isinstance(tile, list)
            and tile
            and (rank is None or len(tile) == rank)
            and all(type(v) is int and v > 0 for v in tile)
        ):
            out.add("PASS", "LC6", f"config vec_tile_shape {tile}")
        else:
            out.add("FAIL", "LC6", f"config vec_tile_shape {tile!r} needs {rank} positive ints")
    cube = merged.get("cube_tile_shape")
    if cube is not None:
        pairs = isinstance(cube, list) and len(cube) == 3
        if pairs and all(
            isinstance(p, list) and len(p) == 2 and all(type(v) is int and v > 0 for v in p)
            for p in cube
        ):
            out.add("PASS", "LC6", f"config cube_tile_shape {cube}")
        else:
            out.add(
                "FAIL",
                "LC6",
                f"config cube_tile_shape {cube!r} needs [[mL0,mL1],[kL0,kL1],[nL0,nL1]] "
                "of positive ints",
            )
    if "unroll_list" in merged:
        check_unroll_values(merged["unroll_list"], "config unroll_list", out, before_tuning, None)


def literal_dtypes(kernel: ast.FunctionDef) -> dict[str, str]:
    """{parameter: dtype name} for tensors annotated with a literal `pypto.DT_X` dtype."""
    found = {}
    for arg in kernel.args.args:
        note = arg.annotation
        if isinstance(note, ast.Call) and len(note.args) >= 2:
            dtype = note.args[1]
            if isinstance(dtype, ast.Attribute) and dtype.attr.startswith("DT_"):
                found[arg.arg] = dtype.attr[3:].lower()
    return found


def check_signature(
    tree: ast.Module, kernel: ast.FunctionDef, out: Findings
) -> tuple[list[str], list[str]] | None:
    """LC7 (static part): the parameters are the declared names, each a pypto.Tensor(...)."""
    try:
        inputs = list(module_literal(tree, "INPUT_NAMES"))
        outputs = list(module_literal(tree, "OUTPUT_NAMES"))
    except (LookupError, ValueError):
        out.add("FAIL", "LC7", "the impl needs literal INPUT_NAMES and OUTPUT_NAMES tuples")
        return None
    params = [a.arg for a in kernel.args.args]
    if params != inputs + outputs:
        out.add(
            "FAIL",
            "LC7",
            f"kernel parameters {params} differ from INPUT_NAMES + OUTPUT_NAMES {inputs + outputs}",
            kernel,
        )
        return None
    bare = [a.arg for a in kernel.args.args if call_name(a.annotation or ast.Pass()) != "Tensor"]
    if bare:
        out.add("FAIL", "LC7", f"parameters {bare} need a pypto.Tensor(shape, dtype) annotation")
        return None
    out.add("PASS", "LC7", f"kernel takes {inputs} and writes {outputs}", kernel)
    return inputs, outputs


def check_annotations(tree: ast.Module, out: Findings) -> None:
    """LC9: pypto reads parameter annotations as objects; strings turn tensors into scalars."""
    postponed = [
        n
        for n in tree.body
        if isinstance(n, ast.ImportFrom)
        and n.module == "__future__"
        and any(a.name == "annotations" for a in n.names)
    ]
    for node in postponed:
        out.add("FAIL", "LC9", "postponed annotations hide the kernel's tensor types", node)
    if not postponed:
        out.add("PASS", "LC9", "annotations are evaluated (no __future__ annotations)")
