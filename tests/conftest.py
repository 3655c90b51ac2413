"""Fixtures shared by the tests: a CLI runner, and OpLedgers over every store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from api_harness import OP, Open
from cli_harness import Cli

from ledger.log.memory_store import MemoryStore
from ledger.shell.api import OpLedger


@pytest.fixture(autouse=True, scope="session")
def session_measurement_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A measurement cache for the whole run, so that module- and session-scoped fixtures
    (which start before any test's own) never use the user's real cache folder either; and a
    cache home of the run's own, where the state snapshot's key is made (not ~/.cache)."""
    folder = tmp_path_factory.mktemp("session-measure-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TUNE_LEDGER_MEASURE_CACHE", str(folder))
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("session-cache-home")))
        yield folder


@pytest.fixture(autouse=True)
def measurement_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Every test gets its own empty measurement cache, outside its root (so a snapshot of the
    root is unchanged by it); no test reads or writes the user's real cache folder."""
    folder = tmp_path_factory.mktemp("measure-cache")
    monkeypatch.setenv("TUNE_LEDGER_MEASURE_CACHE", str(folder))
    return folder


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    """A `tune-ledger` runner whose --root is a fresh temporary folder."""
    return Cli(tmp_path)


@pytest.fixture(params=["file", "memory"])
def open_ledger(request: pytest.FixtureRequest, tmp_path: Path) -> Open:
    """Opens OpLedgers of one op over one store: the ledger file, or one shared MemoryStore."""
    if request.param == "file":
        return lambda: OpLedger(tmp_path, OP)
    store = MemoryStore()
    return lambda: OpLedger(tmp_path, OP, store=store)
