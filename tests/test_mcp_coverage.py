"""Every CLI command that is a protocol step or a read has a tool, and every option of it is
an argument of that tool; what is left out is left out on purpose and said so in the server's
docstring (ledger/mcp/server.py)."""

from __future__ import annotations

import inspect
from pathlib import Path

import click
import pytest

pytest.importorskip("mcp")
from ledger.cli import cli
from ledger.mcp import server
from ledger.mcp.invoke import Invoker
from ledger.mcp.reads import ReadTools
from ledger.mcp.steps import StepTools

# Not the optimizer agent's to call (the reasons are in ledger/mcp/server.py's docstring).
NOT_FOR_AGENTS = {
    "accept-rollback", "normalize", "git-setup", "merge-driver", "memory-merge-driver",
    "agent-setup", "mcp", "dashboard",
}  # fmt: skip
# Options a tool names differently, or leaves out (with the reason in server.py).
RENAMED = {
    "set": "change",
    "run": "run",
    "all": None,
    # `--person` signs a person's decision, which no tool can take (DESIGN §3.3): an agent
    # never lowers a guard, loosens or lifts a budget; the refusal names the person's command.
    "person": None,
    # `policy`'s budget options: the tool sets a budget as any policy, through key and value.
    "max-evaluations": None,
    "max-device-seconds": None,
    "max-wall-seconds": None,
}


def _tools() -> dict[str, object]:
    invoker = Invoker(Path("."))
    return {**StepTools(invoker).tools(), **ReadTools(invoker).tools()}


def _commands() -> dict[str, click.Command]:
    """Every command of `tune-ledger` by its tool name (`evidence compare` -> evidence_compare)."""
    context = click.Context(cli)
    found: dict[str, click.Command] = {}
    for name in cli.list_commands(context):
        command = cli.get_command(context, name)
        assert command is not None
        if isinstance(command, click.Group):
            for sub in command.list_commands(context):
                inner = command.get_command(context, sub)
                assert inner is not None
                found[f"{name}_{sub}".replace("-", "_")] = inner
        else:
            found[name.replace("-", "_")] = command
    return found


def test_every_step_and_read_of_the_cli_is_a_tool() -> None:
    tools = set(_tools())
    commands = _commands()
    left_out = {name.replace("-", "_") for name in NOT_FOR_AGENTS}
    assert set(commands) - left_out == tools
    for name in NOT_FOR_AGENTS:
        assert f"`{name}`" in (server.__doc__ or ""), name


def test_every_option_of_a_command_is_an_argument_of_its_tool() -> None:
    commands = _commands()
    for name, function in _tools().items():
        arguments = set(inspect.signature(function).parameters) - {"idempotency_key"}
        for param in commands[name].params:
            if not isinstance(param, click.Option) or param.name == "help":
                continue
            flag = max(param.opts, key=len).lstrip("-")
            wanted = RENAMED.get(flag, flag)
            if wanted is None:
                continue
            assert wanted.replace("-", "_") in arguments, (name, flag)
