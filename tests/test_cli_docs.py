"""Every command is documented (help text, README) and the CLI runs as a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from cli_harness import run_main

from ledger.cli import cli

REPO = Path(__file__).resolve().parents[1]


def _commands(
    group: click.Group, prefix: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    # Through list_commands/get_command, as click does: `cli` imports its commands lazily.
    context = click.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        assert command is not None, name
        path = (*prefix, name)
        yield path, command
        if isinstance(command, click.Group):
            yield from _commands(command, path)


COMMANDS = list(_commands(cli))
PATHS = [path for path, _command in COMMANDS]


def test_the_command_list_is_not_empty() -> None:
    """The tests below see the registered commands, groups and subcommands."""
    names = {" ".join(path) for path in PATHS}
    assert {"init", "verify", "skill", "skill load", "stage exit", "audit"} <= names


@pytest.mark.parametrize("path", [(), *PATHS], ids=["tune-ledger", *(" ".join(p) for p in PATHS)])
def test_every_command_has_help(path: tuple[str, ...]) -> None:
    """`COMMAND --help` exits 0 and prints a usage line and a non-empty description."""
    result = run_main([*path, "--help"])
    assert result.code == 0
    assert result.stdout.startswith("Usage: tune-ledger")
    description = result.stdout.split("\n\n")[1].strip()
    assert description and not description.startswith("Options:")


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[" ".join(p) for p in PATHS])
def test_every_option_has_help(path: tuple[str, ...], command: click.Command) -> None:
    """Each option says what it is for (arguments are named in the usage line)."""
    undocumented = [
        p.name for p in command.params if isinstance(p, click.Option) and not (p.help or "").strip()
    ]
    assert undocumented == [], f"{' '.join(path)}: options without help: {undocumented}"


def test_the_exit_codes_are_in_the_top_level_help() -> None:
    """The agent can read the exit codes of DESIGN §5 from `tune-ledger --help`."""
    text = " ".join(run_main(["--help"]).stdout.split())
    for code in range(1, 8):
        assert f" {code} " in text
    assert "hand back to the orchestrator" in text


def test_every_command_is_in_the_readme() -> None:
    """README.md names every command and subcommand (e.g. `tune-ledger skill load`)."""
    readme = REPO / "README.md"
    assert readme.is_file(), "README.md is missing: it documents every command"
    text = " ".join(readme.read_text("utf-8").split())
    missing = [" ".join(path) for path in PATHS if " ".join(path) not in text]
    assert missing == [], f"commands missing from README.md: {missing}"


# --- real processes -----------------------------------------------------------------------------


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("TUNE_LEDGER_ROOT", None)
    return subprocess.run(
        [sys.executable, "-m", "ledger", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.slow
def test_python_m_ledger_help_works(tmp_path: Path) -> None:
    """`python -m ledger --help` is the console script's help."""
    result = _run("--help", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.startswith("Usage: tune-ledger")
    assert "verify" in result.stdout and result.stderr == ""


@pytest.mark.slow
def test_a_real_process_keeps_the_contract(tmp_path: Path) -> None:
    """In a real process: exit codes, one JSON object on stdout, refusals on stderr."""
    (tmp_path / "custom" / "op1").mkdir(parents=True)
    (tmp_path / "custom" / "op1" / "op1_impl.py").write_text("x = 1\n")
    assert _run("init", "op1", cwd=tmp_path).returncode == 0
    status = _run("--json", "status", "op1", cwd=tmp_path)
    assert status.returncode == 0 and json.loads(status.stdout)["op"] == "op1"
    refused = _run("skill", "load", "op1", "perf-analyzer", cwd=tmp_path)
    assert refused.returncode == 3 and refused.stdout == ""
    assert refused.stderr.startswith("R1: ")
    bad = _run("--json", "evidence", "layout", "op1", "--exit-code", "zero", cwd=tmp_path)
    assert bad.returncode == 2 and json.loads(bad.stdout)["code"] == 2
    layout = _run(
        "--json",
        "evidence",
        "layout",
        "op1",
        "--run",
        f"{sys.executable} -c 'raise SystemExit(4)'",
        cwd=tmp_path,
    )
    assert json.loads(layout.stdout)["exit_code"] == 4
    events = (tmp_path / "custom" / "op1" / "events.jsonl").read_text().splitlines()
    command = json.loads(events[-1])["provenance"]["command"]
    assert command.startswith("tune-ledger --json evidence layout op1 --run ")
    assert "'raise SystemExit(4)'" in command  # recorded shell-quoted, as typed
