"""The MCP server over stdio: every protocol step and read as a tool, each op's files as
resources, the protocol as a prompt (DESIGN §8), built on the official `mcp` SDK.

Every CLI command that is a protocol step or reads an op is a tool of the same name (dashes
as underscores; `evidence compare` is `evidence_compare`). Left out on purpose, because they
are not the optimizer agent's to call:
- `accept-rollback`: declares an older ledger the right one; a person's judgment after a git
  revert, recorded in their name.

A person's decision that lowers a guard (DESIGN §3.3) needs `--person NAME`, which no tool
passes: `resume_campaign`, `policy` lowering a guard, and `relax` without evidence are refused
(code 3, the guard's rule named) with the exact CLI command a person runs.
- `normalize`: rewrites the ledger file after a merge that bypassed the driver; a repository
  chore for the person who merged, never part of tuning.
- `git-setup`, `merge-driver`, `memory-merge-driver`: git's configuration and git's own calls.
- `agent-setup` and `mcp`: they install and run this server, before an agent exists.
- `dashboard`: writes a static site of every op for the people who review them; nothing an
  agent tuning one op reads (`status`, `log` and `report` are its views).
- `audit --all` and `check --all`: the tools take one op; call them once per op.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.types import CallToolResult, Resource, TextContent
from pydantic import ValidationError

from ledger import __version__
from ledger.errors import BadInput
from ledger.mcp import stdio_lines
from ledger.mcp.invoke import Invoker, compact
from ledger.mcp.protocol_prompt import protocol
from ledger.mcp.reads import OpResources, ReadTools
from ledger.mcp.steps import StepTools
from ledger.shell.api import list_ops

INSTRUCTIONS = (
    "tune-ledger: the event-sourced ledger of PyPTO kernel tuning campaigns under custom/<op>/. "
    "Every protocol step is a tool gated by rules R1-R11; a refusal is a tool error whose text "
    "is a JSON object with rule, error, blocking, next, allowed and code. Start with `resume` "
    "or `status`; the `protocol` prompt walks the steps."
)


# Each op's files as resources and as a client lists them: (scheme, file in custom/OP/ that
# must exist to list it, name, MIME type); the scheme names the OpResources method.
_OP_FILES = (
    ("memory", "MEMORY.md", "MEMORY.md", "text/markdown"),
    ("spec", "SPEC.md", "SPEC.md", "text/markdown"),
    ("status", "events.jsonl", "status", "application/json"),
)


class LedgerServer(MCPServer[Any]):
    """The SDK's server, whose resource list also names each op's files.

    The templates (`memory://{op}`…) serve any op, but a client that shows only listed
    resources (to let a person attach one) would show none: the list is built at each call
    from the ops under the root, so an op created by `init` or `new_op` appears at once."""

    def __init__(self, root: Path) -> None:
        super().__init__(
            name="tune-ledger", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
        )
        self._root = root

    async def list_resources(self) -> list[Resource]:
        listed = await super().list_resources()
        for op in list_ops(self._root):
            folder = self._root / "custom" / op
            listed += [
                Resource(uri=f"{scheme}://{op}", name=f"{op} {name}", mime_type=mime)
                for scheme, file, name, mime in _OP_FILES
                if (folder / file).is_file()
            ]
        return listed

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        """The tool's result; arguments that do not match its schema are the CLI's JSON error
        object (code 2, the field, what was expected), never the validator's text."""
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as e:
            if not isinstance(e.__cause__, ValidationError):
                raise
            tool = self._tool_manager.get_tool(name)
            schema = tool.parameters if tool is not None else {}
            return argument_error(name, e.__cause__, schema)

    async def run_stdio_async(self) -> None:
        """Serve over stdio, handing the SDK lines read and written on the event loop
        (ledger/mcp/stdio_lines.py says why) when stdin and stdout are pipes or sockets."""
        if not stdio_lines.usable():
            await super().run_stdio_async()
            return
        with stdio_lines.claimed_stdio() as (lines_in, lines_out):
            # The SDK reads `async for line in stdin` and awaits stdout.write and flush.
            async with stdio_server(stdin=lines_in, stdout=lines_out) as (read, write):  # type: ignore[arg-type]
                low = self._lowlevel_server  # what the SDK's own run_stdio_async runs
                await low.run(read, write, low.create_initialization_options())


# Tools that may run for minutes (a verifier, a kernel check) or read every ledger (audit,
# priors, report): always on a worker thread, so the server keeps answering meanwhile.
_ON_A_THREAD = frozenset({"measure", "audit", "check", "check_op", "priors", "report"})


