"""Config values set in PyPTO kernel sources, found with `ast` (never imported, never executed).

Production kernels are the protocol's first prior (seed, "Constrained search"; PYPTO.md: grep
for `set_vec_tile_shapes`, `set_cube_tile_shapes`, `unroll_list`, `loop_unroll`, `stitch`).
Parsing instead of grepping tells a literal `unroll_list=[8, 4, 2, 1]` from a computed one,
and gives each value its file:line. Non-literal arguments are reported as skipped; a file
that does not parse is reported and skipped, never fatal.

`scan_source` is pure; `scan_paths` is the thin file-reading shell around it.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from attrs import frozen

# Calls that name config values, by the last part of their dotted name.
VEC_TILE_CALL = "set_vec_tile_shapes"
CUBE_TILE_CALL = "set_cube_tile_shapes"
LOOP_CALLS = frozenset({"loop", "loop_unroll"})
JIT_CALL = "jit"
PASS_OPTIONS_CALL = "set_pass_options"
OPTION_KWARGS = ("runtime_options", "pass_options")
# Entries of runtime_options that select how a kernel runs, not how it is tuned: a non-literal
# `run_mode: pypto.RunMode.SIM` is in every simulated kernel and reporting it is only noise.
_NOT_KNOBS = frozenset({"run_mode"})
MODULE_SCOPE = "<module>"


@frozen
class Finding:
    """Config values that one call in a kernel source sets, and where."""

    path: str
    line: int
    scope: str  # the enclosing function ("outer.inner"), or <module>
    call: str  # the call's dotted name as written, e.g. "pypto.set_vec_tile_shapes"
    values: dict[str, Any]  # config key -> plain JSON value
    via: tuple[str, ...] = ()  # module constants the values were read from, "NAME (file:line)"

    @property
    def where(self) -> str:
        """file:line of the call."""
        return f"{self.path}:{self.line}"


@frozen
class Skipped:
    """An argument the scanner could not read as a literal, with why."""

    path: str
    line: int
    call: str
    reason: str

    @property
    def where(self) -> str:
        """file:line of the argument."""
        return f"{self.path}:{self.line}"


@frozen
class Unreadable:
    """A file the scanner could not read or parse."""

    path: str
    line: int | None
    reason: str

    @property
    def where(self) -> str:
        """file:line of the problem (file alone when no line is known)."""
        return self.path if self.line is None else f"{self.path}:{self.line}"


@frozen
class ScanResult:
    """What scanning kernel sources found, skipped, and could not read."""

    findings: tuple[Finding, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    errors: tuple[Unreadable, ...] = ()
    files: int = 0


def merge(results: Iterable[ScanResult]) -> ScanResult:
    """One ScanResult holding every result's findings, skips, errors and file count."""
    found: list[Finding] = []
    skipped: list[Skipped] = []
    errors: list[Unreadable] = []
    files = 0
    for result in results:
        found.extend(result.findings)
        skipped.extend(result.skipped)
        errors.extend(result.errors)
        files += result.files
    return ScanResult(tuple(found), tuple(skipped), tuple(errors), files)


# --- literal values --------------------------------------------------------------------------


class NotLiteral(Exception):
    """A node whose value is not a literal (or not plain JSON data)."""


def to_json(value: Any) -> Any:
    """A literal as plain JSON: tuples become lists, int dict keys strings; NotLiteral otherwise."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NotLiteral(f"{value!r} is not a finite number")
        return value
    if isinstance(value, list | tuple):
        return [to_json(item) for item in value]
    if isinstance(value, dict):
        # pass options map merge-group ids to counts, {-1: 2}; JSON keys are strings.
        out: dict[str, Any] = {}
        for key, item in value.items():
            if isinstance(key, bool) or not isinstance(key, int | str):
                raise NotLiteral(f"dict key {key!r} is neither a string nor an int")
            out[str(key)] = to_json(item)
        return out
    raise NotLiteral(f"{type(value).__name__} value {value!r} is not plain JSON data")


def _source_text(node: ast.AST, text: str) -> str:
    segment = ast.get_source_segment(text, node) or ast.dump(node)
    segment = " ".join(segment.split())
    return segment if len(segment) <= 60 else segment[:57] + "..."


class _Module:
    """One parsed file: its text, path and the module-level constants it defines."""

    def __init__(self, tree: ast.Module, text: str, path: str) -> None:
        self.text = text
        self.path = path
        self.bound = _single_bindings(tree)
        self.constants = _module_constants(self.bound)

    def literal(self, node: ast.AST) -> tuple[Any, tuple[str, ...]]:
        """The node's plain JSON value and the constants it came through; NotLiteral if none."""
        if isinstance(node, ast.Name) and node.id in self.constants:
            value, line = self.constants[node.id]
            return value, (f"{node.id} ({self.path}:{line})",)
        try:
            value = ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as e:
            raise NotLiteral(f"`{_source_text(node, self.text)}` is not a literal") from e
        return to_json(value), ()

    def shown(self, node: ast.AST) -> str:
        """The node's source text, shortened, for a message."""
        return _source_text(node, self.text)


