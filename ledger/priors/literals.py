"""Literal values in a parsed Python module: plain JSON data, read from nodes and module constants.

Only `ast.literal_eval` and single, plain module-level assignments are trusted: nothing is
imported or executed, and a name bound twice or under control flow is not a constant.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Iterator, Mapping
from typing import Any


class NotLiteral(Exception):
    """A node whose value is not a literal (or not plain JSON data)."""


def to_json(value: Any) -> Any:
    """A literal as plain JSON: tuples become lists, int dict keys strings; NotLiteral otherwise."""
    if value is None or isinstance(value, bool | str | int):
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


class ParsedModule:
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
