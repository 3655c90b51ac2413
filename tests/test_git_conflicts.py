"""Every real conflict of a team's merge, in real git (issue 18): right after `git merge`,
`check` names exactly what to run; running it gives a clean `check` and `audit`, also on the
commit. Rebase and cherry-pick of finished attempts leave MEMORY.md current with no step."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
from driver import candidate, vec, verify
from test_git_merge import MEMORY, OP, _blob, _clean_right_after, _commit, _new_repo, git, tl
from test_git_team import _attempt_on, _must_pass

from ledger.git import merge
from ledger.projections import conflicts as conflict_view
from ledger.schema.conflicts import Conflict
from ledger.shell.api import OpLedger
from stages import commands as cmd
from stages.conflicts import conflicts as open_conflicts

pytestmark = [
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
    pytest.mark.slow,  # real git merges running the drivers
]


def _branch(repo: Path, name: str, *commands: Any) -> list[str]:
    """On a new branch from main: run `commands` (a "verify" string verifies the attempt
    started last at 100 µs, the baseline: a no-gain), commit; the ids of the attempts started."""
    git(repo, "checkout", "-q", "-b", name, "main")
    ledger = OpLedger(repo, OP)
    started: list[str] = []
    for command in commands:
        if command == "verify":
            ledger.execute(verify(started[-1], 100.0))
            continue
        events = ledger.execute(command).events
        started += [e.id[:12] for e in events if e.type == "attempt.started"]
    _commit(repo, f"{name}: work")
    return started


def _merge(repo: Path, ours: str, theirs: str) -> None:
    git(repo, "checkout", "-q", ours)
    git(repo, "merge", "-q", "--no-edit", theirs)
    assert git(repo, "status", "--porcelain").stdout == ""  # the merge commit is complete


def _conflicts(repo: Path) -> tuple[Conflict, ...]:
    return open_conflicts(OpLedger(repo, OP).load().state)


def _check_names(repo: Path, conflict: Conflict, text: str, resolutions: list[str]) -> str:
    """`check --all` fails naming the conflict (`text`) and the resolve command that names
    its id, with `resolutions`."""
    done = tl(repo, "check", "--all")
    assert done.returncode == 7, done.stdout + done.stderr
    assert f"unresolved merge conflict: {text}" in done.stdout, done.stdout
    assert (
        f"resolve it: tune-ledger resolve {OP} --conflict {conflict.id} --resolution "
        f"RESOLUTION --reason TEXT, RESOLUTION one of: {', '.join(resolutions)}"
    ) in done.stdout, done.stdout
    audit = tl(repo, "--json", "audit", "--all")
    assert audit.returncode == 7 and text in audit.stdout  # reported, not a finding
    assert json.loads(audit.stdout)["ops"][0]["findings"] == []
    return done.stdout


def _resolve_and_commit(repo: Path, resolution: str) -> None:
    (conflict,) = _conflicts(repo)
    _must_pass(
        repo, "resolve", OP, "--conflict", conflict.id, "--resolution", resolution, "--reason", "r"
    )
    _clean(repo)
    _commit(repo, f"resolved: {resolution}")
    _clean(repo)


def _clean(repo: Path) -> None:
    for command in (("check", "--all"), ("audit", "--all")):
        _must_pass(repo, *command)


def _order(repo: Path, *attempts: str) -> list[str]:
    """`attempts` in the order of the merged ledger."""
    state = OpLedger(repo, OP).load().state
    return sorted(attempts, key=list(state.attempts).index)


@pytest.mark.parametrize("which", [0, 1])
def test_two_attempts_still_pending(tmp_path: Path, which: int) -> None:
    """R6: one change at a time; abandoning either ends it, the other goes on."""
    repo = _new_repo(tmp_path / "repo")
    (one,) = _branch(repo, "one", candidate(vec_tile_shape=vec(32)))
    (two,) = _branch(repo, "two", candidate(vec_tile_shape=vec(16)))
    _merge(repo, "one", "two")
    first, second = _order(repo, one, two)
    _check_names(
        repo,
        Conflict("attempts-pending", (first, second)),
        f"attempts {first} and {second} pending at once",
        [f"abandon:{first}", f"abandon:{second}"],
    )
    _resolve_and_commit(repo, f"abandon:{(first, second)[which]}")
    assert (
        json.loads(tl(repo, "--json", "status", OP).stdout)["pending"] == (first, second)[1 - which]
    )


def _stop_and_late_attempt(repo: Path, finished: bool) -> str:
    _branch(repo, "stopped", cmd.Stop(reason="enough"))
    notes = [cmd.AddNote(text=f"idea {n}") for n in range(2)]  # the attempt comes after the stop
    late = [candidate(vec_tile_shape=vec(32)), *(["verify"] if finished else [])]
    (attempt,) = _branch(repo, "tuning", *notes, *late)
    _merge(repo, "stopped", "tuning")
    return attempt


def test_a_stop_with_an_attempt_started_after_it_still_pending(tmp_path: Path) -> None:
    """R10: nothing is tuned after a stop; abandoning the late attempt ends it."""
    repo = _new_repo(tmp_path / "repo")
    late = _stop_and_late_attempt(repo, finished=False)
    _check_names(
        repo,
        Conflict("after-stop", (late,)),
        f"attempt {late} started after the campaign stopped (user)",
        [f"abandon:{late}"],
    )
    _resolve_and_commit(repo, f"abandon:{late}")
    assert json.loads(tl(repo, "--json", "status", OP).stdout)["stopped"] == "user"


def test_a_stop_with_tuning_steps_finished_after_it(tmp_path: Path) -> None:
    """R10: the steps are history already; `keep` leaves the campaign stopped with them."""
    repo = _new_repo(tmp_path / "repo")
    late = _stop_and_late_attempt(repo, finished=True)
    _check_names(
        repo,
        Conflict("after-stop", (late,)),
        f"attempt {late} started after the campaign stopped (user)",
        ["keep"],
    )
    _resolve_and_commit(repo, "keep")
    status = json.loads(tl(repo, "--json", "status", OP).stdout)
    assert (status["stopped"], status["allowed"][:2]) == ("user", ["report", "note"])


def _two_bests(repo: Path) -> tuple[str, str]:
    slow = _attempt_on(repo, "one", 32, 90.0)  # both adopted against the 100 µs baseline
    fast = _attempt_on(repo, "two", 16, 80.0)
    _merge(repo, "one", "two")
    return slow, fast


@pytest.mark.parametrize("choice", ["faster", "ours", "theirs"])
def test_two_adopted_bests_keep_one(tmp_path: Path, choice: str) -> None:
    """R8: one best; the faster by its recorded median, or either branch's."""
    repo = _new_repo(tmp_path / "repo")
    slow, fast = _two_bests(repo)
    (conflict,) = _conflicts(repo)
    assert (conflict.kind, set(conflict.parties)) == ("bests", {slow, fast})
    adopted, rival = conflict.parties
    (text,) = conflict_view.texts(OpLedger(repo, OP).load().state)
    assert text == (
        f"attempt {adopted} was adopted against best baseline while attempt {rival} was the "
        "best (adopted on another branch)"
    )
    _check_names(repo, conflict, text, ["faster", "remeasure", f"best:{adopted}", f"best:{rival}"])
    resolution = {"faster": "faster", "ours": f"best:{slow}", "theirs": f"best:{fast}"}[choice]
    _resolve_and_commit(repo, resolution)
    best = OpLedger(repo, OP).load().state.best
    assert best is not None and best.attempt == (slow if choice == "ours" else fast)