def _single_bindings(tree: ast.Module) -> dict[str, tuple[ast.expr, int]]:
    """Names bound exactly once at module level by a plain assignment: name -> (value, line)."""
    bound: dict[str, list[tuple[ast.expr | None, int]]] = {}
    for statement in tree.body:
        for name, value in _bindings(statement):
            bound.setdefault(name, []).append((value, statement.lineno))
    single: dict[str, tuple[ast.expr, int]] = {}
    for name, bindings in bound.items():
        value, line = bindings[0]
        if len(bindings) == 1 and value is not None:
            single[name] = (value, line)
    return single


def _module_constants(bound: Mapping[str, tuple[ast.expr, int]]) -> dict[str, tuple[Any, int]]:
    """The single bindings whose value is a literal: name -> (plain JSON value, line)."""
    constants: dict[str, tuple[Any, int]] = {}
    for name, (node, line) in bound.items():
        try:
            constants[name] = (to_json(ast.literal_eval(node)), line)
        except (ValueError, TypeError, SyntaxError, NotLiteral, MemoryError, RecursionError):
            continue
    return constants


def _bindings(statement: ast.stmt) -> Iterator[tuple[str, ast.expr | None]]:
    """(name, literal node or None when the binding is not a plain assignment) per binding."""
    if isinstance(statement, ast.Assign):
        single = len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name)
        for target in statement.targets:
            for name in _target_names(target):
                yield name, statement.value if single else None
    elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
        yield statement.target.id, statement.value
    elif isinstance(statement, ast.AugAssign):
        yield from ((name, None) for name in _target_names(statement.target))
    elif isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield statement.name, None
    elif isinstance(statement, ast.Import | ast.ImportFrom):
        for alias in statement.names:
            yield (alias.asname or alias.name).split(".")[0], None
    else:
        # Bindings inside if/for/with/try blocks make a name's value depend on control flow.
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                yield node.id, None


def _target_names(target: ast.AST) -> Iterator[str]:
    for node in ast.walk(target):
        if isinstance(node, ast.Name):
            yield node.id


