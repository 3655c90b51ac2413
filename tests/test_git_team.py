"""A team's merges in real git (issue 18, issue 20 item 8): finished attempts of two branches
merge with no person needed, MEMORY.md is current in the merge commit, a real conflict names
the command that resolves it, the merge order does not change the bytes, and ledgers of two
different ops are refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from driver import candidate, vec, verify
from test_git_merge import LEDGER, MEMORY, OP, _blob, _commit, _new_repo, git, tl

from ledger.git import merge
from ledger.log import chain
from ledger.shell.api import OpLedger

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _attempt_on(repo: Path, branch: str, width: int, time_us: float) -> str:
    """On a new branch from main: start one candidate, verify it, commit."""
    git(repo, "checkout", "-q", "-b", branch, "main")
    ledger = OpLedger(repo, OP)
    attempt = ledger.execute(candidate(vec_tile_shape=vec(width))).events[0].id[:12]
    ledger.execute(verify(attempt, time_us))
    _commit(repo, f"{branch}: candidate {width}, verified")
    return attempt


def _must_pass(repo: Path, *args: str) -> None:
    done = tl(repo, *args)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow  # real git merges running the drivers
def test_two_finished_attempts_merge_clean_with_no_manual_step(tmp_path: Path) -> None:
    repo = _new_repo(tmp_path / "repo")
    first = _attempt_on(repo, "one", 32, 100.0)  # both no-gain against the 100 µs baseline
    second = _attempt_on(repo, "two", 16, 100.0)
    git(repo, "checkout", "-q", "one")
    git(repo, "merge", "-q", "--no-edit", "two")
    assert git(repo, "status", "--porcelain").stdout == ""  # nothing left to render or commit
    for command in (("check", "--all"), ("audit", "--all")):
        _must_pass(repo, *command)
    status = json.loads(tl(repo, "--json", "status", OP).stdout)
    assert (status["pending"], status["conflicts"]) == (None, [])
    state = OpLedger(repo, OP).load().state
    assert {state.attempts[a].verdict for a in (first, second)} == {"no-gain"}
    assert "tune-ledger:rendered-from op=softmax events=" in (repo / MEMORY).read_text()


@pytest.mark.slow  # real git merges running the drivers
def test_two_adopted_bests_are_one_conflict_with_the_command_that_resolves_it(
    tmp_path: Path,
) -> None:
    repo = _new_repo(tmp_path / "repo")
    slow = _attempt_on(repo, "one", 32, 90.0)
    fast = _attempt_on(repo, "two", 16, 80.0)
    git(repo, "checkout", "-q", "one")
    git(repo, "merge", "-q", "--no-edit", "two")
    check = tl(repo, "check", "--all")
    assert check.returncode == 7
    assert f"tune-ledger resolve {OP} --conflict bests:" in check.stdout
    assert "RESOLUTION one of: faster, remeasure, best:" in check.stdout
    assert slow in check.stdout and fast in check.stdout
    _must_pass(repo, "resolve", OP, "--conflict", "1", "--resolution", "faster", "--reason", "x")
    assert OpLedger(repo, OP).load().state.best.attempt == fast  # type: ignore[union-attr]
    for command in (("check", "--all"), ("audit", "--all")):
        _must_pass(repo, *command)


@pytest.mark.slow  # real git merges running the drivers
def test_three_branches_merged_in_any_order_give_the_same_bytes(tmp_path: Path) -> None:
    repo = _new_repo(tmp_path / "repo")
    for branch, width in (("a", 32), ("b", 16), ("c", 8)):
        _attempt_on(repo, branch, width, 100.0)
    results = []
    for order in (("a", "b", "c"), ("c", "a", "b"), ("b", "c", "a")):
        git(repo, "checkout", "-q", "-b", "into-" + "".join(order), order[0])
        for branch in order[1:]:
            git(repo, "merge", "-q", "--no-edit", branch)
        _must_pass(repo, "check", "--all")
        results.append((_blob(repo, "HEAD"), _blob(repo, "HEAD", MEMORY)))
    assert results[0] == results[1] == results[2]
    assert (
        len(chain.scan(results[0][0], "t").events)
        == len(chain.scan(_blob(repo, "main"), "t").events) + 3 * 3
    )  # each branch: started, then measured and verdict


def _two_ops(tmp_path: Path) -> tuple[Path, Path]:
    one = _new_repo(tmp_path / "one")
    (tmp_path / "other").mkdir()
    _must_pass(tmp_path / "other", "init", "other")
    return one / LEDGER, tmp_path / "other" / "custom" / "other" / "events.jsonl"


def test_the_merge_driver_refuses_ledgers_of_two_ops(tmp_path: Path) -> None:
    ours, theirs = _two_ops(tmp_path)
    before = ours.read_bytes()
    done = tl(ours.parents[2], "--json", "merge-driver", str(ours), str(ours), str(theirs), LEDGER)
    assert done.returncode == 7, done.stdout + done.stderr
    assert "ledgers of different ops" in json.loads(done.stdout)["error"]
    assert ours.read_bytes() == before


def test_the_merge_driver_refuses_a_missing_side(tmp_path: Path) -> None:
    ours, _theirs = _two_ops(tmp_path)
    before = ours.read_bytes()
    missing = tmp_path / "gone.jsonl"
    done = tl(ours.parents[2], "--json", "merge-driver", str(ours), str(ours), str(missing))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "no such file to merge" in json.loads(done.stdout)["error"]
    assert ours.read_bytes() == before


def test_audit_finds_another_ops_events_in_the_ledger(tmp_path: Path) -> None:
    ours, theirs = _two_ops(tmp_path)
    logs = [chain.scan(path.read_bytes(), str(path)) for path in (ours, theirs)]
    entries = [pair for log in logs for pair in zip(log.events, log.lines, strict=True)]
    ours.write_bytes(b"".join(line + b"\n" for line in merge.canonical_lines(entries)))
    repo = ours.parents[2]
    _must_pass(repo, "render", OP)
    before = ours.read_bytes()
    done = tl(repo, "--json", "audit", OP)
    assert done.returncode == 7
    findings = json.loads(done.stdout)["ops"][0]["findings"]
    assert any("initializes op 'other', not 'softmax'" in f for f in findings), findings
    assert ours.read_bytes() == before
