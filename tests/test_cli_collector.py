"""The console script keeps each op's OpLedger for its one command (the steps of a command
share one replay) and exits with the command's code (ledger/cli/__init__.py, `run`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_harness import OP, Cli, frontend

import ledger.cli as cli
from ledger.cli.base import open_ledgers


def test_the_console_script_keeps_each_ledger_and_exits_with_the_commands_code(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    opened = []

    def command() -> None:
        ledgers = open_ledgers.get()
        assert ledgers is not None
        opened.extend([ledgers(tmp_path, OP), ledgers(tmp_path, OP)])
        raise SystemExit(3)

    monkeypatch.setattr(cli, "main", command)
    with pytest.raises(SystemExit) as exited:
        cli.run()
    assert exited.value.code == 3
    assert opened[0] is opened[1]  # one OpLedger per op, for the whole command
    assert open_ledgers.get() is None  # nothing kept beyond `run` in this (test) process


@pytest.mark.slow
def test_a_process_ends_with_its_output_flushed_and_its_exit_code(cli: Cli) -> None:
    frontend(cli)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}

    def process(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "ledger", "--root", str(cli.root), "--json", *args]
        return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)

    done = process("log", OP)
    assert done.returncode == 0 and done.stdout.startswith('{"attempts":')
    refused = process("stage", "enter", OP, "incore")
    assert refused.returncode == 3 and '"rule":"R4"' in refused.stdout