def dotted_name(node: ast.AST) -> str | None:
    """`a.b.c` for a name or attribute chain, None for anything else (calls, subscripts)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = dotted_name(node.value)
        return None if head is None else f"{head}.{node.attr}"
    return None


# --- the visitor -------------------------------------------------------------------------------


class _Scanner(ast.NodeVisitor):
    def __init__(self, module: _Module) -> None:
        self.module = module
        self.scopes: list[str] = []
        self.findings: list[Finding] = []
        self.skipped: list[Skipped] = []

    @property
    def scope(self) -> str:
        return ".".join(self.scopes) or MODULE_SCOPE

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._function(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.scopes.append(node.name)
        self.generic_visit(node)
        self.scopes.pop()

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        # A decorator such as @pypto.frontend.jit(runtime_options=...) configures the
        # function it decorates, so it is scanned inside that function's scope.
        self.scopes.append(node.name)
        for child in ast.iter_child_nodes(node):
            self.visit(child)
        self.scopes.pop()

    def visit_Call(self, node: ast.Call) -> None:
        name = dotted_name(node.func)
        last = name.rsplit(".", 1)[-1] if name else None
        if name is not None and last is not None:
            handler = _HANDLERS.get(last)
            if handler is not None:
                handler(self, node, name)
        self.generic_visit(node)

    # --- recording ---

    def found(
        self, node: ast.AST, call: str, values: dict[str, Any], via: Iterable[str] = ()
    ) -> None:
        if values:
            self.findings.append(
                Finding(
                    path=self.module.path,
                    line=_line(node),
                    scope=self.scope,
                    call=call,
                    values=values,
                    via=tuple(dict.fromkeys(via)),
                )
            )

    def skip(self, node: ast.AST, call: str, reason: str) -> None:
        self.skipped.append(
            Skipped(path=self.module.path, line=_line(node), call=call, reason=reason)
        )

    # --- handlers ---

    def vec_tile(self, node: ast.Call, call: str) -> None:
        try:
            tile, via = self._positional_ints(node)
        except NotLiteral as e:
            self.skip(node, call, f"vec tile shape not read: {e}")
            return
        if not tile:
            self.skip(node, call, "vec tile shape not read: no arguments")
            return
        self.found(node, call, {"vec_tile_shape": tile}, via)

    def _positional_ints(self, node: ast.Call) -> tuple[list[int], list[str]]:
        tile: list[int] = []
        via: list[str] = []
        for index, arg in enumerate(node.args, start=1):
            if isinstance(arg, ast.Starred):
                value, through = self.module.literal(arg.value)
                if not isinstance(value, list):
                    raise NotLiteral(f"*{self.module.shown(arg.value)} is not a literal list")
                items = value
            else:
                item, through = self.module.literal(arg)
                items = [item]
            via.extend(through)
            for item in items:
                if isinstance(item, bool) or not isinstance(item, int):
                    raise NotLiteral(f"argument {index} is {item!r}, not an int")
                tile.append(item)
        return tile, via

    def cube_tile(self, node: ast.Call, call: str) -> None:
        via: list[str] = []
        shape: list[Any] = []
        for index, arg in enumerate(node.args, start=1):
            try:
                if isinstance(arg, ast.Starred):
                    raise NotLiteral(f"*{self.module.shown(arg.value)} is not three literal lists")
                value, through = self.module.literal(arg)
            except NotLiteral as e:
                self.skip(arg, call, f"cube tile shape not read: argument {index}: {e}")
                return
            shape.append(value)
            via.extend(through)
        if len(shape) != 3:
            self.skip(
                node,
                call,
                f"cube tile shape not read: {len(shape)} positional "
                "arguments, expected three lists [mL0,mL1], [kL0,kL1], [nL0,nL1]",
            )
            return
        values: dict[str, Any] = {"cube_tile_shape": shape}
        values.update(self._keywords(node, call, (kw for kw in node.keywords), via))
        self.found(node, call, values, via)

    def _keywords(
        self, node: ast.Call, call: str, keywords: Iterable[ast.keyword], via: list[str]
    ) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for keyword in keywords:
            if keyword.arg is None:
                self.skip(
                    keyword.value,
                    call,
                    f"**{self.module.shown(keyword.value)} is not read (not a literal keyword)",
                )
                continue
            try:
                value, through = self.module.literal(keyword.value)
            except NotLiteral as e:
                self.skip(keyword.value, call, f"{keyword.arg}= not read: {e}")
                continue
            values[keyword.arg] = value
            via.extend(through)
        return values

    def loop(self, node: ast.Call, call: str) -> None:
        for keyword in node.keywords:
            if keyword.arg != "unroll_list":
                continue
            try:
                value, via = self.module.literal(keyword.value)
            except NotLiteral as e:
                self.skip(keyword.value, call, f"unroll_list= not read: {e}")
                return
            self.found(node, call, {"unroll_list": value}, via)

    def jit(self, node: ast.Call, call: str) -> None:
        via: list[str] = []
        values: dict[str, Any] = {}
        for keyword in node.keywords:
            if keyword.arg in OPTION_KWARGS:
                values.update(self._options(keyword.value, call, keyword.arg, via))
        self.found(node, call, values, via)

    def pass_options(self, node: ast.Call, call: str) -> None:
        via: list[str] = []
        values: dict[str, Any] = {}
        for arg in node.args:
            values.update(self._options(arg, call, "pass options", via))
        values.update(self._keywords(node, call, node.keywords, via))
        self.found(node, call, values, via)

    def _options(self, node: ast.AST, call: str, what: str, via: list[str]) -> dict[str, Any]:
        """The literal entries of an options dict; each non-literal entry is reported."""
        if isinstance(node, ast.Name) and isinstance(
            self.module.bound.get(node.id, (None,))[0], ast.Dict
        ):
            # A module-level options dict: its literal entries count even when another
            # entry (run_mode=pypto.RunMode.SIM) keeps the whole dict from being a literal.
            bound, line = self.module.bound[node.id]
            via.append(f"{node.id} ({self.module.path}:{line})")
            return self._options(bound, call, f"{what} ({node.id})", via)
        if isinstance(node, ast.Dict):
            values: dict[str, Any] = {}
            for key_node, value_node in zip(node.keys, node.values, strict=True):
                key = key_node.value if isinstance(key_node, ast.Constant) else None
                if not isinstance(key, str):
                    shown = (
                        f"**{self.module.shown(value_node)}"
                        if key_node is None
                        else f"{self.module.shown(key_node)}: ..."
                    )
                    self.skip(
                        value_node,
                        call,
                        f"{what}: entry `{shown}` is not read (not a literal string key)",
                    )
                    continue
                try:
                    values[key], through = self.module.literal(value_node)
                except NotLiteral as e:
                    if key not in _NOT_KNOBS:
                        self.skip(value_node, call, f"{what}[{key!r}] not read: {e}")
                    continue
                via.extend(through)
            return values
        try:
            value, through = self.module.literal(node)
        except NotLiteral:
            self.skip(
                node, call, f"{what} not read: `{self.module.shown(node)}` is not a literal dict"
            )
            return {}
        if not isinstance(value, dict):
            self.skip(node, call, f"{what} not read: {value!r} is not a dict")
            return {}
        via.extend(through)
        return {k: v for k, v in value.items() if k not in _NOT_KNOBS}


def _line(node: ast.AST) -> int:
    return int(getattr(node, "lineno", 0))


_HANDLERS: Mapping[str, Callable[[_Scanner, ast.Call, str], None]] = {
    VEC_TILE_CALL: _Scanner.vec_tile,
    CUBE_TILE_CALL: _Scanner.cube_tile,
    **{name: _Scanner.loop for name in LOOP_CALLS},
    JIT_CALL: _Scanner.jit,
    PASS_OPTIONS_CALL: _Scanner.pass_options,
}


# --- entry points --------------------------------------------------------------------------


def scan_source(text: str, path: str) -> ScanResult:
    """The config values a kernel source sets, in line order; a syntax error is reported."""
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as e:
        return ScanResult(
            errors=(Unreadable(path=path, line=e.lineno, reason=f"does not parse: {e.msg}"),),
            files=1,
        )
    except (ValueError, RecursionError, MemoryError) as e:  # NUL bytes, absurd nesting
        return ScanResult(
            errors=(Unreadable(path=path, line=None, reason=f"does not parse: {e}"),), files=1
        )
    scanner = _Scanner(_Module(tree, text, path))
    try:
        scanner.visit(tree)
    except RecursionError:
        return ScanResult(
            errors=(Unreadable(path=path, line=None, reason="too deeply nested to scan"),), files=1
        )
    findings = sorted(scanner.findings, key=lambda f: (f.line, f.call))
    skipped = sorted(scanner.skipped, key=lambda s: (s.line, s.call, s.reason))
    return ScanResult(findings=tuple(findings), skipped=tuple(skipped), files=1)


def python_files(directory: Path) -> list[Path]:
    """The .py files under `directory` (or the file itself), sorted, hidden folders left out."""
    if directory.is_file():
        return [directory]
    return sorted(
        p
        for p in directory.rglob("*.py")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(directory).parts)
    )


def scan_paths(paths: Iterable[Path]) -> ScanResult:
    """Scan every Python file under `paths`; unreadable files are reported, never fatal."""
    results: list[ScanResult] = []
    for root in paths:
        if not root.exists():
            results.append(
                ScanResult(errors=(Unreadable(path=str(root), line=None, reason="does not exist"),))
            )
            continue
        for file in python_files(root):
            try:
                text = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as e:
                results.append(
                    ScanResult(
                        errors=(Unreadable(path=str(file), line=None, reason=f"not read: {e}"),),
                        files=1,
                    )
                )
                continue
            results.append(scan_source(text, str(file)))
    return merge(results)
