"""The disposable state snapshot (ledger/shell/state_snapshot.py): a command that starts from
it prints and writes byte for byte what a full replay does, whatever happened to the ledger
(appends by other writers, a torn tail, a tampered prefix, a merge, a normalize, a rollback)
or to the snapshot itself (stale, corrupt, of another op or code); `audit` and `check` never
read it."""

from __future__ import annotations

import hashlib
import hmac
import os
import pickle
import shutil
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import ClassVar

import pytest
from cli_harness import OP, Cli, Result, frontend, run_main
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.domain.lazy_attempts import LazyAttempts
from ledger.domain.lazy_measured import LazyMeasured
from ledger.errors import LedgerError
from ledger.git import merge
from ledger.log.store import FileStore
from ledger.projections import cache_file, splice, view_cache
from ledger.projections import walk as walk_mod
from ledger.shell import provenance, state_snapshot
from ledger.shell.api import OpLedger
from stages import commands as cmd

NO_CACHE = {view_cache.NO_CACHE_ENV: "1"}
CLOCK = "2026-01-01T00:00:00.000000Z"


def _cache(root: Path) -> Path:
    return root / "custom" / OP / view_cache.CACHE_DIR


def _ledger(root: Path) -> Path:
    return root / "custom" / OP / "events.jsonl"


