"""Once cloned, a repository is input from strangers (issue 26, item 8; STYLE.md): nothing the
ledger writes follows a link, and it reads only regular files, each kind with a size bound.
A link, a FIFO, a device or an oversized file is bad input (exit 2) naming the file, with
nothing written, here or where a link points; a FIFO never makes a command (or the MCP server,
for every other op) hang.

The cases FIFOs could hang run as processes with a time limit, so a regression fails the test
instead of stopping the run.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_harness import OP, Cli, new_op, run_process, snapshot

from ledger.log import safe_files

# --- writes never follow a link ------------------------------------------------------------


def _link_custom(cli: Cli, outside: Path) -> Path:
    """custom/ itself moved outside the root and linked back (a committed link)."""
    custom = cli.root / "custom"
    custom.rename(outside / "custom")
    custom.symlink_to(outside / "custom", target_is_directory=True)
    return custom


def _link_folder(cli: Cli, outside: Path) -> Path:
    """custom/OP moved outside the root and linked back."""
    folder = cli.root / "custom" / OP
    folder.rename(outside / OP)
    folder.symlink_to(outside / OP, target_is_directory=True)
    return folder


def _link_ledger(cli: Cli, outside: Path) -> Path:
    """events.jsonl moved outside the root and linked back."""
    ledger = cli.ledger()
    ledger.rename(outside / "events.jsonl")
    ledger.symlink_to(outside / "events.jsonl")
    return ledger


def _link_lock(cli: Cli, outside: Path) -> Path:
    """The lock file replaced by a link to a file outside (it would be created there)."""
    lock = cli.ledger().with_name("events.jsonl.lock")
    lock.unlink(missing_ok=True)
    lock.symlink_to(outside / "planted.lock")
    return lock


def _link_memory(cli: Cli, outside: Path) -> Path:
    """MEMORY.md replaced by a link to another file (whose bytes must not be copied in)."""
    memory = cli.root / "custom" / OP / "MEMORY.md"
    memory.unlink()
    (outside / "secret.txt").write_text("private notes of another project\n", "utf-8")
    memory.symlink_to(outside / "secret.txt")
    return memory


@pytest.mark.parametrize(
    "link", [_link_custom, _link_folder, _link_ledger, _link_lock, _link_memory]
)
def test_a_symlink_is_refused_for_writes_and_reads(
    cli: Cli, tmp_path_factory: pytest.TempPathFactory, link: Callable[[Cli, Path], Path]
) -> None:
    """`note` and `status` exit 2 naming the link; no byte changes here or at its target."""
    new_op(cli)
    outside = tmp_path_factory.mktemp("outside")
    linked = link(cli, outside)
    before, outside_before = snapshot(cli.root), files_of(outside)

    for args in (("note", OP, "--text", "where does this go?"), ("status", OP)):
        refused = cli(*args)
        assert refused.code == 2, (args, refused.stdout)
        assert str(linked) in refused.json["error"] and "symbolic link" in refused.json["error"]
        assert "replace the link" in refused.json["next"]

    assert snapshot(cli.root) == before
    assert files_of(outside) == outside_before


@pytest.mark.parametrize("target", ["secret", "/dev/zero"])
def test_a_planted_quarantine_file_is_refused_before_the_append(
    cli: Cli, tmp_path_factory: pytest.TempPathFactory, target: str
) -> None:
    """A torn tail is cut off into the next quarantine file, and an unrecorded one is read to
    be recorded: a link planted under that name (to a file outside, or to /dev/zero, which
    was read until the kernel killed the process) is refused, and the ledger is untouched."""
    new_op(cli)
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret").write_text("someone else's file\n", "utf-8")
    with cli.ledger().open("ab") as ledger:
        ledger.write(b'{"id":"torn')  # a crash mid-write
    quarantine = cli.ledger().with_name("events.jsonl.quarantine-1")
    quarantine.symlink_to(outside / target if target == "secret" else target)
    before, outside_before = snapshot(cli.root), files_of(outside)

    refused = cli("note", OP, "--text", "after the crash")

    assert refused.code == 2, refused.stdout
    assert str(quarantine) in refused.json["error"]
    assert snapshot(cli.root) == before
    assert files_of(outside) == outside_before


@pytest.mark.parametrize("name", [f"{OP}_tuning_report.md", f"{OP}_tuning_report.svg"])
def test_the_report_and_its_chart_are_never_written_through_a_link(
    cli: Cli, tmp_path_factory: pytest.TempPathFactory, name: str
) -> None:
    """`report` refuses a link where it writes, before it records anything."""
    new_op(cli)
    outside = tmp_path_factory.mktemp("outside")
    (outside / "victim").write_text("not a report\n", "utf-8")
    linked = cli.root / "custom" / OP / name
    linked.symlink_to(outside / "victim")
    types = cli.types()

    refused = cli("report", OP)

    assert refused.code == 2, refused.stdout
    assert str(linked) in refused.json["error"]
    assert cli.types() == types
    assert (outside / "victim").read_text("utf-8") == "not a report\n"


def test_git_setup_never_writes_through_a_link(
    cli: Cli, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A committed .gitattributes that links outside the repository is refused, not appended
    to; git's config is not touched either."""
    subprocess.run(["git", "init", "-q", str(cli.root)], check=True)
    outside = tmp_path_factory.mktemp("outside")
    (outside / "victim").write_text("# someone else's attributes\n", "utf-8")
    (cli.root / ".gitattributes").symlink_to(outside / "victim")

    refused = cli("git-setup")

    assert refused.code == 2, refused.stdout
    assert ".gitattributes" in refused.json["error"]
    assert (outside / "victim").read_text("utf-8") == "# someone else's attributes\n"
    config = (cli.root / ".git" / "config").read_text("utf-8")
    assert "tune-ledger" not in config


