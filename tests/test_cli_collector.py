"""The console script runs one command with the cyclic collector off, keeps each op's
OpLedger to the end and exits without tearing its state down; tests calling `main` and the
long-lived `mcp` server keep the collector on (ledger/cli/__init__.py, `run`)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_harness import OP, Cli, frontend

import ledger.cli as cli
from ledger.cli.base import open_ledgers


def _exits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The codes `run` would have ended the process with (the test process goes on)."""
    codes: list[int] = []
    monkeypatch.setattr(os, "_exit", codes.append)
    monkeypatch.setattr(sys, "gettrace", lambda: None)  # as in a process without coverage
    return codes


def test_the_console_script_runs_its_command_without_the_cyclic_collector(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[bool] = []
    codes = _exits(monkeypatch)
    monkeypatch.setattr(cli, "main", lambda: seen.append(gc.isenabled()))
    try:
        cli.run()
        assert seen == [False]
        assert codes == [0]
    finally:
        gc.enable()


def test_the_console_script_keeps_each_ledger_and_exits_with_the_commands_code(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    codes = _exits(monkeypatch)
    opened = []

    def command() -> None:
        ledgers = open_ledgers.get()
        assert ledgers is not None
        opened.extend([ledgers(tmp_path, OP), ledgers(tmp_path, OP)])
        raise SystemExit(3)

    monkeypatch.setattr(cli, "main", command)
    try:
        cli.run()
    finally:
        gc.enable()
    assert codes == [3]
    assert opened[0] is opened[1]  # one OpLedger per op, kept until the exit
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