@pytest.fixture(autouse=True)
def _frozen_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Provenance without wall time, so two roots given the same commands hold the same bytes."""
    monkeypatch.setattr(provenance, "utc_now", lambda: CLOCK)
    monkeypatch.delenv(view_cache.NO_CACHE_ENV, raising=False)
    # Small ledgers: a new snapshot every few commands, seals between them, and prefixes
    # longer than the 4 KiB an append compares (so only the snapshot's own checks see a
    # change further back).
    monkeypatch.setattr(state_snapshot, "TAIL_LIMIT", 2048)
    # Small parts: a snapshot's attempts span several pickles after its header.
    monkeypatch.setattr(state_snapshot, "ATTEMPTS_PER_PART", 2)


@contextmanager
def _inside(folder: Path) -> Iterator[None]:
    """Run with `--root .` from `folder`: the command lines (and so the bytes) of two roots
    are then the same."""
    before = Path.cwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def _run(root: Path, args: tuple[str, ...], *, cached: bool) -> Result:
    splice._known_markers.clear()  # as a new process: only the record on disk is known
    with _inside(root):
        return run_main(["--root", ".", "--json", *args], env=None if cached else NO_CACHE)


def _files(root: Path) -> dict[str, bytes]:
    """The ledger and MEMORY.md (what a command may write that is not a cache)."""
    folder = root / "custom" / OP
    return {
        p.name: p.read_bytes()
        for p in sorted(folder.iterdir())
        if p.is_file() and not p.name.endswith(".lock")
    }


class Twins:
    """Two roots given the same commands: one with the snapshot (and the view cache), one
    without any cache. Every command's exit code, stdout and stderr, and every file, must be
    the same on both."""

    def __init__(self, base: Path) -> None:
        self.cached, self.plain = base / "cached", base / "plain"
        for root in (self.cached, self.plain):
            root.mkdir()
            frontend(Cli(root))
        # The setup ran with absolute --root paths: start both from the same bytes.
        shutil.copyfile(_ledger(self.cached), _ledger(self.plain))
        shutil.copyfile(
            _ledger(self.cached).with_name("MEMORY.md"), _ledger(self.plain).with_name("MEMORY.md")
        )

    def run(self, *args: str) -> Result:
        with_snapshot = _run(self.cached, args, cached=True)
        without = _run(self.plain, args, cached=False)
        assert with_snapshot == without, args
        assert _files(self.cached) == _files(self.plain), args
        return with_snapshot

    def each(self) -> tuple[Path, Path]:
        return self.cached, self.plain


# --- the property --------------------------------------------------------------------------


def _config(n: int) -> str:
    return f'{{"vec_tile_shape":[1,8,1,{16 + n}]}}'


def _spelled_config(n: int) -> str:
    """A config with integral floats and a negative zero: a snapshot holds it as text that
    differs from its R9 key (which has ints), and must print it as it was recorded."""
    return f'{{"vec_tile_shape":[1,8,1,{16 + n}],"alpha":{n}.0,"beta":-0.0,"gamma":[2.5,true]}}'


_STEPS = st.lists(
    st.one_of(
        st.sampled_from(
            [
                ("note", OP, "--text", "n"),
                ("skill", "load", OP, "perf-analyzer"),
                ("point", "close", OP, "F-1", "--reason", "r"),
                ("point", "open", OP, "F-2"),
                (
                    "verify",
                    OP,
                    "pending",
                    "--output",
                    "y=true",
                    "--layout-exit",
                    "0",
                    "--time",
                    "60us",
                ),
                (
                    "verify",
                    OP,
                    "pending",
                    "--output",
                    "y=true",
                    "--layout-exit",
                    "0",
                    "--time",
                    "40us",
                    "--time",
                    "41us",
                ),
                ("fail", OP, "pending", "--category", "runtime", "--detail", "d"),
                ("abandon", OP, "pending", "--reason", "r"),
                ("stop", OP, "--reason", "enough"),
                ("status", OP),
                ("resume", OP),
                ("log", OP),
                ("log", OP, "--limit", "1"),
                ("log", OP, "--notes"),
                ("check", OP),
                ("normalize", OP),
                ("!tear",),
                ("!tamper",),
                ("!merge",),
                ("!union",),
                ("!rollback",),
                ("!foreign",),
            ]
        ),
        st.integers(0, 30).map(lambda n: ("candidate", OP, "--config", _config(n), "--prior", "p")),
        st.integers(0, 5).map(
            lambda n: ("candidate", OP, "--config", _spelled_config(n), "--prior", "p")
        ),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=_STEPS)
def test_any_sequence_of_commands_is_the_same_with_the_snapshot(
    steps: list[tuple[str, ...]],
) -> None:
    """Whatever was appended, refused, torn, tampered with, merged, normalized or rolled back,
    every command prints and writes with the snapshot exactly what it does without it."""
    hits = []
    restore = state_snapshot.restore

    def counted(*args: object) -> object:
        found = restore(*args)  # type: ignore[arg-type]
        hits.append(found is not None)
        return found

    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as patched:
        patched.setattr(state_snapshot, "restore", counted)
        twins = Twins(Path(tmp))
        for step in steps:
            if step[0].startswith("!"):
                _disrupt(twins, step[0][1:], Path(tmp))
            else:
                twins.run(*step)
            twins.run("log", OP, "--limit", "2")  # a read after every step
        twins.run("status", OP)
        twins.run("log", OP)
        audit = twins.run("audit", OP)
        if audit.code == 0:  # the state restored (compacted) is the state replayed
            cached = OpLedger(twins.cached, OP)
            assert cached.load().state == OpLedger(twins.plain, OP).load(snapshot=False).state
    if audit.code == 0:  # a clean ledger: the last log at least started from the snapshot
        assert any(hits)


def _disrupt(twins: Twins, what: str, scratch: Path) -> None:
    """Change both ledgers alike, as a person, git or another tool would."""
    data = _ledger(twins.cached).read_bytes()
    assert data == _ledger(twins.plain).read_bytes()
    if what == "tear":
        for root in twins.each():
            with _ledger(root).open("ab") as file:
                file.write(b'{"id":')
    elif what == "tamper":
        # One byte of the first event, in place: the size, the inode and the end stay.
        at = data.index(b'"type":"') + len(b'"type":"')
        changed = data[:at] + (b"X" if data[at : at + 1] != b"X" else b"Y") + data[at + 1 :]
        for root in twins.each():
            _ledger(root).write_bytes(changed)
        twins.run("status", OP)
        twins.run("note", OP, "--text", "after tampering")
        for root in twins.each():
            _ledger(root).write_bytes(data)  # put back, in place again
    elif what in ("merge", "union"):
        theirs = _branch(data, scratch)
        twins.run("note", OP, "--text", "ours")
        ours = _ledger(twins.cached).read_bytes()
        if what == "merge":  # the merge driver's result
            merged = merge.merge(data, ours, theirs).data
        else:  # git's merge=union: common part, our new lines, then theirs (normalize fixes it)
            merged = ours + theirs[len(data) :]
        for root in twins.each():
            incoming = _ledger(root).with_name("incoming")
            incoming.write_bytes(merged)
            os.replace(incoming, _ledger(root))  # a checkout replaces the file
    elif what == "rollback":
        # An older copy restored in place behind MEMORY.md's back (cp keeps the inode).
        lines = data.splitlines(keepends=True)
        for root in twins.each():
            _ledger(root).write_bytes(b"".join(lines[: max(1, len(lines) - 3)]))
    elif what == "foreign":
        # Another op's snapshot copied in: its key names another op, so it is ignored.
        other = scratch / "other"
        if not other.exists():
            other.mkdir()
            frontend(Cli(other), "sm2")
            OpLedger(other, "sm2").load()
        foreign = other / "custom" / "sm2" / view_cache.CACHE_DIR / state_snapshot.SNAPSHOT_NAME
        _cache(twins.cached).mkdir(exist_ok=True)
        shutil.copyfile(foreign, _cache(twins.cached) / state_snapshot.SNAPSHOT_NAME)


def _branch(data: bytes, scratch: Path) -> bytes:
    """The ledger `data` with a note another clone appended."""
    branch = scratch / "branch"
    shutil.rmtree(branch, ignore_errors=True)
    (branch / "custom" / OP).mkdir(parents=True)
    _ledger(branch).write_bytes(data)
    try:
        OpLedger(branch, OP).execute(cmd.AddNote(text="theirs"))
    except Exception:  # noqa: BLE001 - a ledger that refuses appends (damage, rollback) as is
        return data
    return _ledger(branch).read_bytes()


# --- the snapshot is used, and only when it matches ------------------------------------------


def _unpickled(path: Path) -> dict[str, object]:
    """A snapshot file's content (its signature checked by the module, not here)."""
    found = pickle.loads(path.read_bytes()[state_snapshot.HEADER_AT :])
    assert isinstance(found, dict)
    return found