@pytest.mark.parametrize("linked", ["opencode.json", ".opencode"])
def test_agent_setup_never_writes_through_a_link(
    cli: Cli, tmp_path_factory: pytest.TempPathFactory, linked: str
) -> None:
    """A link where agent-setup writes (a file, or a folder on the way) is refused before
    anything is written, even with --force."""
    outside = tmp_path_factory.mktemp("outside")
    (outside / "victim").write_text("{}\n", "utf-8")
    target = outside / ("victim" if linked == "opencode.json" else "")
    (cli.root / linked).symlink_to(target, target_is_directory=linked == ".opencode")

    refused = cli("agent-setup", "--force")

    assert refused.code == 2, refused.stdout
    assert str(cli.root / linked) in refused.json["error"]
    assert files_of(outside) == {"victim": b"{}\n"}
    assert sorted(p.name for p in cli.root.iterdir()) == [linked]


def test_new_op_never_writes_through_a_linked_custom_folder(
    cli: Cli, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """custom/ linked outside the root: new-op writes no skeleton there."""
    outside = tmp_path_factory.mktemp("outside")
    (cli.root / "custom").symlink_to(outside, target_is_directory=True)

    refused = cli("new-op", "layer_norm")

    assert refused.code == 2, refused.stdout
    assert str(cli.root / "custom") in refused.json["error"]
    assert list(outside.iterdir()) == []


def test_a_clone_of_a_repository_that_committed_links_writes_nothing_outside(
    tmp_path: Path,
) -> None:
    """The probe's attack: a repository commits links where the ledger writes (MEMORY.md, the
    report), pointing outside any clone. After `git clone`, reads and writes exit 2; the
    files the links point to keep their bytes."""
    victim = tmp_path / "victim.txt"
    victim.write_text("a file of the person who cloned\n", "utf-8")
    origin = Cli(tmp_path / "origin")
    origin.root.mkdir()
    new_op(origin)
    folder = origin.root / "custom" / OP
    (folder / "MEMORY.md").unlink()
    (folder / "MEMORY.md").symlink_to(victim)
    (folder / f"{OP}_tuning_report.md").symlink_to(victim)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(origin.root)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "links"], check=True)
    clone = Cli(tmp_path / "clone")
    subprocess.run(["git", "clone", "-q", str(origin.root), str(clone.root)], check=True)
    assert (clone.root / "custom" / OP / "MEMORY.md").is_symlink()

    for args in (("status", OP), ("note", OP, "--text", "x"), ("render", OP), ("report", OP)):
        refused = clone(*args)
        assert refused.code == 2, (args, refused.stdout)
        assert "symbolic link" in refused.json["error"]
    assert victim.read_text("utf-8") == "a file of the person who cloned\n"


# --- reads take regular files only, bounded ----------------------------------------------


# The file a command reads, and a command that reads it first.
READERS = [
    ("SPEC.md", ("manifest", OP)),
    (f"{OP}_impl.py", ("evidence", "compare", OP, "--output", "y=true")),
    ("MEMORY.md", ("render", OP)),
    ("events.jsonl", ("status", OP)),
    ("events.jsonl.lock", ("status", OP)),
    ("events.jsonl.quarantine-1", ("note", OP, "--text", "x")),
]


def _plant(path: Path, kind: str) -> None:
    path.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
