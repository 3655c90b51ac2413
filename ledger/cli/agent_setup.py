"""`tune-ledger agent-setup`: install the shipped optimizer agent and the MCP server's
registration for one client (opencode or Claude Code) into a kernel repository."""

from __future__ import annotations

from pathlib import Path

import click

from ledger.cli.base import Ctx, pass_ctx
from ledger.errors import BadInput
from ledger.log import safe_files

# The agents ship as files beside the adapter (tools/agents/<client>/), read as data: the core
# never imports tools/ (an import contract).
AGENTS = Path(__file__).resolve().parents[2] / "tools" / "agents"
CLIENTS = ("opencode", "claude")


def _shipped(client: str) -> list[Path]:
    folder = AGENTS / client
    if not folder.is_dir():
        raise BadInput(
            f"the shipped agent files are not found at {folder}",
            hint="run agent-setup from a tune-ledger source checkout (pip install -e .)",
        )
    return sorted(p for p in folder.rglob("*") if p.is_file())


def _existing(root: Path, name: str) -> bytes | None:
    """The bytes of ROOT/NAME (None when absent); BadInput when it or a folder on its way is
    a link, or it is not a regular file."""
    return safe_files.read_optional(
        root / name, limit=safe_files.TEXT_BYTES, root=root, follow=False
    )


@click.command("agent-setup")
@click.option(
    "--client",
    type=click.Choice(CLIENTS),
    default="opencode",
    show_default=True,
    help="The agent client to set up.",
)
@click.option("--force", is_flag=True, help="Overwrite files that differ from the shipped ones.")
@pass_ctx
def agent_setup(ctx: Ctx, client: str, force: bool) -> None:
    """Install the optimizer agent and the MCP server's config for CLIENT under --root."""
    files = {p.relative_to(AGENTS / client).as_posix(): p.read_bytes() for p in _shipped(client)}
    # What is there now: never read or written through a link (ledger/log/safe_files.py).
    present = {name: _existing(ctx.root, name) for name in files}
    differing = [name for name, data in files.items() if present[name] not in (None, data)]
    if differing and not force:
        raise BadInput(
            f"{', '.join(differing)} already exist under {ctx.root} and differ from the "
            "shipped files; nothing was written",
            hint="merge them by hand (see tools/agents/), or pass --force to overwrite them",
            details={"differing": differing},
        )
    written = []
    for name, data in files.items():
        if present[name] == data:
            continue
        safe_files.replace_file(ctx.root / name, data, root=ctx.root)
        written.append(name)
    unchanged = sorted(set(files) - set(written))
    ctx.emit(
        {"client": client, "written": written, "unchanged": unchanged},
        "\n".join([f"wrote {n}" for n in written] + [f"unchanged {n}" for n in unchanged]),
    )


# The commands this module adds to `tune-ledger` (ledger.cli names them, to load them lazily).
COMMANDS = (agent_setup,)