def _signed(content: object, parts: bytes = b"") -> bytes:
    """A snapshot file of `content`, signed with this user's key as the module signs, with
    `parts` (each signed on its own) after it."""
    data = pickle.dumps(content)
    length = len(data).to_bytes(state_snapshot.LENGTH_BYTES, "big")
    key = state_snapshot._key_bytes()
    assert key is not None
    return (
        state_snapshot.MAGIC
        + hmac.new(key, length + data, hashlib.sha256).digest()
        + length
        + data
        + parts
    )


def _parts(path: Path) -> bytes:
    """The bytes of a snapshot file after its header: its parts (attempts, R9 keys)."""
    data = path.read_bytes()
    length = int.from_bytes(data[len(state_snapshot.MAGIC) + state_snapshot.TAG_BYTES :][:8], "big")
    return data[state_snapshot.HEADER_AT + length :]


class _Planted:
    """What a planted pickle would run when unpickled."""

    ran: ClassVar[list[str]] = []

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return _mark_unpickled, ("unpickled",)


def _mark_unpickled(text: str) -> None:
    _Planted.ran.append(text)


def _no_full_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object) -> object:
        raise AssertionError("the whole ledger was replayed: the snapshot was not used")

    monkeypatch.setattr(FileStore, "stream", refuse)


