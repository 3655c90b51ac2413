"""`tune-ledger agent-setup`: install the shipped optimizer agent and the MCP server's
registration for one client (opencode or Claude Code) into a kernel repository, with the
client's permission rules that keep the agent from the ledger's files and from a person's
decisions (DESIGN §3.3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ledger.cli.base import Ctx, pass_ctx
from ledger.errors import BadInput
from ledger.log import safe_files
from ledger.shell.layout_check import adapter_folder

CLIENTS = ("opencode", "claude")

# What the agent may not edit: the ledger and MEMORY.md are written by tune-ledger only.
PROTECTED_FILES = ("custom/*/events.jsonl", "custom/*/MEMORY.md")
# The shell commands that are a person's decision (DESIGN §3.3): any command given --person,
# and the two that only a person runs. The MCP server refuses them without these rules; the
# rules keep an agent with a shell from running the CLI in a person's name.
PERSON_COMMANDS = ("*--person*", "*accept-rollback*", "*resume-campaign*")
# Where each client reads its permission rules (a file merged, never overwritten).
SETTINGS = {"claude": ".claude/settings.json", "opencode": "opencode.json"}


def claude_deny_rules() -> list[str]:
    """Claude Code's `permissions.deny` rules (`Edit(/path)` from the project root covers every
    file-editing tool; `Bash(pattern)` with `*` wildcards)."""
    edits = [f"Edit(/{path.replace('*', '**', 1)})" for path in PROTECTED_FILES]
    return edits + [f"Bash({pattern})" for pattern in PERSON_COMMANDS]


def opencode_permission() -> dict[str, dict[str, str]]:
    """opencode's `permission` rules: per tool, pattern -> action (the last match wins)."""
    return {
        "edit": {path: "deny" for path in PROTECTED_FILES},
        "bash": {pattern: "deny" for pattern in PERSON_COMMANDS},
    }


def merged_settings(client: str, existing: bytes | None, shipped: bytes | None = None) -> bytes:
    """The client's settings file as there (`existing`, None: none) with the shipped file's
    top-level entries it lacks, the shipped MCP server's entry, and the permission rules
    merged in; every other key is kept. BadInput when a file is not a JSON object."""
    name = SETTINGS[client]
    config = _json_object(existing, name) if existing is not None else {}
    base = _json_object(shipped, f"the shipped {name}") if shipped is not None else {}
    for key, value in base.items():
        if isinstance(value, dict) and isinstance(config.get(key), dict):
            # e.g. "mcp": the tune-ledger server's entry, unless one is there (kept as is)
            for name, entry in value.items():
                config[key].setdefault(name, entry)
        else:
            config.setdefault(key, value)
    if client == "claude":
        permissions = _object(config, "permissions", name)
        deny = permissions.get("deny", [])
        if not isinstance(deny, list):
            raise BadInput(f"{name}: permissions.deny is not a list; nothing was written")
        permissions["deny"] = deny + [r for r in claude_deny_rules() if r not in deny]
    else:
        permission = config.get("permission")
        if not isinstance(permission, dict):
            # A single action for every tool ("allow") stays the rule for everything else.
            permission = {} if permission is None else {"*": permission}
            config["permission"] = permission
        for tool, rules in opencode_permission().items():
            current = permission.get(tool)
            table = dict(current) if isinstance(current, dict) else {}
            if current is not None and not isinstance(current, dict):
                table["*"] = current
            for pattern, action in rules.items():
                table.pop(pattern, None)  # re-added last: opencode applies the last match
                table[pattern] = action
            permission[tool] = table
    return (json.dumps(config, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _json_object(data: bytes, name: str) -> dict[str, Any]:
    try:
        loaded = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise BadInput(
            f"{name} is not valid JSON ({e}); nothing was written",
            hint=f"fix {name} by hand, then run agent-setup again",
        ) from e
    if not isinstance(loaded, dict):
        raise BadInput(f"{name} is not a JSON object; nothing was written")
    return loaded


def _object(config: dict[str, Any], key: str, name: str) -> dict[str, Any]:
    value = config.setdefault(key, {})
    if not isinstance(value, dict):
        raise BadInput(f"{name}: {key} is not a JSON object; nothing was written")
    return value


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
    settings = SETTINGS[client]
    # What is there now (None: absent), never read or written through a link: BadInput when a
    # file or a folder on its way is one, or a file is not a regular file (safe_files).
    present = {
        name: safe_files.read_optional(
            ctx.root / name, limit=safe_files.TEXT_BYTES, root=ctx.root, follow=False
        )
        for name in {*files, settings}
    }
    # The client's settings are merged, never replaced: the permission rules (and, for
    # opencode, the shipped opencode.json's MCP entry) go into the file there, other keys kept.
    files[settings] = merged_settings(client, present[settings], files.get(settings))
    differing = [
        name
        for name, data in files.items()
        if name != settings and present[name] not in (None, data)
    ]
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


COMMANDS = (agent_setup,)