_CANDIDATE = re.compile(r"`tune-ledger (candidate [^`]+)`")


def test_two_adopted_bests_re_measured_by_the_commands_check_gives(tmp_path: Path) -> None:
    """R8 with fresh measurements: an agent told "re-measure both" runs what `check` says;
    the conflict closes when both configs have a fresh verdict."""
    repo = _new_repo(tmp_path / "repo")
    slow, fast = _two_bests(repo)
    # The number `conflicts` lists it with names it too (what the CLI documented first).
    _must_pass(repo, "resolve", OP, "--conflict", "1", "--resolution", "remeasure", "--reason", "r")
    fresh = {slow: 84.0, fast: 88.0}  # measured again, the other way round
    for _ in range(2):
        done = tl(repo, "check", "--all")
        assert done.returncode == 7 and "to be re-measured; to close it: " in done.stdout
        command = _CANDIDATE.search(done.stdout)
        assert command is not None, done.stdout
        started = tl(repo, "--json", *shlex.split(command.group(1)))
        assert started.returncode == 0, started.stdout + started.stderr
        attempt = json.loads(started.stdout)["attempt"]
        check = tl(repo, "check", "--all").stdout
        assert f"measure attempt {attempt}: `tune-ledger measure {OP} {attempt}`" in check
        measured = command.group(1).rsplit("remeasure:", 1)[1]
        _must_pass(
            repo,
            "verify",
            OP,
            attempt,
            "--output",
            "y=true",
            "--layout-exit",
            "0",
            "--time",
            f"{fresh[measured]}us",
        )
    _clean(repo)
    state = OpLedger(repo, OP).load().state
    assert state.best is not None and state.best.config == state.attempts[slow].config
    _commit(repo, "re-measured both")
    _clean(repo)


