"""`tune-ledger mcp`: serve every op under --root as an MCP server over stdio (DESIGN §8)."""

from __future__ import annotations

import importlib

import click

from ledger.cli.base import Ctx, pass_ctx
from ledger.errors import BadInput


@click.command()
@pass_ctx
def mcp(ctx: Ctx) -> None:
    """Serve every op under --root to an MCP client over stdio (needs the `mcp` extra)."""
    # The server is the layer above the CLI (it runs the CLI's commands), so the CLI names it
    # by string, as COMMAND_MODULES names every command's module, rather than importing it.
    try:
        server = importlib.import_module("ledger.mcp.server")
    except ImportError as e:
        raise BadInput(
            f"the MCP server needs the `mcp` package ({e})",
            hint="install the extra: pip install 'tune-ledger[mcp]'",
        ) from None
    server.serve(ctx.root.resolve())


COMMANDS = (mcp,)
