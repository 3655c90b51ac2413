"""What a whole `tune-ledger` process imports (issue 19: every command as a process beside
`python -c "import click"`): a command loads only the modules its own work needs, and one
that reads no MEMORY.md loads none of MEMORY.md's renderer."""

from __future__ import annotations

import json

from cli_harness import OP, Cli, frontend
from import_probe import imported

# MEMORY.md's renderer and what only it needs: the splice, the page layout, the sections.
RENDERER = (
    "ledger.projections.memory_file",
    "ledger.projections.splice",
    "ledger.projections.line_ends",
    "ledger.projections.memory_layout",
    "ledger.projections.memory_sections",
)


def test_priors_loads_no_memory_renderer(cli: Cli) -> None:
    """`priors` reads the state and proposes: it renders no MEMORY.md, so it
    imports neither the renderer nor the splice, which a write does import."""
    frontend(cli)
    cli.ok("note", OP, "--text", "a note")
    out, modules = imported(cli.root, "--json", "priors", OP)
    assert json.loads(out)["candidates"]  # it proposed: the state was read
    assert "ledger.domain.state" in modules
    assert not modules.intersection(RENDERER), sorted(modules.intersection(RENDERER))
    write_out, write_modules = imported(cli.root, "--json", "note", OP, "--text", "x")
    assert json.loads(write_out)["events"][0]["type"] == "note.added"
    assert set(RENDERER) <= write_modules  # the check can fail: a write renders


def test_a_read_renders_no_memory(cli: Cli) -> None:
    """`log` reads the state and looks for a rollback behind MEMORY.md's back (its header
    only), without MEMORY.md's section renderer."""
    frontend(cli)
    cli.ok("note", OP, "--text", "x")
    out, modules = imported(cli.root, "--json", "log", OP, "--limit", "500")
    assert "attempts" in json.loads(out)
    assert "ledger.domain.state" in modules
    assert "ledger.projections.memory_file" in modules  # the header's parser: can fail
    assert "ledger.projections.memory_sections" not in modules


def test_a_verify_given_by_hand_starts_no_verifier_machinery(cli: Cli) -> None:
    """`verify` with its values on the command line imports neither the verifier's harness nor
    the document readers, nor subprocess; `verify --from-json` does import the readers."""
    frontend(cli)
    attempt = cli.ok("try", OP, "--set", "unroll_list=[2]")["attempt"]
    out, modules = imported(
        cli.root, "--json", "verify", OP, attempt, "--output", "y=true", "--layout-exit", "0",
        "--time", "90us",
    )  # fmt: skip
    assert json.loads(out)["verdict"] == "adopt"
    assert not modules.intersection({"ledger.shell.harness", "ledger.shell.runner", "subprocess"})
    attempt = cli.ok("try", OP, "--set", "unroll_list=[4]")["attempt"]
    document = cli.root / "measured.json"
    outputs = [{"name": "y", "all_close": True, "max_diff": None}]
    document.write_text(json.dumps({"times_us": [95.0], "outputs": outputs, "layout_exit": 0}))
    out, modules = imported(cli.root, "--json", "verify", OP, attempt, "--from-json", str(document))
    assert "verdict" in json.loads(out), out
    assert "ledger.shell.runner" in modules  # the check can fail


def test_the_command_table_names_every_module_command() -> None:
    """ledger.cli finds a command's module without importing the others: its table must list
    exactly the commands each module defines."""
    import importlib

    from ledger.cli import COMMAND_MODULES

    for module, names in COMMAND_MODULES.items():
        defined = [c.name for c in importlib.import_module(module).COMMANDS]
        assert sorted(defined) == sorted(names), module


def test_a_read_builds_no_command_classes(cli: Cli) -> None:
    """`status` lists what is allowed by asking every decider's blockers, without the command
    classes (built only by a write), cattrs (a write's encoder) or markdown-it (a splice's
    parser): the deciders name the commands in annotations only."""
    frontend(cli)
    cli.ok("note", OP, "--text", "x")
    out, modules = imported(cli.root, "--json", "status", OP)
    assert json.loads(out)["allowed"]  # the deciders' blockers were asked: can fail
    assert "stages.allowed" in modules
    assert not modules.intersection({"stages.commands", "cattrs", "markdown_it"}), sorted(
        modules.intersection({"stages.commands", "cattrs", "markdown_it"})
    )
    _out, write_modules = imported(cli.root, "--json", "note", OP, "--text", "y")
    assert {"stages.commands", "cattrs"} <= write_modules  # a write does build them


def test_every_command_names_the_cli_command_that_gives_it() -> None:
    """A command's NAME (what `allowed` lists) is a command of the CLI, subcommand included."""
    from typing import get_args

    import click

    from ledger.cli import cli
    from stages.commands import Command

    for command in get_args(Command):
        found: click.Command | None = cli
        for word in command.NAME.split():
            assert isinstance(found, click.Group), command.NAME
            found = found.get_command(click.Context(found), word)
        assert found is not None and not isinstance(found, click.Group), command.NAME
