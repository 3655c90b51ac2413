"""The git-collaboration commands in-process: the merge drivers' file contract, conflicts,
resolve with an idempotency key, normalize and `check --all`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cli_harness import OP, Cli, frontend, new_op, run_main

from ledger.git import merge
from ledger.git.drivers import strip_managed

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git merge-file is needed")

LEDGER = Path("custom") / OP / "events.jsonl"


def _branches(tmp_path: Path) -> tuple[Cli, Cli]:
    """Two copies of one op in frontend with point F-1 open, each with its own candidate."""
    ours = Cli(tmp_path / "ours")
    frontend(ours)
    shutil.copytree(ours.root, tmp_path / "theirs")
    theirs = Cli(tmp_path / "theirs")
    ours.ok("candidate", OP, "--config", '{"vec_tile_shape":[1,8,1,32]}', "--prior", "k:1")
    theirs.ok("candidate", OP, "--config", '{"vec_tile_shape":[1,8,1,16]}', "--prior", "k:2")
    return ours, theirs


def test_the_merge_driver_writes_the_union_over_ours(tmp_path: Path) -> None:
    ours, theirs = _branches(tmp_path)
    a, b = ours.root / LEDGER, theirs.root / LEDGER
    expected = merge.merge(b"", a.read_bytes(), b.read_bytes()).data
    base = tmp_path / "base"
    base.write_bytes(b"")
    result = run_main(["--json", "merge-driver", str(base), str(a), str(b), str(LEDGER)])
    assert result.code == 0, result.stderr
    assert a.read_bytes() == expected
    assert result.json["events"] == len(expected.splitlines())
    assert (result.json["ours_only"], result.json["theirs_only"]) == (1, 1)


def test_the_merge_driver_refuses_a_damaged_side_and_leaves_ours(tmp_path: Path) -> None:
    ours, theirs = _branches(tmp_path)
    a, b = ours.root / LEDGER, theirs.root / LEDGER
    before = a.read_bytes()
    b.write_bytes(b.read_bytes().replace(b'"k:2"', b'"k:3"'))
    result = run_main(["merge-driver", str(a), str(a), str(b), str(LEDGER)])
    assert result.code == 7
    assert f"{LEDGER} (theirs):" in result.stderr
    assert a.read_bytes() == before


def test_conflicts_are_listed_and_resolve_is_retry_safe(tmp_path: Path) -> None:
    ours, theirs = _branches(tmp_path)
    path = ours.root / LEDGER
    path.write_bytes(merge.merge(b"", path.read_bytes(), (theirs.root / LEDGER).read_bytes()).data)
    (listed,) = ours.ok("conflicts", OP)["conflicts"]
    assert listed["number"] == 1 and listed["conflict"].endswith("pending at once")
    assert listed["kind"] == "attempts-pending"
    assert listed["id"] == "attempts-pending:" + "+".join(listed["parties"])
    drop = listed["options"][0]
    assert ours("check", OP).code == 7
    first = ours.ok(
        "resolve",
        OP,
        "--conflict",
        listed["id"],
        "--resolution",
        drop,
        "--reason",
        "merged two agents' runs",
        key="k1",
    )
    assert ([e["type"] for e in first["events"]], first["conflicts"], first["replayed"]) == (
        ["attempt.abandoned", "conflict.resolved"],
        [],
        False,
    )
    again = ours.ok(
        "resolve",
        OP,
        "--conflict",
        listed["id"],
        "--resolution",
        drop,
        "--reason",
        "merged two agents' runs",
        key="k1",
    )
    assert again["replayed"] is True and again["events"] == first["events"]
    assert ours.ok("conflicts", OP)["conflicts"] == []
    assert ours.ok("check", OP)["findings"] == []
    refused = ours("resolve", OP, "--conflict", "1", "--resolution", "keep", "--reason", "x")
    assert refused.code == 2 and refused.json["error"] == "there is no conflict to resolve"


def test_check_all_reports_a_non_canonical_ledger_and_normalize_fixes_it(tmp_path: Path) -> None:
    ours, theirs = _branches(tmp_path)
    new_op(ours, "other")
    path = ours.root / LEDGER
    base = (theirs.root / LEDGER).read_bytes().rsplit(b"\n", 2)[0] + b"\n"
    # What merge=union leaves: our lines, then theirs that we lack, one of them repeated.
    theirs_new = (theirs.root / LEDGER).read_bytes()[len(base) :]
    path.write_bytes(path.read_bytes() + theirs_new + theirs_new)
    checked = ours("check", "--all")
    assert checked.code == 7
    # Whether the two candidates also change places depends on their (random) ids.
    assert "not in canonical order (1 repeated line" in checked.json["error"]
    assert ours("status", OP).code == 7  # the repeated line is refused until normalized
    done = ours.ok("normalize", OP)
    assert (done["changed"], done["duplicates"]) == (True, 1)
    assert ours.ok("normalize", OP)["changed"] is False
    ours.ok("render", OP)
    still = ours("check", "--all")
    assert still.code == 7 and "unresolved merge conflict" in still.json["error"]
    assert ours("check").code == 2


def test_normalize_refuses_a_damaged_ledger_with_json(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    new_op(cli)
    path = tmp_path / LEDGER
    path.write_bytes(path.read_bytes().replace(b"policy.set", b"policy.SET"))
    result = cli("normalize", OP)
    assert result.code == 7
    assert result.json["code"] == 7 and f"{LEDGER}:2: " in result.json["error"]


def _memory(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode())
    return path


MANAGED = "<!-- tune-ledger:begin status -->\n{body}<!-- tune-ledger:end status -->\n"


def test_the_memory_driver_merges_human_text_and_keeps_our_sections(tmp_path: Path) -> None:
    base = "# op\n\nintro\n\n" + MANAGED.format(body="base\n") + "\n## Notes\n\nfirst\n"
    ours_text = base.replace("intro", "intro, edited by us").replace("base\n", "ours\n")
    theirs_text = base.replace("first\n", "first\nsecond, from them\n").replace(
        "base\n", "theirs\nmore\n"
    )
    paths = [
        _memory(tmp_path, n, t) for n, t in (("O", base), ("A", ours_text), ("B", theirs_text))
    ]
    result = run_main(["memory-merge-driver", *map(str, paths), "custom/op/MEMORY.md"])
    assert result.code == 0, result.stderr
    assert "tune-ledger render op" in result.stdout
    assert paths[1].read_text() == (
        "# op\n\nintro, edited by us\n\n"
        + MANAGED.format(body="ours\n")
        + "\n## Notes\n\nfirst\nsecond, from them\n"
    )


def test_the_memory_driver_leaves_human_conflicts_marked(tmp_path: Path) -> None:
    base = "intro\n\n" + MANAGED.format(body="base\n")
    ours_text = base.replace("intro", "our intro").replace("\r\n", "\n")
    theirs_text = base.replace("intro", "their intro")
    paths = [
        _memory(tmp_path, n, t.replace("\n", "\r\n"))
        for n, t in (("O", base), ("A", ours_text), ("B", theirs_text))
    ]
    result = run_main(["--json", "memory-merge-driver", *map(str, paths)])
    assert result.code == 1 and result.json["conflicts"] == 1
    merged = paths[1].read_bytes().decode()
    assert "<<<<<<< ours\r\nour intro\r\n=======\r\ntheir intro\r\n>>>>>>> theirs" in merged
    assert merged.endswith(MANAGED.format(body="base\n").replace("\n", "\r\n"))


def test_strip_managed_empties_bodies_and_keeps_the_rest() -> None:
    text = "a\n" + MANAGED.format(body="x\ny\n") + "b\n"
    assert strip_managed(text) == "a\n" + MANAGED.format(body="") + "b\n"
    assert strip_managed("no markers\n") == "no markers\n"
