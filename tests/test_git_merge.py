"""Real git in temporary repositories: the drivers installed by `git-setup` merge ledgers and
MEMORY.md on merge, rebase and cherry-pick; a union merge is normalized; a merge without the
driver is refused naming the line and merged again; a CRLF checkout keeps LF bytes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from driver import candidate, in_point, vec

from ledger.git import merge
from ledger.log import chain, record
from ledger.shell.api import OpLedger
from stages import commands as cmd

OP = "softmax"
LEDGER = f"custom/{OP}/events.jsonl"
MEMORY = f"custom/{OP}/MEMORY.md"
BIN = str(Path(sys.executable).parent)

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
        TUNE_LEDGER_ROOT=".",
        GIT_CONFIG_NOSYSTEM="1",
        HOME=env.get("HOME", "/tmp"),
    )
    return env


def git(repo: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["git", *args], cwd=repo, env=_env(), capture_output=True, text=True, check=False
    )
    if ok:
        assert done.returncode == 0, f"git {' '.join(args)}: {done.stdout}{done.stderr}"
    return done


def tl(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["tune-ledger", *args], cwd=repo, env=_env(), capture_output=True, text=True, check=False
    )


def _new_repo(path: Path, *, setup: bool = True) -> Path:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "Test")
    git(path, "config", "user.email", "test@example.com")
    git(path, "config", "commit.gpgsign", "false")
    if setup:
        done = tl(path, "git-setup")
        assert done.returncode == 0, done.stderr
    ledger = OpLedger(path, OP)
    ledger.dir.mkdir(parents=True)
    ledger.store.path.write_bytes(b"".join(record.to_line(e) for e in in_point().events))
    ledger.render_memory()
    (ledger.dir / "notes.txt").write_text("shared\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "trunk")
    return path


def _commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def _branch_work(repo: Path) -> tuple[str, str]:
    """feature: an attempt started with the CLI, in two commits; main: two notes (API)."""
    git(repo, "checkout", "-q", "-b", "feature")
    done = tl(
        repo,
        "--json",
        "candidate",
        OP,
        "--config",
        json.dumps({"vec_tile_shape": vec(32), "unroll_list": [4, 1]}),
        "--prior",
        "k1",
    )
    assert done.returncode == 0, done.stderr
    attempt = json.loads(done.stdout)["attempt"]
    _commit(repo, "feature: candidate")
    OpLedger(repo, OP).execute(cmd.AddNote(text="feature note"))
    _commit(repo, "feature: note")
    git(repo, "checkout", "-q", "main")
    OpLedger(repo, OP).execute(cmd.AddNote(text="main note"))
    _commit(repo, "main: note")
    OpLedger(repo, OP).execute(cmd.AddNote(text="main second note"))
    _commit(repo, "main: second note")
    return attempt, git(repo, "rev-parse", "feature").stdout.strip()


def _blob(repo: Path, rev: str, path: str = LEDGER) -> bytes:
    return subprocess.run(
        ["git", "show", f"{rev}:{path}"], cwd=repo, env=_env(), capture_output=True, check=True
    ).stdout


def _audit_after_render(repo: Path) -> None:
    """check fails while MEMORY.md is stale; render fixes it; then check and audit pass."""
    assert tl(repo, "check", OP).returncode == 7
    assert tl(repo, "render", OP).returncode == 0
    done = tl(repo, "check", "--all")
    assert done.returncode == 0, done.stdout + done.stderr
    done = tl(repo, "--json", "audit", OP)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["clean"] is True


def _clean_right_after(repo: Path) -> None:
    """check and audit pass with no manual step: the MEMORY.md driver rendered the merged
    ledger, so render changes nothing (issue 18; these merges needed `render` before)."""
    for command in (("check", "--all"), ("audit", "--all")):
        done = tl(repo, *command)
        assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(tl(repo, "--json", "render", OP).stdout)["changed"] is False


def test_git_setup_is_idempotent_and_explains_itself(tmp_path: Path) -> None:
    repo = _new_repo(tmp_path / "repo", setup=False)
    (repo / ".gitattributes").write_text("*.png binary")  # no final newline
    first = tl(repo, "--json", "git-setup")
    assert first.returncode == 0, first.stderr
    changed = json.loads(first.stdout)["changed"]
    assert len(changed) == 8
    assert (repo / ".gitignore").read_text() == (
        "# tune-ledger: never committed (written by `tune-ledger git-setup`)\n"
        "custom/*/events.jsonl.lock\ncustom/*/__pycache__/\n"
    )
    assert (repo / ".gitattributes").read_text() == (
        "*.png binary\n# tune-ledger merge drivers (written by `tune-ledger git-setup`)\n"
        "custom/*/events.jsonl merge=tune-ledger-events -text eol=lf\n"
        "custom/*/MEMORY.md merge=tune-ledger-memory\n"
    )
    assert git(repo, "config", "merge.tune-ledger-events.driver").stdout.strip() == (
        "tune-ledger merge-driver %O %A %B %P"
    )
    again = tl(repo, "git-setup")
    assert again.stdout == "nothing to change: the merge drivers are already set up\n"
    data = json.loads(tl(repo, "--json", "git-setup").stdout)
    assert (data["changed"], len(data["unchanged"]), data["warnings"]) == ([], 8, [])
    attrs = git(repo, "check-attr", "merge", "text", "eol", "--", LEDGER).stdout
    assert "merge: tune-ledger-events" in attrs and "text: unset" in attrs
    for ignored in (f"custom/{OP}/events.jsonl.lock", f"custom/{OP}/__pycache__/x.pyc"):
        assert git(repo, "check-ignore", "-q", ignored).returncode == 0, ignored
    assert git(repo, "check-ignore", "-q", LEDGER, ok=False).returncode == 1  # committed


def test_git_setup_names_the_files_to_commit(tmp_path: Path) -> None:
    repo = _new_repo(tmp_path / "repo", setup=False)
    (repo / ".gitignore").write_text("custom/*/events.jsonl.lock\ncustom/*/__pycache__/\n")
    said = tl(repo, "git-setup").stdout
    assert said.splitlines()[-1] == "next: commit .gitattributes", said  # the root is "."
    (repo / ".gitattributes").unlink()
    (repo / ".gitignore").unlink()
    said = tl(repo, "git-setup").stdout
    assert said.splitlines()[-1] == "next: commit .gitattributes and .gitignore", said


@pytest.mark.slow  # several real git merges, each running the drivers (> 5 s)
def test_a_merge_with_the_driver_unions_both_branches(tmp_path: Path) -> None:
    repo = _new_repo(tmp_path / "repo")
    attempt, feature = _branch_work(repo)
    ours = _blob(repo, "main")
    done = git(repo, "merge", "-q", "--no-edit", "feature")
    assert "tune-ledger: merged custom/softmax/events.jsonl" in done.stdout + done.stderr
    assert (repo / LEDGER).read_bytes() == merge.merge(b"", ours, _blob(repo, feature)).data
    # The driver's result is the same whichever side is ours.
    git(repo, "checkout", "-q", "-b", "other", "feature")
    git(repo, "merge", "-q", "--no-edit", "main~1")
    git(repo, "checkout", "-q", "main")
    assert (
        _blob(repo, "other") == merge.merge(b"", _blob(repo, "main~1"), _blob(repo, feature)).data
    )
    status = json.loads(tl(repo, "--json", "status", OP).stdout)
    assert (status["pending"], status["conflicts"]) == (attempt, [])
    _clean_right_after(repo)
    OpLedger(repo, OP).execute(cmd.AddNote(text="after the merge"))  # follows both heads
    log = OpLedger(repo, OP).store.read()
    assert len(log.events[-1].parents) == 2


@pytest.mark.slow  # several real git merges, each running the drivers (> 5 s)
def test_a_protocol_conflict_from_a_merge_is_shown_and_resolved_with_the_cli(
    tmp_path: Path,
) -> None:
    repo = _new_repo(tmp_path / "repo")
    git(repo, "checkout", "-q", "-b", "feature")
    first = OpLedger(repo, OP).execute(candidate(vec_tile_shape=vec(32))).events[0].id[:12]
    _commit(repo, "feature: candidate")
    git(repo, "checkout", "-q", "main")
    second = OpLedger(repo, OP).execute(candidate(vec_tile_shape=vec(16))).events[0].id[:12]
    _commit(repo, "main: candidate")
    git(repo, "merge", "-q", "--no-edit", "feature")
    status = json.loads(tl(repo, "--json", "status", OP).stdout)
    (conflict,) = status["conflicts"]
    assert conflict.endswith("pending at once")
    listed = json.loads(tl(repo, "--json", "conflicts", OP).stdout)["conflicts"]
    assert set(listed[0]["options"]) == {f"abandon:{first}", f"abandon:{second}"}
    audit = json.loads(tl(repo, "--json", "audit", OP).stdout)
    assert audit["ops"][0]["conflicts"] == [conflict]
    check = tl(repo, "check", OP)
    assert check.returncode == 7 and "unresolved merge conflict" in check.stdout
    done = tl(
        repo,
        "--json",
        "resolve",
        OP,
        "--conflict",
        "1",
        "--resolution",
        f"abandon:{first}",
        "--reason",
        "main's candidate goes on",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert [e["type"] for e in json.loads(done.stdout)["events"]] == [
        "attempt.abandoned",
        "conflict.resolved",
    ]
    assert json.loads(tl(repo, "--json", "status", OP).stdout)["pending"] == second
    assert tl(repo, "check", OP).returncode == 0  # resolve re-rendered MEMORY.md
    assert tl(repo, "audit", OP).returncode == 0


@pytest.mark.slow  # several real git merges, each running the drivers (> 5 s)
def test_a_union_merge_is_normalized_then_audits_clean(tmp_path: Path) -> None:
    repo = _new_repo(tmp_path / "repo")
    (repo / ".gitattributes").write_text(
        "custom/*/events.jsonl merge=union -text\ncustom/*/MEMORY.md merge=tune-ledger-memory\n"
    )
    _commit(repo, "as a server would merge")
    _attempt, feature = _branch_work(repo)
    ours = _blob(repo, "main")
    git(repo, "merge", "-q", "--no-edit", "feature")
    check = tl(repo, "check", OP)
    assert check.returncode == 7 and "not in canonical order" in check.stdout
    done = tl(repo, "--json", "normalize", OP)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["reordered"] is True
    assert (repo / LEDGER).read_bytes() == merge.merge(b"", ours, _blob(repo, feature)).data
    assert json.loads(tl(repo, "--json", "normalize", OP).stdout)["changed"] is False
    _clean_right_after(repo)  # one command per op: normalize also re-rendered MEMORY.md


@pytest.mark.slow  # several real git merges, each running the drivers (> 5 s)
def test_a_merge_without_the_driver_is_refused_and_merged_again(tmp_path: Path) -> None:
    repo = _new_repo(tmp_path / "repo", setup=False)
    _attempt, feature = _branch_work(repo)
    ours = _blob(repo, "main")
    assert git(repo, "merge", "-q", "--no-edit", "feature", ok=False).returncode != 0
    status = tl(repo, "status", OP)
    assert status.returncode == 7
    marker = (
        next(
            i
            for i, line in enumerate((repo / LEDGER).read_bytes().split(b"\n"))
            if line.startswith(b"<<<<<<<")
        )
        + 1
    )
    assert f"{LEDGER}:{marker}: a git conflict marker" in status.stderr
    assert tl(repo, "normalize", OP).returncode == 7
    # The recovery the message gives: install the driver, merge the file again with it.
    assert tl(repo, "git-setup").returncode == 0
    git(repo, "checkout", "-m", "--", LEDGER, MEMORY)
    assert (repo / LEDGER).read_bytes() == merge.merge(b"", ours, _blob(repo, feature)).data
    _commit(repo, "merge feature")
    _audit_after_render(repo)


@pytest.mark.slow  # several real git merges, each running the drivers (> 5 s)
def test_rebase_and_cherry_pick_use_the_driver(tmp_path: Path) -> None:
    repo = _new_repo(tmp_path / "repo")
    _attempt, feature = _branch_work(repo)
    git(repo, "checkout", "-q", "-b", "picked", "main")
    git(repo, "cherry-pick", "feature")  # the note commit: it brings the events it follows
    picked = chain.scan((repo / LEDGER).read_bytes(), "t").events
    assert {e.data.get("text") for e in picked if e.type == "note.added"} >= {
        "main note",
        "main second note",
        "feature note",
    }
    assert any(e.type == "attempt.started" for e in picked)
    _clean_right_after(repo)
    git(repo, "checkout", "-q", "feature")
    git(repo, "rebase", "-q", "main")
    expected = merge.merge(b"", _blob(repo, "main"), _blob(repo, feature)).data
    assert (repo / LEDGER).read_bytes() == expected
    _clean_right_after(repo)


@pytest.mark.slow  # several real git merges, each running the drivers (> 5 s)
def test_a_crlf_checkout_keeps_the_ledger_lf_with_the_attributes(tmp_path: Path) -> None:
    repo = _new_repo(tmp_path / "repo")
    crlf = tmp_path / "crlf"
    git(tmp_path, "-c", "core.autocrlf=true", "clone", "-q", str(repo), str(crlf))
    git(crlf, "config", "core.autocrlf", "true")
    assert b"\r\n" in (crlf / "custom" / OP / "notes.txt").read_bytes()  # text is converted
    assert b"\r" not in (crlf / LEDGER).read_bytes()  # the ledger is not
    assert tl(crlf, "status", OP).returncode == 0
    assert tl(crlf, "audit", OP).returncode == 0


def test_a_crlf_checkout_without_the_attributes_is_refused_with_the_fix(tmp_path: Path) -> None:
    repo = _new_repo(tmp_path / "repo", setup=False)
    crlf = tmp_path / "crlf"
    git(tmp_path, "-c", "core.autocrlf=true", "clone", "-q", str(repo), str(crlf))
    status = tl(crlf, "status", OP)
    assert status.returncode == 7
    assert f"{LEDGER}:1: " in status.stderr and "CR LF" in status.stderr
    assert "git-setup" in status.stderr
