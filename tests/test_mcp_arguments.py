"""Every tool's input schema against what the tool and its CLI command accept (issue 28.2): a
value of the wrong type for any argument is the JSON error object (code 2, naming the field and
what it expects), never the validator's text; a value of the right type passes the schema and
the CLI command's own parser."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

import anyio
import click
import pytest

pytest.importorskip("mcp")
from mcp.server.mcpserver import MCPServer

from ledger.cli import cli
from ledger.mcp.arguments import Skill
from ledger.mcp.invoke import Invoker
from ledger.mcp.reads import ReadTools
from ledger.mcp.server import build_server
from ledger.mcp.steps import StepTools
from ledger.schema.vocabulary import SKILLS


def _schemas(server: MCPServer[Any]) -> dict[str, dict[str, Any]]:
    tools = anyio.run(server.list_tools)
    return {tool.name: tool.input_schema for tool in tools}


def _types(schema: dict[str, Any], defs: dict[str, Any]) -> set[str]:
    """The JSON types a property accepts ("enum" for a closed list of strings)."""
    if "$ref" in schema:
        return _types(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    if "enum" in schema:
        return {"enum"}
    found: set[str] = set()
    for option in schema.get("anyOf", ()):
        found |= _types(option, defs)
    if "type" in schema:
        found.add(schema["type"])
    return found


# Values of each JSON type; a wrong one is the first whose type the property does not accept.
_SAMPLES: tuple[tuple[str, Any], ...] = (
    ("object", {"wrong": True}),
    ("array", [{"wrong": True}]),
    ("boolean", {"nested": []}),
)


def _wrong(schema: dict[str, Any], defs: dict[str, Any]) -> Any:
    types = _types(schema, defs)
    if types == {"enum"} or types == {"enum", "null"}:
        return "no-such-choice"
    for kind, value in _SAMPLES:
        if kind not in types:
            return value
    raise AssertionError(f"no wrong value for {schema}")


def _right(schema: dict[str, Any], defs: dict[str, Any]) -> Any:
    """A value of the property's first type (bounds respected), as a model would send it."""
    if "$ref" in schema:
        return _right(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    if "enum" in schema:
        return schema["enum"][0]
    if "anyOf" in schema:
        return _right(next(o for o in schema["anyOf"] if o.get("type") != "null"), defs)
    kind = schema.get("type")
    if kind == "array":
        return [_right(schema.get("items", {"type": "string"}), defs)]
    if kind == "object":
        return {"vec_tile_shape": [1, 8, 1, 32]}
    if kind == "boolean":
        return True
    if kind in ("integer", "number"):
        return 1 if kind == "integer" else 50.0
    return "x1"


def _base(schema: dict[str, Any]) -> dict[str, Any]:
    """Right-typed values for the required arguments."""
    defs = schema.get("$defs", {})
    return {name: _right(schema["properties"][name], defs) for name in schema.get("required", ())}


CASES = [
    (tool, field)
    for tool, schema in _schemas(build_server(Path("."))).items()
    for field in schema["properties"]
]


@pytest.mark.parametrize(("tool", "field"), CASES, ids=[f"{t}.{f}" for t, f in CASES])
def test_a_wrong_type_is_the_json_error_naming_the_field(tool: str, field: str) -> None:
    server = build_server(Path("."))
    schema = _schemas(server)[tool]
    wrong = _wrong(schema["properties"][field], schema.get("$defs", {}))
    result = anyio.run(server.call_tool, tool, {**_base(schema), field: wrong})
    assert result.is_error
    error = json.loads(result.content[0].text)
    assert error == result.structured_content
    assert (error["code"], error["kind"], error["field"]) == (2, "bad-input", field)
    assert error["expected"] and "pydantic" not in error["expected"]
    assert field in error["error"] and "validation error" not in error["error"]


class _Recorder(Invoker):
    """An invoker that keeps the command line a tool builds instead of running it."""

    def call(self, argv: list[str]) -> Any:
        self.argv = argv
        return None


def _parse(argv: list[str]) -> click.Context:
    """The CLI command's own parse of `argv` (types, choices, unknown options), not run."""
    context = cli.make_context("tune-ledger", ["--json", *argv])
    command: click.Command = cli
    words = [*context._protected_args, *context.args]
    while isinstance(command, click.Group):
        name, found, words = command.resolve_command(context, words)
        assert found is not None, argv
        command = found
        context = command.make_context(name or "", words, parent=context)
        if isinstance(command, click.Group):
            words = [*context._protected_args, *context.args]
    return context


@pytest.mark.parametrize(("tool", "field"), CASES, ids=[f"{t}.{f}" for t, f in CASES])
def test_a_right_type_passes_the_schema_and_the_cli_parser(tool: str, field: str) -> None:
    server = build_server(Path("."))
    schema = _schemas(server)[tool]
    defs = schema.get("$defs", {})
    arguments = {**_base(schema), field: _right(schema["properties"][field], defs)}
    registered = server._tool_manager.get_tool(tool)
    assert registered is not None
    validated = registered.fn_metadata.validate_arguments(arguments)
    recorder = _Recorder(Path("."))
    functions = {**StepTools(recorder).tools(), **ReadTools(recorder).tools()}
    functions[tool](**validated)
    context = _parse(recorder.argv)
    given = {k: v for k, v in context.params.items() if v not in (None, False, ())}
    assert given, (tool, field, recorder.argv)


def test_the_skill_arguments_name_the_skills_of_r2() -> None:
    assert get_args(Skill) == SKILLS
