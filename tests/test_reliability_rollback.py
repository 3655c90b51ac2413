"""A ledger rolled back or truncated behind MEMORY.md's back is refused for writing (issue 20,
item 3): exit 7 naming both last events, nothing written, until `accept-rollback`; reads warn."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from cli_harness import OP, Cli, new_op, pending, snapshot

from ledger.projections import memory_file


def _memory(cli: Cli) -> Path:
    return cli.root / "custom" / OP / "MEMORY.md"


def _recorded_last(cli: Cli) -> str:
    found = memory_file.recorded_position(_memory(cli).read_text("utf-8"))
    assert found is not None
    return found[1].last


def _rolled_back(cli: Cli) -> tuple[str, str]:
    """A failed candidate recorded, then the ledger replaced by its copy from before the
    failure; returns (MEMORY.md's last event, the older ledger's last event)."""
    attempt = pending(cli)
    older = cli.ledger().read_bytes()
    cli.ok("fail", OP, attempt, "--category", "compile", "--detail", "tile too large")
    newer_last = cli.events()[-1]["id"]
    assert _recorded_last(cli) == newer_last
    cli.ledger().write_bytes(older)
    return newer_last, cli.events()[-1]["id"]


def test_a_rolled_back_ledger_is_refused_for_writing_naming_both_events(cli: Cli) -> None:
    """`note` after the ledger was replaced by an older copy: exit 7, no byte written."""
    memory_last, ledger_last = _rolled_back(cli)
    before = snapshot(cli.root)

    refused = cli("note", OP, "--text", "would erase the trace")

    assert refused.code == 7
    error = refused.json
    assert error["kind"] == "damaged"
    assert memory_last in error["error"] and ledger_last in error["error"]
    assert (error["memory_last"], error["ledger_last"]) == (memory_last, ledger_last)
    assert f"tune-ledger accept-rollback {OP} --person NAME --reason" in error["next"]
    assert snapshot(cli.root) == before


def test_a_retry_of_the_lost_failure_is_refused_not_measured_again(cli: Cli) -> None:
    """The failed candidate vanished with the rollback: trying it again is exit 7, not exit 0."""
    _rolled_back(cli)
    before = snapshot(cli.root)
    for args in (
        ("abandon", OP, "pending", "--reason", "x"),
        ("render", OP),
        ("report", OP),
    ):
        assert cli(*args).code == 7, args
    human = cli("note", OP, "--text", "x", as_json=False)
    assert human.code == 7 and "rolled back or truncated" in human.stderr
    assert snapshot(cli.root) == before


def test_a_truncated_ledger_is_a_rollback_too(cli: Cli) -> None:
    """Lines cut off the end at a line boundary (no torn tail to quarantine): exit 7."""
    new_op(cli)
    for text in ("one", "two", "three"):
        cli.ok("note", OP, "--text", text)
    lines = cli.ledger().read_bytes().splitlines(keepends=True)
    cli.ledger().write_bytes(b"".join(lines[:-2]))
    before = snapshot(cli.root)
    assert cli("policy", OP, "noise_threshold", "0.02", "--reason", "x").code == 7
    assert snapshot(cli.root) == before


def test_reads_keep_working_and_status_warns_every_time(cli: Cli) -> None:
    """status, resume and log exit 0 and warn (not served from a cache that would hide it)."""
    memory_last, ledger_last = _rolled_back(cli)
    before = snapshot(cli.root)
    for _ in range(2):
        status = cli.ok("status", OP)
        (warning,) = [w for w in status["warnings"] if "rolled back" in w]
        assert memory_last in warning and ledger_last in warning
        assert f"accept-rollback {OP}" in warning
    assert any("rolled back" in w for w in cli.ok("resume", OP)["warnings"])
    assert any("rolled back" in w for w in cli.ok("log", OP)["warnings"])
    human = cli("status", OP, as_json=False)
    assert human.code == 0 and "warning:" in human.stderr and memory_last in human.stderr
    # audit and check read too: they name the rollback first (exit 7) and write nothing.
    for command in ("audit", "check"):
        result = cli(command, OP)
        assert result.code == 7 and "rolled back or truncated" in result.json["error"]
        assert memory_last in result.json["error"]
    assert snapshot(cli.root) == before


def test_accept_rollback_records_the_loss_and_writing_works_again(cli: Cli) -> None:
    """accept-rollback appends one event naming the lost event and its reason, re-renders
    MEMORY.md from the ledger, and the next command writes; audit is clean."""
    memory_last, _ledger_last = _rolled_back(cli)
    older = cli.ledger().read_bytes()
    found = memory_file.recorded_position(_memory(cli).read_text("utf-8"))
    assert found is not None and found[1].events > len(older.splitlines())

    # A person's decision (issue 27): refused without a name, nothing written.
    before = snapshot(cli.root)
    unsigned = cli("accept-rollback", OP, "--reason", "restored the reviewed copy")
    assert unsigned.code == 3 and unsigned.json["rule"] == "rollback"
    assert unsigned.json["next"].endswith(
        f"tune-ledger accept-rollback {OP} --person NAME --reason TEXT"
    )
    assert snapshot(cli.root) == before
    accepted = cli.ok(
        "accept-rollback", OP, "--reason", "restored the reviewed copy", "--person", "Ada"
    )

    assert accepted["missing"] == memory_last
    after = cli.ledger().read_bytes()
    assert after.startswith(older)
    (event,) = cli.events()[len(older.splitlines()) :]
    assert event["type"] == "ledger.rollback_accepted"
    assert event["payload"] == {
        "events": found[1].events,
        "missing": memory_last,
        "person": "Ada",
        "reason": "restored the reviewed copy",
    }
    assert _recorded_last(cli) == event["id"]
    assert not any("rolled back" in w for w in cli.ok("status", OP)["warnings"])
    cli.ok("note", OP, "--text", "writing again")
    assert cli.ok("audit", OP)["clean"] is True


def test_accept_rollback_without_a_rollback_is_bad_input(cli: Cli) -> None:
    """Nothing to accept: exit 2, nothing written."""
    new_op(cli)
    before = snapshot(cli.root)
    refused = cli("accept-rollback", OP, "--reason", "just because")
    assert refused.code == 2 and "no rollback to accept" in refused.json["error"]
    assert snapshot(cli.root) == before


def test_accept_rollback_retried_with_its_key_returns_the_original(cli: Cli) -> None:
    """The same idempotency key after success: the original event, nothing appended again."""
    _rolled_back(cli)
    first = cli.ok("accept-rollback", OP, "--reason", "intended", "--person", "Ada", key="k1")
    size = cli.ledger().stat().st_size
    again = cli.ok("accept-rollback", OP, "--reason", "intended", "--person", "Ada", key="k1")
    assert again["replayed"] is True and again["events"] == first["events"]
    assert cli.ledger().stat().st_size == size


def test_an_acceptance_whose_rendering_failed_still_lets_commands_write(cli: Cli) -> None:
    """MEMORY.md not re-rendered after the acceptance (here: restored to its rolled-back
    header): the recorded acceptance covers that event, so writing is not refused again."""
    _rolled_back(cli)
    stale_memory = _memory(cli).read_bytes()
    cli.ok("accept-rollback", OP, "--reason", "intended", "--person", "Ada")
    _memory(cli).write_bytes(stale_memory)
    cli.ok("note", OP, "--text", "writes")


def test_a_stale_but_consistent_memory_md_is_not_a_rollback(cli: Cli) -> None:
    """MEMORY.md older than the ledger (its last event still in it): writing goes on."""
    new_op(cli)
    older_memory = _memory(cli).read_bytes()
    cli.ok("note", OP, "--text", "one")
    _memory(cli).write_bytes(older_memory)
    assert cli("check", OP).code == 7  # stale, as before: check reports it
    cli.ok("note", OP, "--text", "two")
    assert not any("rolled back" in w for w in cli.ok("status", OP)["warnings"])
    assert cli.ok("check", OP)["findings"] == []


def test_a_memory_md_of_another_op_is_no_evidence(cli: Cli) -> None:
    """A MEMORY.md copied from another op names events of another ledger: not a rollback."""
    new_op(cli)
    new_op(cli, "other")
    cli.ok("note", "other", "--text", "only in other")
    shutil.copyfile(cli.root / "custom" / "other" / "MEMORY.md", _memory(cli))
    cli.ok("note", OP, "--text", "writes")


def _git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=True
    )
    return done.stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_checkout_of_an_older_commit_is_not_a_rollback(cli: Cli) -> None:
    """An older commit checks out MEMORY.md with its ledger: they agree, writing goes on."""
    _git(cli.root, "init", "-q")
    pending(cli)
    _git(cli.root, "add", "-A")
    _git(cli.root, "commit", "-q", "-m", "pending")
    cli.ok("fail", OP, "pending", "--category", "compile", "--detail", "tile too large")
    _git(cli.root, "commit", "-q", "-am", "failed")
    _git(cli.root, "checkout", "-q", "HEAD~1")

    cli.ok("note", OP, "--text", "on the older commit")
    assert not any("rolled back" in w for w in cli.ok("status", OP)["warnings"])

    # Checking out only the ledger leaves MEMORY.md newer than it: that is a rollback.
    _git(cli.root, "checkout", "-q", "-f", "master" if _has(cli.root, "master") else "main")
    _git(cli.root, "checkout", "-q", "HEAD~1", "--", f"custom/{OP}/events.jsonl")
    assert cli("note", OP, "--text", "refused").code == 7


def _has(repo: Path, branch: str) -> bool:
    return bool(_git(repo, "branch", "--list", branch).strip())