def test_a_new_process_after_an_append_folds_only_the_tail(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    frontend(cli)
    OpLedger(cli.root, OP).execute(cmd.AddNote(text="a"))  # leaves a snapshot and a seal
    OpLedger(cli.root, OP).execute(cmd.AddNote(text="b"))  # starts from it, seals again
    truth = OpLedger(cli.root, OP).load(snapshot=False).state
    with monkeypatch.context() as patched:
        _no_full_replay(patched)
        restored = OpLedger(cli.root, OP).load().state
        assert restored == truth
        assert cli.ok("log", OP, "--notes")["notes"] == ["a", "b"]
        cli.ok("note", OP, "--text", "c")
    assert (_cache(cli.root) / state_snapshot.SEAL_NAME).is_file()


def test_a_long_tail_writes_a_new_snapshot(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    frontend(cli)
    monkeypatch.setattr(state_snapshot, "TAIL_LIMIT", 1 << 20)
    first = (_cache(cli.root) / state_snapshot.SNAPSHOT_NAME).read_bytes()
    OpLedger(cli.root, OP).execute(cmd.AddNote(text="short tail"))
    assert (_cache(cli.root) / state_snapshot.SNAPSHOT_NAME).read_bytes() == first
    monkeypatch.setattr(state_snapshot, "TAIL_LIMIT", 0)
    OpLedger(cli.root, OP).execute(cmd.AddNote(text="past the limit"))
    assert (_cache(cli.root) / state_snapshot.SNAPSHOT_NAME).read_bytes() != first


@pytest.mark.parametrize(
    "garbage", [b"", b"\x80", b"not a pickle", pickle.dumps({"key": 1}), pickle.dumps([1, 2])]
)
def test_a_corrupt_snapshot_is_ignored(cli: Cli, garbage: bytes) -> None:
    frontend(cli)
    cli.ok("note", OP, "--text", "x")
    (_cache(cli.root) / state_snapshot.SNAPSHOT_NAME).write_bytes(garbage)
    assert state_snapshot.restore(FileStore(cli.ledger()), OP, lambda *_: None) is None
    assert OpLedger(cli.root, OP).load().state == OpLedger(cli.root, OP).load(snapshot=False).state


def test_a_snapshot_not_signed_with_this_users_key_is_never_unpickled(cli: Cli) -> None:
    """Unpickling runs code: a file that came with a clone (or from anyone else) is refused
    before it is unpickled, whatever it holds."""
    frontend(cli)
    path = _cache(cli.root) / state_snapshot.SNAPSHOT_NAME
    genuine = _unpickled(path)
    planted = pickle.dumps({**genuine, "planted": _Planted()})
    other_key = hmac.new(b"x" * 32, planted, hashlib.sha256).digest()
    for forged in (planted, state_snapshot.MAGIC + other_key + planted):
        path.write_bytes(forged)
        assert state_snapshot.restore(FileStore(cli.ledger()), OP, lambda *_: None) is None
        assert cli.ok("log", OP, "--notes")["notes"] == []  # replayed (and a new snapshot)
    assert _Planted.ran == []
    path.write_bytes(_signed({**genuine, "planted": _Planted()}))  # the premise: it would run
    state_snapshot.restore(FileStore(cli.ledger()), OP, lambda *_: None)
    assert _Planted.ran == ["unpickled"]


def test_a_snapshot_of_other_code_or_another_op_is_ignored(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    frontend(cli)
    OpLedger(cli.root, OP).load()
    store = FileStore(cli.ledger())
    assert state_snapshot.restore(store, OP, lambda *_: None) is not None
    assert state_snapshot.restore(store, "other", lambda *_: None) is None
    monkeypatch.setattr(view_cache, "_fingerprint", "other code")
    assert state_snapshot.restore(store, OP, lambda *_: None) is None


def test_a_seal_of_another_snapshot_or_position_is_ignored(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    frontend(cli)
    monkeypatch.setattr(state_snapshot, "TAIL_LIMIT", 1 << 20)
    OpLedger(cli.root, OP).execute(cmd.AddNote(text="a"))
    seal = _cache(cli.root) / state_snapshot.SEAL_NAME
    store = FileStore(cli.ledger())
    assert state_snapshot.restore(store, OP, lambda *_: None) is not None
    data = cache_file.read_cache_file(seal)
    assert data is not None  # written whole, under its digest line
    cache_file.write_cache_file(
        seal.parent, seal.name, data.replace(b'"snapshot":"', b'"snapshot":"0')
    )
    assert state_snapshot.restore(store, OP, lambda *_: None) is None
    seal.write_bytes(data)  # the right seal, but not under its digest line
    assert state_snapshot.restore(store, OP, lambda *_: None) is None
    cache_file.write_cache_file(seal.parent, seal.name, data)
    assert state_snapshot.restore(store, OP, lambda *_: None) is not None  # the premise
    with cli.ledger().open("ab") as file:  # an append that wrote no seal (another tool)
        file.write(b"")
    os.utime(cli.ledger())
    assert state_snapshot.restore(store, OP, lambda *_: None) is None


def test_a_prefix_tampered_in_place_is_never_trusted(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same size, same inode, same end: the ctime moved, so a full replay names the damage."""
    frontend(cli)
    monkeypatch.setattr(state_snapshot, "TAIL_LIMIT", 0)
    cli.ok("note", OP, "--text", "x")  # a snapshot of the whole file, > 4 KiB
    assert (
        _unpickled(_cache(cli.root) / state_snapshot.SNAPSHOT_NAME)["base"]
        == cli.ledger().stat().st_size
        > 4096
    )
    data = cli.ledger().read_bytes()
    at = data.index(b'"type":"') + len(b'"type":"')
    cli.ledger().write_bytes(data[:at] + b"X" + data[at + 1 :])
    assert state_snapshot.restore(FileStore(cli.ledger()), OP, lambda *_: None) is None
    assert cli("note", OP, "--text", "y").code == 7


def test_a_snapshot_carries_what_rendering_keeps_and_the_next_command_extends_it(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read command that replayed the whole ledger builds the indexes rendering (and the
    idea check, R9) keep in `State.derived` before it writes the snapshot (it renders neither
    MEMORY.md nor the views itself), so no later command builds them over every attempt."""
    frontend(cli)
    cli.ok("candidate", OP, "--config", _config(1), "--prior", "p")
    cli.ok("fail", OP, "pending", "--category", "runtime", "--detail", "d")
    shutil.rmtree(_cache(cli.root))
    cli.ok("log", OP)  # a full replay by a read command writes the snapshot
    carried = _unpickled(_cache(cli.root) / state_snapshot.SNAPSHOT_NAME)["state"]
    kept = {"walk", "outcome-counts", "point-index", "candidates", "algorithm-ideas"}
    assert kept <= set(carried.derived)
    walked: list[int] = []
    kept_walk = walk_mod._Prefix.add

    def counted(self: walk_mod._Prefix, step: object) -> None:
        walked.append(1)
        kept_walk(self, step)  # type: ignore[arg-type]

    monkeypatch.setattr(walk_mod._Prefix, "add", counted)
    cli.ok("candidate", OP, "--config", _config(2), "--prior", "p")
    assert walked == [1]  # only the new attempt was walked


def test_the_no_cache_switch_neither_reads_nor_writes_it(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    frontend(cli)
    shutil.rmtree(_cache(cli.root))
    monkeypatch.setenv(view_cache.NO_CACHE_ENV, "1")
    OpLedger(cli.root, OP).execute(cmd.AddNote(text="x"))
    OpLedger(cli.root, OP).load()
    assert not _cache(cli.root).exists()


def test_audit_and_check_never_read_it(cli: Cli) -> None:
    """A poisoned snapshot (right key and position, a false state) fools `log` by design,
    never `audit` or `check`."""
    frontend(cli)
    OpLedger(cli.root, OP).load()
    path = _cache(cli.root) / state_snapshot.SNAPSHOT_NAME
    found = _unpickled(path)
    found["state"].notes.append("a lie")
    path.write_bytes(_signed(found, _parts(path)))
    assert cli.ok("log", OP, "--notes")["notes"] == ["a lie"]  # the premise: it is read
    with_it = [cli("audit", OP), cli("check", OP)]
    shutil.rmtree(_cache(cli.root))
    assert [cli("audit", OP), cli("check", OP)] == with_it
    assert with_it[0].json["clean"] is True


def test_the_rollback_check_sees_a_truncated_ledger(cli: Cli) -> None:
    """A ledger cut behind MEMORY.md's back (in place) is refused with the snapshot too."""
    frontend(cli)
    cli.ok("note", OP, "--text", "a")
    cli.ok("note", OP, "--text", "b")
    lines = cli.ledger().read_bytes().splitlines(keepends=True)
    cli.ledger().write_bytes(b"".join(lines[:-1]))
    refused = cli("note", OP, "--text", "c")
    assert refused.code == 7 and "rolled back" in refused.json["error"]


# --- MEMORY.md's marker record -----------------------------------------------------------------


def _record(root: Path) -> Path:
    return _cache(root) / "markers-MEMORY.md.json"


def test_the_marker_record_spares_a_parse_and_only_for_its_own_text(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    frontend(cli)
    assert _record(cli.root).is_file()
    parses: list[int] = []
    parse = splice._parsed_marker_lines

    def counted(lines: list[str]) -> object:
        parses.append(1)
        return parse(lines)

    monkeypatch.setattr(splice, "_parsed_marker_lines", counted)
    splice._known_markers.clear()
    cli.ok("note", OP, "--text", "a")
    # Neither text parsed: the file as it was came from the record, and the result's markers
    # are those moved by its new bodies, in which nothing is left open (splice._provably_closed).
    assert not parses
    memory = cli.ledger().with_name("MEMORY.md")
    memory.write_text(memory.read_text("utf-8") + "\nhand-written line\n", "utf-8")
    splice._known_markers.clear()
    cli.ok("note", OP, "--text", "b")
    assert len(parses) == 1  # another text: parsed again
    assert "hand-written line" in memory.read_text("utf-8")


def test_check_never_reads_the_marker_record(cli: Cli) -> None:
    """A forged record (the right digest, false markers) would fool a render, never check."""
    frontend(cli)
    memory = cli.ledger().with_name("MEMORY.md")
    lines = memory.read_text("utf-8").splitlines(keepends=True)
    # A hand edit inside a managed section, which check must report.
    begin = next(i for i, line in enumerate(lines) if "tune-ledger:begin" in line)
    lines.insert(begin + 1, "edited by hand\n")
    memory.write_text("".join(lines), "utf-8")
    truth = cli("check", OP)
    assert truth.code == 7
    record = _record(cli.root)
    digest = splice._digest(memory.read_text("utf-8"))
    forged = f'{{"sha256":"{digest}","markers":[]}}'.encode()
    assert cache_file.write_cache_file(record.parent, record.name, forged)  # a whole record
    splice._known_markers.clear()
    assert cli("check", OP) == truth


def _five_measured(cli: Cli) -> None:
    """An activated campaign with five candidates, each verified."""
    frontend(cli)
    for n in range(5):
        cli.ok("candidate", OP, "--config", _config(n), "--prior", "p")
        cli.ok(
            "verify", OP, "pending", "--output", "y=true", "--layout-exit", "0", "--time", "60us"
        )


def test_attempts_come_back_in_order_with_the_headers_strings(cli: Cli) -> None:
    """The attempts, written in parts after the header, come back in order, equal to a full
    replay's, each id and each config that is its R9 key the header's own string object."""
    _five_measured(cli)
    cli.ok("candidate", OP, "--config", _spelled_config(1), "--prior", "p")
    OpLedger(cli.root, OP).keep_snapshot()
    truth = OpLedger(cli.root, OP).load(snapshot=False).state
    found = state_snapshot._read_snapshot(_cache(cli.root) / state_snapshot.SNAPSHOT_NAME, OP)
    assert found is not None
    state = found["state"]
    assert state == truth and list(state.attempts) == list(truth.attempts)
    keys = {key: key for key in state.measured_configs}
    for point in state.points.values():
        for aid in point.attempts:
            assert next(a for a in state.attempts if a == aid) is aid
    measured = [a for a in state.attempts.values() if a.status == "verified"]
    assert measured
    for attempt in measured:
        assert attempt._config is keys[attempt._config]  # one object with the key


def _snapshot_with_parts(cli: Cli) -> Path:
    """A snapshot of several attempt parts (2 attempts each here); its path."""
    _five_measured(cli)
    OpLedger(cli.root, OP).keep_snapshot()
    return _cache(cli.root) / state_snapshot.SNAPSHOT_NAME


def _flip_last_byte(path: Path) -> None:
    """Change the snapshot's last byte (inside its last part) in place."""
    with open(path, "r+b") as file:
        file.seek(-1, os.SEEK_END)
        last = file.read(1)
        file.seek(-1, os.SEEK_END)
        file.write(bytes([last[0] ^ 0xFF]))


def test_a_part_damaged_before_the_restore_means_no_snapshot(cli: Cli) -> None:
    """The parts are checked (streamed, not held) before the state is used: a damaged one
    means a full replay, as a damaged header does."""
    path = _snapshot_with_parts(cli)
    assert state_snapshot._read_snapshot(path, OP) is not None  # the check can fail
    _flip_last_byte(path)
    assert state_snapshot._read_snapshot(path, OP) is None


def test_a_part_is_read_when_used_and_refused_if_it_changed_since(cli: Cli) -> None:
    """A restored state reads each part from the file it opened when one of its attempts is
    read, checking the part's own tag then: a file put in its place (a newer snapshot is
    renamed over it) does not disturb it; bytes changed in place after the restore are
    refused."""
    path = _snapshot_with_parts(cli)
    reads = [state_snapshot._read_snapshot(path, OP) for _ in range(2)]
    reference, found = (r["state"].attempts for r in reads if r is not None)
    expected = list(reference.values())  # every part read now
    assert len(expected) == 5
    data = path.read_bytes()
    path.unlink()
    path.write_bytes(b"a newer snapshot")
    assert list(found.values()) == expected  # still the file it opened
    path.unlink()
    path.write_bytes(data)
    damaged_reader = state_snapshot._read_snapshot(path, OP)
    assert damaged_reader is not None
    damaged = damaged_reader["state"].attempts
    _flip_last_byte(path)  # in place, under the open file
    assert damaged[next(iter(damaged))] == expected[0]  # the first part is intact
    with pytest.raises(LedgerError, match="changed after it was checked"):
        damaged[list(damaged)[-1]]


def test_a_note_at_a_restored_state_unpickles_only_the_newest_attempts(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attempts stay in the snapshot's bytes until read (ledger/domain/lazy_attempts.py):
    a note reads none itself; the views it leaves for the next read (ledger/projections/
    view_cache.py) read the newest LOG_ROWS and the latest point's candidates, so only the
    parts that hold those are unpickled."""
    frontend(cli)  # point F-1 open
    for n in range(8):
        if n == 6:
            cli.ok("point", "close", OP, "F-1", "--reason", "mutations exhausted")
            cli.ok("point", "open", OP, "F-2")
        cli.ok("candidate", OP, "--config", _config(n), "--prior", "p")
        cli.ok("fail", OP, "pending", "--category", "runtime", "--detail", f"d{n}")
    shutil.rmtree(_cache(cli.root))
    cli.ok("status", OP)  # a full replay by a read command writes the snapshot
    monkeypatch.setattr(state_snapshot, "TAIL_LIMIT", 1 << 20)  # a seal, not a new snapshot
    monkeypatch.setattr(view_cache, "LOG_ROWS", 2)
    truth = OpLedger(cli.root, OP).load(snapshot=False).state
    read: list[int] = []
    read_part = LazyAttempts._read_part

    def counted(self: LazyAttempts, n: int) -> None:
        read.append(n)
        read_part(self, n)

    with monkeypatch.context() as patched:
        _no_full_replay(patched)
        restored = OpLedger(cli.root, OP).load()
        assert isinstance(restored.state.attempts, LazyAttempts)
        assert restored.state.attempts.unread_parts() == 4  # 8 attempts, 2 to a part
        patched.setattr(LazyAttempts, "_read_part", counted)  # only the note's own reads
        assert read == []
        cli.ok("note", OP, "--text", "nothing to unpickle")
        assert read == [3]  # the part of the newest 2 attempts, F-2's candidates
    assert restored.state == truth  # which reads them all
    assert read == [3] and restored.state.attempts.unread_parts() == 0
    cli.ok("check", OP)


def test_what_the_tail_changes_in_an_attempt_the_kept_indexes_see(tmp_path: Path) -> None:
    """The indexes `State.derived` carries in the snapshot's header name attempts by id: a
    candidate pending in the snapshot and verified in the tail is an alternate at once, as
    after a full replay (copies of the attempts in the header would still say pending)."""
    twins = Twins(tmp_path)
    measured = ("--output", "y=true", "--layout-exit", "0")
    twins.run("candidate", OP, "--config", _config(1), "--prior", "p")
    twins.run("verify", OP, "pending", *measured, "--time", "900us")
    twins.run("candidate", OP, "--config", _config(2), "--prior", "p")
    shutil.rmtree(_cache(twins.cached))
    twins.run("status", OP)  # a full replay writes the snapshot, the candidate pending
    twins.run("verify", OP, "pending", *measured, "--time", "800us")
    assert len(twins.run("status", OP).json["alternates"]) == 2


def test_r9_keys_are_found_without_loading_their_texts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A restored state's R9 keys are looked up by digest (ledger/domain/lazy_measured.py):
    finding whether a config was measured, and by which attempt, loads no key text; R9's
    refusal and a new candidate print and write what they do after a full replay."""
    monkeypatch.setattr(state_snapshot, "TEXTS_PER_PART", 2)
    twins = Twins(tmp_path)
    measured = ("--output", "y=true", "--layout-exit", "0")
    for n in range(4):
        twins.run("candidate", OP, "--config", _config(n), "--prior", "p")
        twins.run("verify", OP, "pending", *measured, "--time", f"{90 - n}us")
    shutil.rmtree(_cache(twins.cached))
    twins.run("status", OP)  # a full replay by a read command writes the snapshot
    monkeypatch.setattr(state_snapshot, "TAIL_LIMIT", 1 << 20)  # seals, not new snapshots
    truth = OpLedger(twins.plain, OP).load(snapshot=False).state
    restored = OpLedger(twins.cached, OP).load().state
    found = restored.measured_configs
    assert isinstance(found, LazyMeasured) and found.loaded_parts() == 0
    for key, measured_by in truth.measured_configs.items():
        assert key in found and found.get(key) == measured_by
    assert found.get(_config(9)) is None and _config(9) not in found
    assert found.loaded_parts() == 0
    assert list(found.items()) == list(truth.measured_configs.items())
    assert found.loaded_parts() == 3  # 5 keys (the baseline's too), 2 to a part
    refused = twins.run("candidate", OP, "--config", _config(2), "--prior", "p")
    assert refused.code != 0 and "R9" in refused.stdout
    twins.run("candidate", OP, "--config", _config(7), "--prior", "p")
    twins.run("verify", OP, "pending", *measured, "--time", "50us")
    assert twins.run("candidate", OP, "--config", _config(7), "--prior", "p").code != 0
    assert (
        OpLedger(twins.cached, OP).load().state
        == OpLedger(twins.plain, OP).load(snapshot=False).state
    )


def test_a_part_that_keeps_its_crc_but_not_its_tag_is_never_unpickled(cli: Cli) -> None:
    """The parts are checked against damage by their CRC-32 before the state is used; what a
    part holds is unpickled only once its own HMAC was checked. A part replaced by a pickle
    whose CRC the header was made to carry (a forged CRC) passes the first check and is
    refused, not run, when it is read."""
    path = _snapshot_with_parts(cli)
    header, parts = _unpickled(path), _parts(path)
    sizes, crcs = header["part_sizes"], header["part_crcs"]
    assert isinstance(sizes, list) and isinstance(crcs, list)
    planted = pickle.dumps([_Planted()])
    last = len(sizes) - 1
    parts = parts[: sum(sizes[:last])] + planted
    sizes[last], crcs[last] = len(planted), zlib.crc32(planted)
    path.write_bytes(_signed(header, parts))
    ran = len(_Planted.ran)
    found = state_snapshot._read_snapshot(path, OP)
    assert found is not None  # the CRCs match
    attempts = found["state"].attempts
    assert attempts[next(iter(attempts))].seq == 1  # an intact part reads as before
    with pytest.raises(LedgerError, match="changed after it was checked"):
        attempts[list(attempts)[-1]]
    assert len(_Planted.ran) == ran
    assert not path.exists()  # dropped: the next command replays the ledger
