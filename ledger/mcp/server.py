"""The MCP server over stdio: every protocol step and read as a tool, each op's files as
resources, the protocol as a prompt (DESIGN §8), built on the official `mcp` SDK."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer

from ledger import __version__
from ledger.mcp.invoke import Invoker
from ledger.mcp.protocol_prompt import protocol
from ledger.mcp.reads import OpResources, ReadTools
from ledger.mcp.steps import StepTools

INSTRUCTIONS = (
    "tune-ledger: the event-sourced ledger of PyPTO kernel tuning campaigns under custom/<op>/. "
    "Every protocol step is a tool gated by rules R1-R11; a refusal is a tool error whose text "
    "is a JSON object with rule, error, blocking, next, allowed and code. Start with `resume` "
    "or `status`; the `protocol` prompt walks the steps."
)


def build_server(root: Path) -> MCPServer[Any]:
    """A server for every op under `root` (the folder that holds custom/)."""
    invoker = Invoker(root)
    server: MCPServer[Any] = MCPServer(
        name="tune-ledger", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )
    for name, function in {**StepTools(invoker).tools(), **ReadTools(invoker).tools()}.items():
        # The docstring, on one line: the tool's description as a model reads it.
        description = " ".join((function.__doc__ or "").split())
        server.add_tool(function, name=name, description=description)
    files = OpResources(invoker)
    server.resource("memory://{op}", name="MEMORY.md", mime_type="text/markdown")(files.memory)
    server.resource("spec://{op}", name="SPEC.md", mime_type="text/markdown")(files.spec)
    server.resource("status://{op}", name="status", mime_type="application/json")(files.status)
    server.prompt(name="protocol", description="Walk the tuning protocol for one op.")(protocol)
    return server


def serve(root: Path) -> None:
    """Serve over stdio until the client closes the connection."""
    build_server(root).run("stdio")