@pytest.mark.parametrize(("name", "args"), READERS, ids=[name for name, _ in READERS])
def test_a_fifo_or_a_device_is_refused_promptly(
    cli: Cli, kind: str, name: str, args: tuple[str, ...]
) -> None:
    """A FIFO (which made a read hang) or a link to /dev/zero (read until the kernel killed the
    process at 24 GB) in the place of an op's file: exit 2 naming it, at once, nothing
    written."""
    new_op(cli)
    path = cli.root / "custom" / OP / name
    _plant(path, kind)
    before = snapshot(cli.root)

    refused = run_process(cli.root, *args)

    assert refused.code == 2, (refused.stdout, refused.stderr)
    assert str(path) in refused.json["error"]
    assert snapshot(cli.root) == before


@pytest.mark.parametrize(
    ("name", "args", "limit"),
    [
        ("SPEC.md", ("manifest", OP), safe_files.TEXT_BYTES),
        (f"{OP}_impl.py", ("evidence", "compare", OP, "--output", "y=true"), safe_files.TEXT_BYTES),
        ("events.jsonl", ("status", OP), safe_files.LEDGER_BYTES),
    ],
)
def test_a_file_over_its_bound_is_refused_unread(
    cli: Cli, name: str, args: tuple[str, ...], limit: int
) -> None:
    """Each kind of file has a generous bound (a ledger 1 GiB, a text 8 MiB); one byte more
    is bad input naming the file (sparse files: nothing is really written or read)."""
    new_op(cli)
    path = cli.root / "custom" / OP / name
    if not path.exists():
        path.write_text("# sm\n", "utf-8")
    os.truncate(path, limit + 1)
    before = snapshot_sizes(cli.root)

    refused = cli(*args)

    assert refused.code == 2, refused.stdout
    assert str(path) in refused.json["error"] and "larger than" in refused.json["error"]
    assert snapshot_sizes(cli.root) == before


SPEC = """---
op_name: sm
p0_shapes: [[32, 32, 1, 256]]
perf_target: {time_us: 5.0, metric: max_work_time_us}
knobs:
  vec_tile_shape: {stage: frontend, kind: tile, default: [1, 8, 1, 64]}
---
# sm
"""


def test_spec_md_may_link_inside_the_root_but_not_out_of_it(
    cli: Cli, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """People's files are read through a link that stays inside the root (a SPEC.md shared
    by two ops); one leading outside is refused, naming where it leads."""
    new_op(cli)
    shared = cli.root / "specs" / "sm.md"
    shared.parent.mkdir()
    shared.write_text(SPEC, "utf-8")
    spec = cli.root / "custom" / OP / "SPEC.md"
    spec.symlink_to(Path("..") / ".." / "specs" / "sm.md")
    assert cli.ok("manifest", OP)["manifest"]["p0_shapes"] == [[32, 32, 1, 256]]

    outside = tmp_path_factory.mktemp("outside") / "SPEC.md"
    outside.write_text(SPEC, "utf-8")
    spec.unlink()
    spec.symlink_to(outside)
    types = cli.types()
    refused = cli("manifest", OP)
    assert refused.code == 2
    assert str(spec) in refused.json["error"] and "outside" in refused.json["error"]
    assert cli.types() == types


@pytest.mark.slow
def test_a_fifo_in_one_op_does_not_hang_the_mcp_server_for_another(tmp_path: Path) -> None:
    """In the MCP server one command runs at a time: a FIFO read in one op used to hang every
    op's calls. Now the op with the FIFO gets its error (code 2) and the other op answers."""
    pytest.importorskip("mcp")
    import anyio
    from mcp import ClientSession
    from test_mcp_server import serve

    cli = Cli(tmp_path)
    for op in ("blocked", "free"):
        new_op(cli, op)
    os.mkfifo(tmp_path / "custom" / "blocked" / "SPEC.md")
    fifo_ledger = tmp_path / "custom" / "blocked" / "events.jsonl"
    fifo_ledger.unlink()
    os.mkfifo(fifo_ledger)

    async def body(client: ClientSession) -> None:
        with anyio.fail_after(60):
            for tool in ("manifest", "status", "note"):
                arguments = {"op": "blocked", **({"text": "x"} if tool == "note" else {})}
                blocked = await client.call_tool(tool, arguments)
                assert blocked.is_error, tool
                error = json.loads(blocked.content[0].text)  # type: ignore[union-attr]
                assert error["code"] == 2 and "FIFO" in error["error"], error
            free = await client.call_tool("status", {"op": "free"})
            assert not free.is_error
            assert free.structured_content is not None
            assert free.structured_content["op"] == "free"

    serve(tmp_path, body)


# --- helpers -------------------------------------------------------------------------------


def files_of(folder: Path) -> dict[str, bytes]:
    """Every regular file under `folder` and its bytes."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def snapshot_sizes(root: Path) -> dict[str, int]:
    """Every file under custom/ and its size (a sparse file of 1 GiB is not read)."""
    return {
        str(p.relative_to(root)): p.stat().st_size
        for p in sorted((root / "custom").rglob("*"))
        if p.is_file()
    }
