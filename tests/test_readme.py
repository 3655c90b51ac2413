"""The README's session runs as written: each `$` line exits with the code its comment says."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
_EXIT = re.compile(r"#\s*exit (\d+)")


def session_lines() -> list[tuple[str, int]]:
    """The `$ ` lines of the README's console block with their expected exit codes."""
    text = README.read_text(encoding="utf-8")
    block = text.split("```console\n", 1)[1].split("```", 1)[0]
    lines = []
    for raw in block.splitlines():
        if not raw.startswith("$ "):
            continue
        command = raw[2:]
        match = _EXIT.search(command)
        expected = int(match.group(1)) if match else 0
        lines.append((command, expected))
    return lines


def test_first_code_block_has_exactly_two_commands() -> None:
    """The README starts with the two set-up commands: main job, then tests."""
    text = README.read_text(encoding="utf-8")
    first = text.split("```", 2)[1]
    commands = [line for line in first.splitlines()[1:] if line.strip()]
    assert len(commands) == 2
    assert "tools.autopilot" in commands[0]
    assert "tools/test.sh" in commands[1]


@pytest.mark.slow
def test_readme_session_runs_as_documented(tmp_path: Path) -> None:
    """Every command of the README session exits as documented, and the audit is clean."""
    bin_dir = Path(sys.executable).parent
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "TUNE_LEDGER_ROOT": str(tmp_path),
    }
    lines = session_lines()
    assert len(lines) > 10
    for command, expected in lines:
        done = subprocess.run(
            command, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, check=False
        )
        assert done.returncode == expected, (command, done.stdout, done.stderr)
    assert lines[-1][0].startswith("tune-ledger audit")


def test_the_readme_is_for_users_and_short() -> None:
    """At most 300 lines (issue 26): what it is, the two commands, a session, commands, exit
    codes, the agent set-up; performance engineering lives in tools/bench/README.md."""
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300
    assert not any("pickle" in line or "HMAC" in line for line in lines)
