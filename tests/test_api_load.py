"""OpLedger over every store (the ledger file and a MemoryStore): one replay per CLI command,
never a stale state, and the same results whichever store holds the ledger."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from api_harness import OP, Open, fresh_state, pending_attempt
from cli_harness import OP as OP_CLI
from cli_harness import Cli, pending
from driver import candidate, vec, verify

from ledger.domain import hints
from ledger.errors import BadInput, RuleRefusal
from ledger.log.file_store import FileStore
from ledger.log.memory_store import MemoryStore
from ledger.log.store_interface import Store
from ledger.shell.api import OpLedger
from stages import commands as cmd


def test_the_default_store_is_the_ledger_file(tmp_path: Path) -> None:
    """Without a store, OpLedger keeps the op's events in custom/OP/events.jsonl."""
    ledger = OpLedger(tmp_path, OP)
    assert isinstance(ledger.store, FileStore)
    assert ledger.store.path == ledger.path == tmp_path / "custom" / OP / "events.jsonl"
    assert ledger.file_store is ledger.store


def test_a_store_in_memory_is_used_and_has_no_file(tmp_path: Path) -> None:
    """A given store holds the events; no ledger file is written, and file checks refuse."""
    store = MemoryStore()
    ledger = OpLedger(tmp_path, OP, store=store)
    ledger.execute(cmd.Init(op=OP))
    assert [e.type for e in store.read().events] == ["op.initialized", "policy.set"]
    assert not ledger.path.exists()
    with pytest.raises(BadInput, match="needs the ledger file"):
        _ = ledger.file_store


def test_an_op_without_events_does_not_exist(open_ledger: Open) -> None:
    """Before init the op has no ledger: load names the fix."""
    ledger = open_ledger()
    assert not ledger.exists()
    with pytest.raises(BadInput, match="unknown op 'softmax'") as unknown:
        ledger.load()
    assert unknown.value.hint is not None
    # The hint is a step, rendered for its caller at the output's edge (issue 28).
    assert "tune-ledger init softmax" in hints.render_text(unknown.value.hint, "cli")
    assert 'init(op="softmax")' in hints.render_text(unknown.value.hint, "mcp")
    ledger.execute(cmd.Init(op=OP))
    assert ledger.exists()


def test_load_is_reused_while_the_ledger_is_unchanged(open_ledger: Open) -> None:
    """A second load of an unchanged ledger is the first one, not a second replay."""
    pending_attempt(open_ledger())
    ledger = open_ledger()
    assert ledger.load() is ledger.load()


def test_another_writer_makes_load_replay_again(open_ledger: Open) -> None:
    """Once anything else appended, load reads the ledger again."""
    pending_attempt(open_ledger())
    ledger = open_ledger()
    first = ledger.load()
    open_ledger().execute(cmd.AddNote(text="from another writer"))
    second = ledger.load()
    assert second is not first
    assert second.state == fresh_state(ledger.store)
    assert second.state.notes[-1] == "from another writer"


def test_execute_never_leaves_the_state_it_changed_to_be_loaded_as_old(open_ledger: Open) -> None:
    """execute folds its events into the loaded state; the next load is the new ledger's."""
    pending_attempt(open_ledger())
    ledger = open_ledger()
    before = ledger.load()
    events_before = before.state.event_count
    outcome = ledger.execute(cmd.AddNote(text="n"))
    after = ledger.load()
    assert after.state == fresh_state(ledger.store) == outcome.state
    assert after.state.event_count == events_before + 1


def test_execute_moves_the_loaded_state_forward_without_a_replay(
    open_ledger: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After its own append the OpLedger keeps the state it folded with the new tip: the next
    command decides on it without reading the ledger again."""
    attempt = pending_attempt(open_ledger())
    ledger = open_ledger()
    ledger.load()
    streams: list[str] = []
    original = Store.stream

    def counted(self: Store, sink: Callable[..., object]) -> object:
        streams.append(self.name)
        return original(self, sink)

    monkeypatch.setattr(Store, "stream", counted)
    ledger.execute(verify(attempt, 90.0))
    ledger.execute(cmd.AddNote(text="after the verdict"))
    state = ledger.load().state
    assert streams == []
    assert state == fresh_state(ledger.store)
    assert state.attempts[attempt].verdict == "adopt"
    assert state.notes == ["after the verdict"]


def test_a_refused_command_leaves_the_ledger_and_the_loaded_state_alone(
    open_ledger: Open,
) -> None:
    """A refusal appends nothing, and the state loaded before it is still the ledger's."""
    pending_attempt(open_ledger())
    ledger = open_ledger()
    loaded = ledger.load()
    data_before = ledger.store.read().events
    with pytest.raises(RuleRefusal, match="an attempt is pending") as refused:
        ledger.execute(candidate(vec_tile_shape=vec(16)))
    assert refused.value.rule == "R6"
    assert ledger.store.read().events == data_before
    assert ledger.load() is loaded
    assert loaded.state == fresh_state(ledger.store)


def test_a_concurrent_append_is_retried_on_the_new_ledger(
    open_ledger: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When another writer appends between load and append, execute decides again on the
    ledger that writer left (optimistic concurrency) and both commands are kept."""
    attempt = pending_attempt(open_ledger())
    ledger, other = open_ledger(), open_ledger()
    ledger.load()
    original = Store.append
    conflicts: list[str] = []

    def other_writer_first(self: Store, *args: object, **kwargs: object) -> object:
        if not conflicts:
            conflicts.append("other")
            other.execute(cmd.AddNote(text="the other writer"))
        return original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Store, "append", other_writer_first)
    outcome = ledger.execute(verify(attempt, 90.0))
    assert conflicts == ["other"]
    assert outcome.state == fresh_state(ledger.store)
    assert outcome.state.notes == ["the other writer"]
    assert outcome.state.attempts[attempt].verdict == "adopt"


def test_a_retried_key_returns_the_first_result(open_ledger: Open) -> None:
    """A command retried with its idempotency key appends nothing and returns the original
    events; the same key for another command is refused."""
    attempt = pending_attempt(open_ledger())
    first = open_ledger().execute(verify(attempt, 90.0), key="k1")
    ledger = open_ledger()
    again = ledger.execute(verify(attempt, 90.0), key="k1")
    assert again.replayed
    assert again.events == first.events
    assert ledger.store.read().events[-1] == first.events[-1]
    with pytest.raises(BadInput, match="different command"):
        ledger.execute(cmd.AddNote(text="other"), key="k1")


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
        OP_CLI,
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
