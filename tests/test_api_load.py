"""OpLedger.load: one replay per CLI command, never a stale state."""

from __future__ import annotations

import pytest
from cli_harness import OP, Cli, pending

from ledger.domain.replay import replay
from ledger.log.store import FileStore
from ledger.shell.api import OpLedger
from stages import commands as cmd


def _fresh_state(cli: Cli) -> object:
    return replay(FileStore(cli.ledger()).read().events)


def test_load_is_reused_while_the_ledger_is_unchanged(cli: Cli) -> None:
    """A second load of an unchanged ledger is the first one, not a second replay."""
    pending(cli)
    ledger = OpLedger(cli.root, OP)
    assert ledger.load() is ledger.load()


def test_another_writer_makes_load_replay_again(cli: Cli) -> None:
    """Once anything else appended, load reads the ledger again."""
    pending(cli)
    ledger = OpLedger(cli.root, OP)
    first = ledger.load()
    OpLedger(cli.root, OP).execute(cmd.AddNote(text="from another writer"))
    second = ledger.load()
    assert second is not first
    assert second.state == _fresh_state(cli)
    assert second.state.notes[-1] == "from another writer"


def test_execute_never_leaves_the_state_it_changed_to_be_loaded_as_old(cli: Cli) -> None:
    """execute folds its events into the loaded state; the next load is the new ledger's."""
    pending(cli)
    ledger = OpLedger(cli.root, OP)
    before = ledger.load()
    events_before = before.state.event_count
    outcome = ledger.execute(cmd.AddNote(text="n"))
    after = ledger.load()
    assert after.state == _fresh_state(cli) == outcome.state
    assert after.state.event_count == events_before + 1


def test_a_keyed_verify_replays_the_ledger_once(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """Looking up the key, resolving the attempt and deciding share one replay."""
    attempt = pending(cli)
    streams: list[int] = []
    original = FileStore.stream

    def counted(self: FileStore, sink: object) -> object:
        streams.append(1)
        return original(self, sink)  # type: ignore[arg-type]

    monkeypatch.setattr(FileStore, "stream", counted)
    result = cli(
        "verify",
        OP,
        attempt,
        "--output",
        "y=true",
        "--layout-exit",
        "0",
        "--time",
        "90us",
        key="k1",
    )
    assert result.code == 0, result.stdout
    assert len(streams) == 1
