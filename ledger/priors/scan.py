"""Config values set in PyPTO kernel sources, found with `ast` (never imported, never executed).

Production kernels are the protocol's first prior (seed, "Constrained search"; PYPTO.md: grep
for `set_vec_tile_shapes`, `set_cube_tile_shapes`, `unroll_list`, `loop_unroll`, `stitch`).
Parsing instead of grepping tells a literal `unroll_list=[8, 4, 2, 1]` from a computed one
(ledger/priors/literals.py), and gives each value its file:line. Non-literal arguments are
reported as skipped; a file that does not parse is reported and skipped, never fatal.

`scan_source` is pure; `scan_paths` is the thin file-reading shell around it.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ledger.errors import LedgerError
from ledger.log import safe_files
from ledger.priors.literals import NotLiteral, ParsedModule, dotted_name
from ledger.priors.scan_result import (
    MODULE_SCOPE,
    KernelValue,
    ScanResult,
    Skipped,
    Unreadable,
    merge,
)

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


# --- the visitor -------------------------------------------------------------------------------


class _Scanner(ast.NodeVisitor):
    def __init__(self, module: ParsedModule) -> None:
        self.module = module
        self.scopes: list[str] = []
        self.findings: list[KernelValue] = []
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
                KernelValue(
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
        values.update(self._keywords(call, node.keywords, via))
        self.found(node, call, values, via)

    def _keywords(
        self, call: str, keywords: Iterable[ast.keyword], via: list[str]
    ) -> dict[str, Any]:
        """The literal keyword arguments among `keywords`; each other one is reported."""
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
        via: list[str] = []
        unroll = (keyword for keyword in node.keywords if keyword.arg == "unroll_list")
        self.found(node, call, self._keywords(call, unroll, via), via)

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
        values.update(self._keywords(call, node.keywords, via))
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
    scanner = _Scanner(ParsedModule(tree, text, path))
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
            try:  # a regular file, bounded (ledger/log/safe_files.py)
                text = safe_files.read_text(file, limit=safe_files.TEXT_BYTES)
            except (OSError, LedgerError) as e:
                reason = e.message if isinstance(e, LedgerError) else str(e)
                results.append(
                    ScanResult(
                        errors=(
                            Unreadable(path=str(file), line=None, reason=f"not read: {reason}"),
                        ),
                        files=1,
                    )
                )
                continue
            results.append(scan_source(text, str(file)))
    return merge(results)