@pytest.mark.parametrize("choice", ["stricter", "ours"])
def test_different_relaxations_of_one_limit(tmp_path: Path, choice: str) -> None:
    """R3: which relaxation is in force is a choice; one branch relaxing twice is not."""
    repo = _new_repo(tmp_path / "repo")
    relax = [cmd.Relax(person="Pat", what="vec", limit=w, basis="profile") for w in (96, 128)]
    _branch(repo, "one", *relax)  # in sequence: no conflict on its own
    _branch(repo, "two", cmd.Relax(person="Pat", what="vec", limit=100, basis="profile"))
    _merge(repo, "one", "two")
    events = OpLedger(repo, OP).store.read().events
    ids = {e.data["limit"]: e.id[:12] for e in events if e.type == "limit.relaxed"}
    (conflict,) = _conflicts(repo)
    assert (conflict.kind, set(conflict.parties)) == ("limits-apart", {ids[128], ids[100]})
    (text,) = conflict_view.texts(OpLedger(repo, OP).load().state)
    assert text == "vec limit relaxed apart on merged branches: " + ", ".join(
        f"{next(k for k, v in ids.items() if v == r)} by {r}" for r in conflict.parties
    )
    _check_names(repo, conflict, text, ["stricter", *(f"limit:{r}" for r in conflict.parties)])
    _resolve_and_commit(repo, "stricter" if choice == "stricter" else f"limit:{ids[128]}")
    from stages.target import vec_limit

    assert vec_limit(OpLedger(repo, OP).load().state) == (100 if choice == "stricter" else 128)


def test_different_stages_entered(tmp_path: Path) -> None:
    """R4: stages only go forward; `keep` leaves the later stage current."""
    repo = _new_repo(tmp_path / "repo")
    _branch(
        repo,
        "ahead",
        cmd.ClosePoint(name="F-1", reason="done"),
        cmd.ExitStage(stage="frontend", reason="user", by_user=True),
        cmd.UnloadSkill(name="tune-frontend"),
        cmd.EnterStage(stage="swimlane"),
    )
    notes = [cmd.AddNote(text=f"reading {n}") for n in range(5)]
    _branch(repo, "behind", *notes, candidate(vec_tile_shape=vec(32)), "verify")
    _merge(repo, "ahead", "behind")
    _check_names(
        repo,
        Conflict("stages-apart", ("frontend", "swimlane")),
        "stages frontend and swimlane in progress on two branches",
        ["keep"],
    )
    _resolve_and_commit(repo, "keep")
    assert json.loads(tl(repo, "--json", "status", OP).stdout)["stage"] == "swimlane"


