"""The console script runs one command with the cyclic collector off; tests calling `main` and
the long-lived `mcp` server keep it on (ledger/cli/__init__.py, `run`)."""

from __future__ import annotations

import gc

import pytest

import ledger.cli as cli


def test_the_console_script_runs_its_command_without_the_cyclic_collector(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[bool] = []
    monkeypatch.setattr(cli, "main", lambda: seen.append(gc.isenabled()))
    try:
        cli.run()
        assert seen == [False]
    finally:
        gc.enable()


def test_main_leaves_the_collector_as_it_found_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert gc.isenabled()
    cli.main(["--version"])
    assert "version" in capsys.readouterr().out
    assert gc.isenabled()
