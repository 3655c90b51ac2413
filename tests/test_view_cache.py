"""The view cache of `status` and `resume` (ledger/projections/view_cache.py): what it prints
is byte for byte what a full replay prints, whatever happened to the ledger or to the cache;
it never creates files where the uncached path would refuse; audit never reads it; and a hit imports
neither the stage machines nor cattrs."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from cli_harness import OP, Cli, Result, frontend, new_op, pending, run_main
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from import_probe import imported

from ledger.cli import COMMAND_MODULES
from ledger.cli import inspect as cli_inspect
from ledger.cli import status as cli_status
from ledger.projections import cache_file, view_cache, views
from ledger.shell.api import OpLedger
from stages import commands as cmd

REPO = Path(__file__).resolve().parents[1]
NO_CACHE = {view_cache.NO_CACHE_ENV: "1"}


def _cache(cli: Cli, op: str = OP) -> Path:
    return cli.root / "custom" / op / view_cache.CACHE_DIR


def _entry(path: Path) -> dict[str, Any]:
    """The entry written as `path` (under its digest line), as JSON."""
    data = cache_file.read_cache_file(path)
    assert data is not None, f"{path} is not a whole cache file"
    found: dict[str, Any] = json.loads(data)
    return found


def _write_entry(path: Path, entry: object) -> None:
    """Write `entry` as the view cache writes one (a whole file, under its digest line)."""
    assert cache_file.write_cache_file(path.parent, path.name, json.dumps(entry).encode())


def _run(cli: Cli, args: list[str], *, as_json: bool, cached: bool) -> Result:
    argv = ["--root", str(cli.root), *(["--json"] if as_json else []), *args]
    return run_main(argv, env=None if cached else NO_CACHE)


def _same_as_uncached(cli: Cli, op: str = OP) -> None:
    """`status` and `resume`, JSON and text, print with the cache exactly what they print
    without it (exit code, stdout and stderr); run twice, so the second is a hit if any."""
    for view in ("status", "resume"):
        for as_json in (True, False):
            truth = _run(cli, [view, op], as_json=as_json, cached=False)
            for _ in range(2):
                assert _run(cli, [view, op], as_json=as_json, cached=True) == truth


def _hit_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make a miss fail the test: replaying the ledger is not allowed from here on."""

    def no_replay(*_args: object) -> object:
        raise AssertionError("status replayed the ledger: the cache was not used")

    monkeypatch.setattr(cli_status, "load_state", no_replay)