def test_rebase_of_finished_attempts_needs_no_step(tmp_path: Path) -> None:
    repo = _new_repo(tmp_path / "repo")
    _branch(repo, "feature", candidate(vec_tile_shape=vec(32)), "verify")
    OpLedger(repo, OP).execute(candidate(vec_tile_shape=vec(8)))
    _commit(repo, "feature: second attempt started")
    OpLedger(repo, OP).execute(verify(OpLedger(repo, OP).load().state.pending or "", 100.0))
    _commit(repo, "feature: second attempt verified")
    feature = git(repo, "rev-parse", "feature").stdout.strip()
    git(repo, "checkout", "-q", "main")
    _attempt_on(repo, "main-work", 16, 100.0)
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--ff-only", "main-work")
    git(repo, "checkout", "-q", "feature")
    git(repo, "rebase", "-q", "main")
    assert (repo / "custom" / OP / "events.jsonl").read_bytes() == merge.merge(
        b"", _blob(repo, "main"), _blob(repo, feature)
    ).data
    _clean_right_after(repo)
    for rev in ("HEAD~1", "HEAD~2"):  # every rebased commit, not only the tip
        git(repo, "checkout", "-q", rev)
        _clean_right_after(repo)


def test_cherry_pick_of_finished_attempts_needs_no_step(tmp_path: Path) -> None:
    repo = _new_repo(tmp_path / "repo")
    (picked,) = _branch(repo, "feature", candidate(vec_tile_shape=vec(32)), "verify")
    _attempt_on(repo, "other", 16, 100.0)
    git(repo, "cherry-pick", "feature")
    state = OpLedger(repo, OP).load().state
    assert state.attempts[picked].verdict == "no-gain" and state.pending is None
    _clean_right_after(repo)
    assert "events=" in (repo / MEMORY).read_text()


def test_three_branches_with_conflicts_merged_in_any_order_give_the_same_bytes(
    tmp_path: Path,
) -> None:
    """The ledger, MEMORY.md and what `check` says do not depend on the merge order, also
    when the branches relaxed one limit apart and adopted different bests."""
    repo = _new_repo(tmp_path / "repo")
    for name, width, limit, time_us in (
        ("a", 32, 96, 90.0),
        ("b", 16, 128, 80.0),
        ("c", 8, 96, 100.0),
    ):
        git(repo, "checkout", "-q", "-b", name, "main")
        ledger = OpLedger(repo, OP)
        ledger.execute(cmd.Relax(person="Pat", what="vec", limit=limit, basis=f"profile {name}"))
        attempt = ledger.execute(candidate(vec_tile_shape=vec(width))).events[0].id[:12]
        ledger.execute(verify(attempt, time_us))
        _commit(repo, f"{name}: relaxed, verified")
    results = []
    for order in (("a", "b", "c"), ("c", "a", "b"), ("b", "c", "a")):
        git(repo, "checkout", "-q", "-b", "into-" + "".join(order), order[0])
        for branch in order[1:]:
            git(repo, "merge", "-q", "--no-edit", branch)
        check = tl(repo, "check", "--all")
        assert check.returncode == 7
        results.append((_blob(repo, "HEAD"), _blob(repo, "HEAD", MEMORY), check.stdout))
    assert results[0] == results[1] == results[2]
    conflicts = _conflicts(repo)
    assert {c.kind for c in conflicts} == {"limits-apart", "bests"}, conflicts
    # Following what `check` names, one conflict at a time, ends in a clean check and audit.
    for _ in range(len(conflicts)):
        named = re.search(
            r"--conflict (\S+) .*RESOLUTION one of: ([^,\s]+)", tl(repo, "check", "--all").stdout
        )
        assert named is not None
        _must_pass(
            repo, "resolve", OP, "--conflict", named[1], "--resolution", named[2], "--reason", "r"
        )
    _clean(repo)
