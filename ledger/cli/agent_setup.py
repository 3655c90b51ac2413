"""`tune-ledger agent-setup`: install the shipped optimizer agent and the MCP server's
registration for one client (opencode or Claude Code) into a kernel repository."""

from __future__ import annotations

from pathlib import Path

import click

from ledger.cli.base import Ctx, pass_ctx
from ledger.errors import BadInput
from ledger.log import safe_files
from ledger.shell.layout_check import adapter_folder

CLIENTS = ("opencode", "claude")


def shipped_folder(client: str) -> Path:
    """The folder of `client`'s shipped agent files."""
    # They ship in the adapter's package, `agents/CLIENT/` (tools/agents/ in this checkout,
    # `tune_ledger_tools/agents/` once installed), and are read as data: the core never
    # imports the adapter (an import contract).
    found = adapter_folder()
    folder = found[1] / "agents" / client if found else None
    if folder is None or not folder.is_dir():
        raise BadInput(
            f"the shipped agent files for {client} are not installed (agents/{client}/ of the "
            "adapter's package)",
            hint="reinstall tune-ledger (pip install tune-ledger), then run agent-setup again",
        )
    return folder


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
    folder = shipped_folder(client)
    shipped = sorted(p for p in folder.rglob("*") if p.is_file())
    files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in shipped}
    # What is there now: never read or written through a link (ledger/log/safe_files.py).
    present = {name: _existing(ctx.root, name) for name in files}
    differing = [name for name, data in files.items() if present[name] not in (None, data)]
    if differing and not force:
        raise BadInput(
            f"{', '.join(differing)} already exist under {ctx.root} and differ from the "
            "shipped files; nothing was written",
            hint=f"merge them by hand (the shipped ones are in {folder}), or pass --force to "
            "overwrite them",
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