def argument_error(tool: str, error: ValidationError, schema: dict[str, Any]) -> CallToolResult:
    """A tool call whose arguments fail the schema, as the JSON error object of a bad input
    (exit 2): the first field and what it expects (from the tool's input schema), every field
    in `fields`."""
    properties = schema.get("properties", {})
    problems: list[dict[str, str]] = []
    for problem in error.errors(include_url=False, include_input=False):
        field = str(problem["loc"][0]) if problem["loc"] else "(arguments)"
        if field in (p["field"] for p in problems):
            continue
        expected = "a value is required" if problem["type"] == "missing" else None
        if expected is None and field in properties:
            expected = describe(properties[field], schema.get("$defs", {}))
        problems.append({"field": field, "expected": expected or "a value of its schema"})
    first = problems[0]
    missing = first["expected"] == "a value is required"
    data = BadInput(
        f"argument {first['field']!r} of tool {tool!r} is required"
        if missing
        else f"argument {first['field']!r} of tool {tool!r} expects {first['expected']}",
        hint=f"call {tool} again with {first['field']} as its schema describes (tools/list)",
        details={"field": first["field"], "expected": first["expected"], "fields": problems},
    ).to_json()
    return CallToolResult(
        content=[TextContent(type="text", text=compact(data))],
        structured_content=data,
        is_error=True,
    )


_TYPES = {"string": "a string", "integer": "an integer", "number": "a number",
          "boolean": "true or false", "object": "a JSON object", "null": "null"}  # fmt: skip


def describe(schema: dict[str, Any], defs: dict[str, Any]) -> str:
    """A JSON schema in words: `a string`, `an integer >= 1`, `one of "vec", "cube"`…"""
    if "$ref" in schema:
        return describe(defs.get(schema["$ref"].rsplit("/", 1)[-1], {}), defs)
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(v) for v in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"])
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        kinds = [
            f"({text})" if text.startswith("a list") and len(options) > 2 else text
            for text in (describe(o, defs) for o in options if o.get("type") != "null")
        ]
        return " or ".join(dict.fromkeys(kinds)) + (
            " (or null)" if any(o.get("type") == "null" for o in options) else ""
        )
    kind = schema.get("type")
    if kind == "array":
        return "a list, each item " + describe(schema.get("items", {}), defs)
    text = _TYPES.get(str(kind), "a value")
    bounds = [f"{sign} {schema[key]}" for key, sign in (("minimum", ">="), ("maximum", "<="),
              ("exclusiveMinimum", ">"), ("exclusiveMaximum", "<")) if key in schema]  # fmt: skip
    return " ".join([text, " and ".join(bounds)]) if bounds else text


def _served(name: str, function: Callable[..., Any], invoker: Invoker) -> Callable[..., Any]:
    """The tool as the server calls it. A quick step (milliseconds on a warm ledger) runs on
    the server's own thread when no other command holds the invoker: the SDK would hand a
    plain function to a worker thread and back, two thread switches that cost a warm call
    about as much as the step itself on a loaded machine. Anything that may run long (a tool
    of `_ON_A_THREAD`, a step given `run`), or finds the invoker busy, takes the worker
    thread as before."""
    if name in _ON_A_THREAD:
        return function

    @functools.wraps(function)
    async def served(**arguments: Any) -> Any:
        call = functools.partial(function, **arguments)
        if arguments.get("run") is None and invoker.lock.acquire(blocking=False):
            try:
                return call()
            finally:
                invoker.lock.release()
        return await anyio.to_thread.run_sync(call)

    return served


def build_server(root: Path) -> MCPServer[Any]:
    """A server for every op under `root` (the folder that holds custom/)."""
    invoker = Invoker(root)
    server = LedgerServer(root)
    for name, function in {**StepTools(invoker).tools(), **ReadTools(invoker).tools()}.items():
        # The docstring, on one line: the tool's description as a model reads it.
        description = " ".join((function.__doc__ or "").split())
        server.add_tool(_served(name, function, invoker), name=name, description=description)
    files = OpResources(invoker)
    for scheme, _file, name, mime in _OP_FILES:
        server.resource(f"{scheme}://{{op}}", name=name, mime_type=mime)(getattr(files, scheme))
    server.prompt(name="protocol", description="Walk the tuning protocol for one op.")(protocol)
    return server


def serve(root: Path) -> None:
    """Serve over stdio until the client closes the connection."""
    build_server(root).run("stdio")