def test_a_second_status_is_a_hit_and_prints_the_same(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first status writes the entry; the next ones print it without replaying."""
    pending(cli)
    truth = [
        _run(cli, [v, OP], as_json=j, cached=False)
        for v in ("status", "resume")
        for j in (True, False)
    ]
    assert cli("status", OP).code == 0
    assert (_cache(cli) / view_cache.ENTRY_NAME).is_file()
    _hit_only(monkeypatch)
    assert [
        _run(cli, [v, OP], as_json=j, cached=True)
        for v in ("status", "resume")
        for j in (True, False)
    ] == truth


def test_the_command_that_appends_leaves_the_next_status_a_hit(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A state-changing command caches the views of the state it just wrote, so the status
    an agent runs next reads them instead of replaying the whole ledger."""
    pending(cli)
    truth = [
        _run(cli, [v, OP], as_json=j, cached=False)
        for v in ("status", "resume")
        for j in (True, False)
    ]
    _hit_only(monkeypatch)
    assert [
        _run(cli, [v, OP], as_json=j, cached=True)
        for v in ("status", "resume")
        for j in (True, False)
    ] == truth


def test_log_with_a_small_limit_after_an_append_is_a_hit_and_prints_the_same(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`log --limit N` (N up to LOG_ROWS, no filter) prints the latest attempts from the view
    cache the last append wrote; a larger limit, a filter or no limit reads the state."""
    frontend(cli)
    for n in range(3):
        cli.ok(
            "candidate", OP, "--config", f'{{"vec_tile_shape":[1,8,1,{16 + n}]}}', "--prior", "p"
        )
        cli.ok("fail", OP, "pending", "--category", "runtime", "--detail", f"d{n}")
    asked = [["log", OP, "--limit", str(n)] for n in (1, 2, view_cache.LOG_ROWS)]
    truth = [_run(cli, a, as_json=j, cached=False) for a in asked for j in (True, False)]
    with monkeypatch.context() as patched:
        patched.setattr(cli_inspect, "load_state", _refuse_replay)
        assert [_run(cli, a, as_json=j, cached=True) for a in asked for j in (True, False)] == truth
    others = [
        ["log", OP, "--limit", str(view_cache.LOG_ROWS + 1)],
        ["log", OP, "--stage", "frontend"],
    ]
    expected = [_run(cli, a, as_json=True, cached=False) for a in others]
    replays: list[int] = []
    load_state = cli_inspect.load_state

    def counted(*args: object) -> object:
        replays.append(1)
        return load_state(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(cli_inspect, "load_state", counted)
    assert [_run(cli, a, as_json=True, cached=True) for a in others] == expected
    assert len(replays) == 2


def _refuse_replay(*_args: object) -> object:
    raise AssertionError("log replayed the ledger: the cache was not used")


def test_every_append_is_seen(cli: Cli) -> None:
    """After each state-changing command the cached views are those of the new ledger."""
    frontend(cli)
    _same_as_uncached(cli)
    started = cli.ok(
        "candidate",
        OP,
        "--config",
        '{"vec_tile_shape":[1,8,1,32]}',
        "--prior",
        "kernels/softmax.py:12",
    )
    _same_as_uncached(cli)
    cli.ok(
        "verify",
        OP,
        started["attempt"],
        "--output",
        "y=true",
        "--layout-exit",
        "0",
        "--time",
        "80us",
    )
    _same_as_uncached(cli)
    assert cli.ok("status", OP)["best"]["time_us"] == 80.0


def test_a_torn_tail_warns_as_without_the_cache_and_is_not_cached(cli: Cli) -> None:
    """A torn tail changes the position (size, tail) and the warnings; views with warnings
    are not written, and the repaired ledger is seen again."""
    frontend(cli)
    cli.ok("status", OP)
    with cli.ledger().open("ab") as ledger:
        ledger.write(b'{"id":"half a line')
    _same_as_uncached(cli)
    status = cli.ok("status", OP)
    assert len(status["warnings"]) == 1 and "torn tail" in status["warnings"][0]
    entry = _entry(_cache(cli) / view_cache.ENTRY_NAME)
    assert entry["key"]["ledger"]["size"] != cli.ledger().stat().st_size
    cli.ok("note", OP, "--text", "after the crash")  # quarantines the tail
    _same_as_uncached(cli)
    assert cli.ok("status", OP)["warnings"] == []


def test_same_size_ledger_with_other_views_in_place_and_replaced(tmp_path: Path) -> None:
    """Two ledgers of exactly the same size whose status differs (another point name of the
    same length), swapped under the cache in place (same inode) and by rename."""
    ledgers = {}
    for name in ("F-1", "F-2"):
        cli = Cli(tmp_path / name)
        frontend(cli)  # opens point F-1
        cli.ok("point", "close", OP, "F-1", "--reason", "n/a here")
        cli.ok("point", "open", OP, name.replace("F-", "G-"))
        ledgers[name] = cli.ledger().read_bytes()
    assert len(ledgers["F-1"]) == len(ledgers["F-2"]) and ledgers["F-1"] != ledgers["F-2"]
    cli = Cli(tmp_path / "work")
    new_op(cli)
    for swap in ("in place", "replaced", "in place"):
        for name in ("F-1", "F-2"):
            if swap == "in place":
                cli.ledger().write_bytes(ledgers[name])
            else:
                cli.ledger().with_name("incoming").write_bytes(ledgers[name])
                os.replace(cli.ledger().with_name("incoming"), cli.ledger())
            assert cli.ok("status", OP)["open_point"] == name.replace("F-", "G-")
            _same_as_uncached(cli)


def test_an_edit_in_the_middle_is_refused_even_with_an_entry(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Damage that keeps the size and the hashed tail: the file's ctime and mtime moved, so
    the entry does not match and status exits 7 as without the cache."""
    monkeypatch.setattr(view_cache, "TAIL_BYTES", 1024)  # this small ledger is < 64 KiB
    frontend(cli)
    cli.ok("status", OP)
    path = cli.ledger()
    data = path.read_bytes()
    old = path.stat()
    tampered = data.replace(b'"y"', b'"Y"', 1)
    assert len(tampered) == len(data) and tampered[-1024:] == data[-1024:]
    path.write_bytes(tampered)
    # A later edit, as a hand edit is: on file systems with coarse timestamps two writes in
    # one tick share them (the residual risk the module states), so the test moves mtime.
    os.utime(path, ns=(old.st_atime_ns, old.st_mtime_ns + 1_000_000_000))
    result = cli("status", OP)
    assert result.code == 7 and "events.jsonl:" in result.json["error"]
    _same_as_uncached(cli)


@pytest.mark.parametrize("garbage", [b"", b"{", b"not json", b"[]", b'{"key": 1}', b"\xff\xfe"])
@pytest.mark.parametrize("whole", [True, False])
def test_a_corrupt_entry_is_ignored_and_rewritten(cli: Cli, garbage: bytes, whole: bool) -> None:
    """An entry that is empty, partial, not JSON, or of another shape is a miss: written
    whole (under its digest) or not (bytes without the digest line)."""
    frontend(cli)
    cli.ok("status", OP)
    entry = _cache(cli) / view_cache.ENTRY_NAME
    if whole:
        assert cache_file.write_cache_file(entry.parent, entry.name, garbage)
    else:
        entry.write_bytes(garbage)
    _same_as_uncached(cli)
    assert _entry(entry)["views"]["status"]["json"]


def test_an_entry_written_half_or_by_two_writers_at_once_is_a_miss(cli: Cli) -> None:
    """An entry is rewritten in place: a reader that meets it half written (its end missing)
    or mixed with another entry of the same length finds its digest wrong, and recomputes."""
    frontend(cli)
    cli.ok("status", OP)
    path = _cache(cli) / view_cache.ENTRY_NAME
    whole = path.read_bytes()
    entry = _entry(path)
    lie = {"json": json.dumps({"op": OP, "lie": True}), "text": "a lie"}
    other = json.dumps({**entry, "views": {"status": lie, "resume": lie}}).encode()
    for torn in (whole[: len(whole) // 2], whole[:-1], whole[:200] + b" " * (len(whole) - 200)):
        path.write_bytes(torn)
        assert cache_file.read_cache_file(path) is None
        _same_as_uncached(cli)
        assert "lie" not in cli.ok("status", OP)
    _write_entry(path, json.loads(other))
    mixed = whole[:150] + path.read_bytes()[150:]  # the key of one, the views of another
    path.write_bytes(mixed)
    assert cache_file.read_cache_file(path) is None
    assert "lie" not in cli.ok("status", OP)
    _same_as_uncached(cli)


def test_a_link_in_the_cache_folder_is_replaced_never_written_through(
    cli: Cli, tmp_path: Path
) -> None:
    """A symbolic or hard link planted as the entry (a clone can carry one) is replaced by a
    file of its own: the file it points to keeps its bytes."""
    frontend(cli)
    cli.ok("status", OP)
    path = _cache(cli) / view_cache.ENTRY_NAME
    for link in (os.symlink, os.link):
        target = tmp_path / f"precious-{link.__name__}"
        target.write_bytes(b"precious")
        path.unlink()
        link(target, path)
        cli.ok("note", OP, "--text", f"through a {link.__name__}")  # rewrites the entry
        assert target.read_bytes() == b"precious"
        assert not path.is_symlink() and path.stat().st_nlink == 1
        assert _entry(path)["views"]["status"]["json"]


def test_an_entry_with_the_right_key_and_a_wrong_shape_is_ignored(cli: Cli) -> None:
    """A matching key is not enough: each view must be there as JSON and text."""
    frontend(cli)
    cli.ok("status", OP)
    entry_path = _cache(cli) / view_cache.ENTRY_NAME
    entry = _entry(entry_path)
    del entry["views"]["resume"]["text"]
    _write_entry(entry_path, entry)
    _same_as_uncached(cli)


def test_an_entry_of_other_code_is_ignored(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another code fingerprint (an edited module, another version) is a miss."""
    frontend(cli)
    monkeypatch.setattr(view_cache, "_fingerprint", "other code")
    assert cli("status", OP).code == 0
    written = _entry(_cache(cli) / view_cache.ENTRY_NAME)
    assert written["key"]["code"] == "other code"
    monkeypatch.setattr(view_cache, "_fingerprint", None)
    calls = []
    real = cli_status.load_state

    def counting(*args: object) -> object:
        calls.append(args)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(cli_status, "load_state", counting)
    _same_as_uncached(cli)
    assert calls, "the entry of other code was used"


def test_the_fingerprint_follows_the_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Touching a module of any layer of ledger/ or of stages/ changes the fingerprint."""
    package = tmp_path / "ledger"
    shutil.copytree(REPO / "ledger", package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(
        REPO / "stages", tmp_path / "stages", ignore=shutil.ignore_patterns("__pycache__")
    )
    monkeypatch.setattr(view_cache, "__file__", str(package / "projections" / "view_cache.py"))
    monkeypatch.setattr(view_cache, "_fingerprint", None)
    before = view_cache.code_fingerprint()
    touched = (
        package / "projections" / "views.py",
        package / "log" / "store.py",
        package / "__init__.py",
        tmp_path / "stages" / "allowed.py",
    )
    for module in touched:
        monkeypatch.setattr(view_cache, "_fingerprint", None)
        stat = module.stat()
        os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))
        after = view_cache.code_fingerprint()
        assert after != before
        before = after


def test_the_cache_folder_ignores_itself_in_git(cli: Cli) -> None:
    """`git status` in a repository holding the op lists no file of the cache."""
    frontend(cli)
    cli.ok("status", OP)
    assert (_cache(cli) / ".gitignore").read_text("utf-8").splitlines()[-1] == "*"
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "init", "-q", str(cli.root)], check=True, env=env)
    listed = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=cli.root,
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout
    assert "events.jsonl" in listed and view_cache.CACHE_DIR not in listed


def test_the_repository_ignores_the_cache_folder() -> None:
    """The repository's own .gitignore names it too (a cache written by an older version)."""
    lines = (REPO / ".gitignore").read_text("utf-8").splitlines()
    assert f"{view_cache.CACHE_DIR}/" in lines


def test_a_cache_that_cannot_be_written_never_fails_the_command(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only checkout, or a file where the folder should be: status still works."""
    frontend(cli)

    def read_only(*_args: object) -> None:
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(cache_file, "_replace", read_only)  # a rename (a new file)
    monkeypatch.setattr(cache_file, "_overwrite", read_only)  # a rewrite in place
    _same_as_uncached(cli)
    monkeypatch.undo()
    shutil.rmtree(_cache(cli), ignore_errors=True)
    _cache(cli).write_bytes(b"a file, not a folder")
    _same_as_uncached(cli)
    assert _cache(cli).read_bytes() == b"a file, not a folder"


def test_no_cache_is_written_where_status_refuses(cli: Cli) -> None:
    """No ledger (exit 2), a bad op name (exit 2), a damaged ledger (exit 7): the same errors
    as without the cache, and no cache folder."""
    (cli.root / "custom" / "noledger").mkdir(parents=True)
    for op in ("noledger", "missing", "../x"):
        _same_as_uncached(cli, op)
        assert cli("status", op).code == 2
    assert not (cli.root / "custom" / "noledger" / view_cache.CACHE_DIR).exists()
    new_op(cli)
    shutil.rmtree(_cache(cli))  # written by init; the damaged ledger must not write one
    path = cli.ledger()
    path.write_bytes(path.read_bytes().replace(b'"host":', b'"HOST":', 1))
    _same_as_uncached(cli)
    assert cli("status", OP).code == 7
    assert not _cache(cli).exists()


def test_the_no_cache_switch_neither_reads_nor_writes(cli: Cli) -> None:
    frontend(cli)
    shutil.rmtree(_cache(cli))  # the entry the last command wrote
    _run(cli, ["status", OP], as_json=True, cached=False)
    assert not _cache(cli).exists()


def test_audit_and_check_never_read_the_cache(cli: Cli) -> None:
    """A poisoned entry (right key, false views) fools status by design, never audit/check."""
    frontend(cli)
    cli.ok("status", OP)
    entry_path = _cache(cli) / view_cache.ENTRY_NAME
    entry = _entry(entry_path)
    lie = {"json": json.dumps({"op": OP, "lie": True}), "text": "a lie"}
    entry["views"] = {"status": lie, "resume": lie}
    _write_entry(entry_path, entry)
    assert cli.ok("status", OP) == {"op": OP, "lie": True}  # the premise: it is read
    shutil.move(str(_cache(cli)), str(cli.root / "aside"))
    truth = [cli("audit", OP), cli("check", OP)]
    shutil.move(str(cli.root / "aside"), str(_cache(cli)))
    assert [cli("audit", OP), cli("check", OP)] == truth
    assert truth[0].json["clean"] is True


def test_remember_after_an_append_makes_the_next_status_a_hit(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook for the API: views of the state after an append, checked against the file."""
    frontend(cli)
    ledger = OpLedger(cli.root, OP)
    outcome = ledger.execute(cmd.AddNote(text="remembered"))
    head = outcome.events[-1].id
    assert view_cache.remember(ledger.store.path, OP, outcome.state, head)
    truth = [
        _run(cli, [v, OP], as_json=j, cached=False)
        for v in ("status", "resume")
        for j in (True, False)
    ]
    with monkeypatch.context() as patched:
        _hit_only(patched)
        assert [
            _run(cli, [v, OP], as_json=j, cached=True)
            for v in ("status", "resume")
            for j in (True, False)
        ] == truth
    ledger.execute(cmd.AddNote(text="another writer"))
    assert not view_cache.remember(ledger.store.path, OP, outcome.state, head)
    with ledger.store.path.open("ab") as file:
        file.write(b"torn")
    assert not view_cache.remember(ledger.store.path, OP, outcome.state, head)


def test_remember_never_fails_the_command_that_appended(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A view that cannot be rendered (a bug) is reported by `status`, not by the append."""
    frontend(cli)
    ledger = OpLedger(cli.root, OP)
    outcome = ledger.execute(cmd.AddNote(text="n"))

    def broken(_state: object) -> dict[str, object]:
        raise RuntimeError("status view exploded")

    monkeypatch.setattr(views, "status", broken)
    assert not view_cache.remember(ledger.store.path, OP, outcome.state, outcome.events[-1].id)
    shutil.rmtree(_cache(cli))  # the entry the append itself wrote: status must compute
    assert cli("status", OP).code == 1


def test_the_command_table_names_every_module_command() -> None:
    """ledger.cli finds a command's module without importing the others: its table must list
    exactly the commands each module defines."""
    import importlib

    for module, names in COMMAND_MODULES.items():
        defined = [c.name for c in importlib.import_module(module).COMMANDS]
        assert sorted(defined) == sorted(names), module


# --- a property: any sequence of commands ----------------------------------------------------

_STEPS = st.lists(
    st.sampled_from(
        [
            ("note", OP, "--text", "n"),
            ("skill", "load", OP, "perf-analyzer"),
            ("skill", "unload", OP, "perf-analyzer"),
            ("stage", "enter", OP, "swimlane"),
            ("point", "open", OP, "S-1"),
            ("point", "close", OP, "F-1", "--reason", "r"),
            ("candidate", OP, "--config", '{"vec_tile_shape":[1,8,1,32]}', "--prior", "p"),
            ("verify", OP, "pending", "--output", "y=true", "--layout-exit", "0", "--time", "60us"),
            ("stop", OP, "--reason", "enough"),
            ("tear",),
            ("status",),
        ]
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=_STEPS)
def test_any_sequence_of_commands_status_is_the_same_with_the_cache(
    steps: list[tuple[str, ...]],
) -> None:
    """Whatever was appended, refused, torn or repaired, and whenever status ran (so entries
    of every age exist), the cached views are those of a full replay."""
    with tempfile.TemporaryDirectory() as tmp:
        cli = Cli(Path(tmp))
        frontend(cli)
        for step in steps:
            if step == ("tear",):
                with cli.ledger().open("ab") as ledger:
                    ledger.write(b'{"id":')
            elif step == ("status",):
                cli("status", OP)
            else:
                cli(*step)
        _same_as_uncached(cli)


# --- a real process: what a hit imports ------------------------------------------------------

# The modules a cache hit must not load: the replay, the stage machines, the events' classes.
_HEAVY = (
    "stages", "cattrs", "attr", "numpy", "markdown_it", "ledger.shell.api",
    "ledger.domain.replay", "ledger.schema.events", "ledger.log.store",
    "ledger.projections.memory_file", "ledger.cli.campaign",
)  # fmt: skip


def _imports(root: Path, *args: str) -> tuple[str, list[str]]:
    """A command's output in a fresh interpreter, and the heavy modules it imported."""
    out, modules = imported(root, *args)
    return out, sorted(m for m in modules if m.split(".")[0] in _HEAVY or m in _HEAVY)


def test_a_hit_imports_neither_the_stage_machines_nor_cattrs(cli: Cli) -> None:
    """`status` served from the cache loads none of the replay's modules (startup goal)."""
    frontend(cli)
    shutil.rmtree(_cache(cli))  # the entry the last command wrote: the first status misses
    miss_out, miss_modules = _imports(cli.root, "--json", "status", OP)
    assert "stages" in miss_modules and "ledger.schema.events" in miss_modules  # can fail
    hit_out, hit_modules = _imports(cli.root, "--json", "status", OP)
    assert hit_out == miss_out
    assert hit_modules == []
    text_out, text_modules = _imports(cli.root, "resume", OP)
    assert text_modules == [] and "next:" in text_out


@pytest.mark.parametrize("log", ["garbage", {"rows": "not json"}, {"rows": "[1,2]"}, {}])
def test_a_log_view_of_the_wrong_shape_is_no_hit(cli: Cli, log: object) -> None:
    """An entry whose key matches but whose `log` rows are not rows: `log` reads the state."""
    frontend(cli)
    cli.ok("note", OP, "--text", "x")
    truth = _run(cli, ["log", OP, "--limit", "2"], as_json=True, cached=False)
    entry_path = _cache(cli) / view_cache.ENTRY_NAME
    entry = _entry(entry_path)
    entry["views"]["log"] = log
    _write_entry(entry_path, entry)
    assert _run(cli, ["log", OP, "--limit", "2"], as_json=True, cached=True) == truth


def test_a_log_hit_imports_nothing_a_status_hit_does_not(cli: Cli) -> None:
    """`log --limit N` printed from the cache needs neither attrs (its choices come from the
    vocabulary, its text from log_view) nor the replay (startup goal: a read ≤ 1.5x click)."""
    frontend(cli)
    shutil.rmtree(_cache(cli))
    miss_out, miss_modules = _imports(cli.root, "log", OP, "--limit", "3")
    assert "ledger.schema.events" in miss_modules  # the check can fail
    hit_out, hit_modules = _imports(cli.root, "log", OP, "--limit", "3")
    assert hit_out == miss_out
    assert hit_modules == []


def test_a_write_imports_neither_cattrs_nor_markdown_it(cli: Cli) -> None:
    """A note re-renders MEMORY.md and appends: its bodies need no Markdown parse to be read
    back (splice._provably_closed) and its payload no cattrs converter (startup goal)."""
    frontend(cli)
    for text in ("a", "b"):
        out, modules = _imports(cli.root, "--json", "note", OP, "--text", text)
        assert json.loads(out)["events"][0]["type"] == "note.added"
        assert "ledger.schema.events" in modules  # the check can fail
        assert "cattrs" not in modules and "markdown_it" not in modules


def _json_safe_reference(value: object) -> object:
    """`_json_safe` as it was first written: every value checked by isinstance."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe_reference(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe_reference(v) for v in value]
    return value


_PLAIN = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5)
_VALUES = st.recursive(
    _PLAIN,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(
    status=st.dictionaries(st.text(max_size=3), _VALUES),
    added=st.dictionaries(st.text(max_size=3), _VALUES),
)
def test_json_safe_and_the_resume_it_builds_are_those_of_the_reference(
    status: dict[str, object], added: dict[str, object]
) -> None:
    """The views' JSON-safe copy takes plain values first, and resume makes only the fields it
    adds to an already safe status safe: the same values, in the same key order, as before."""
    safe = view_cache._json_safe(status)
    assert repr(safe) == repr(_json_safe_reference(status))
    merged = {**safe, **view_cache._json_safe(added)}
    reference = _json_safe_reference({**safe, **added})
    assert isinstance(reference, dict)
    assert repr(merged) == repr(reference) and list(merged) == list(reference)
