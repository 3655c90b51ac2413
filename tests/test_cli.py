"""The command-line contract of DESIGN §5: every command, one JSON object, every exit code."""

from __future__ import annotations

import pytest
from cli_harness import MEASURE, OP, Cli, activate, frontend, new_op, pending, run_main, snapshot

from ledger.projections import status_view

# DESIGN §5's synopses: the names are fixed.
DESIGN_COMMANDS = [
    "init",
    "evidence compare",
    "evidence layout",
    "activate",
    "target",
    "relax",
    "skill load",
    "skill unload",
    "stage enter",
    "stage exit",
    "point open",
    "point close",
    "candidate",
    "try",
    "verify",
    "fail",
    "abandon",
    "stop",
    "status",
    "resume",
    "log",
    "report",
    "audit",
    "render",
    "check",
    "priors",
]

STATUS_KEYS = {
    "op",
    "activated",
    "target_sheet",
    "stage",
    "skills",
    "pending",
    "best",
    "target_us",
    "stopped",
    "points",
    "allowed",
}


def _name(args: list[str]) -> str:
    return " ".join(args[:2]) if args[0] in ("evidence", "skill", "stage", "point") else args[0]


def test_every_design_command_runs_and_prints_one_json_object(cli: Cli) -> None:
    """A whole campaign, frontend to algorithm stage, through every command of DESIGN §5."""
    attempt = pending(cli)
    measure = cli.script("measure.py", MEASURE)
    assert cli.ok("priors", OP)["op"] == OP
    first = cli.ok("verify", OP, attempt, "--run", f"{measure} 90")
    assert (first["verdict"], first["failure"], first["attempt"]) == ("adopt", None, attempt)
    cli.ok("try", OP, "--set", "vec_tile_shape=[1,8,1,16]")
    slower = cli.ok(
        "verify",
        OP,
        "pending",
        "--output",
        "y=true",
        "--layout-exit",
        "0",
        "--time",
        "0.095ms",
        "--time",
        "95us",
    )
    assert slower["verdict"] == "rollback"
    cli.ok("try", OP, "--set", "vec_tile_shape=[1,8,1,48]")
    assert cli.ok("fail", OP, "pending", "--category", "compile")["verdict"] == "rollback"
    abandoned = cli.ok("try", OP, "--set", "vec_tile_shape=[1,8,1,24]")["attempt"]
    assert cli.ok("abandon", OP, abandoned[:6], "--reason", "interrupted")["attempt"] == abandoned
    cli.ok("point", "close", OP, "F-1", "--reason", "mutations exhausted")
    assert cli.ok("stage", "exit", OP, "frontend")["condition"] == "points-closed"
    cli.ok("skill", "unload", OP, "tune-frontend")
    for stage, point in (("swimlane", "S-1"), ("incore", "I-1")):
        cli.ok("stage", "enter", OP, stage)
        cli.ok("point", "open", OP, point)
        cli.ok("point", "close", OP, point, "--reason", "no such loop", "--not-applicable")
        cli.ok("stage", "exit", OP, stage)
    assert cli.ok("report", OP)["path"] == f"custom/{OP}/{OP}_tuning_report.md"
    cli.ok("stage", "enter", OP, "algorithm")
    cli.ok("try", OP, "--algorithm", "fuse the two reductions")
    assert cli.ok("verify", OP, "pending", "--run", f"{measure} 80")["verdict"] == "adopt"
    cli.ok("relax", OP, "--what", "vec", "--limit", "128", "--basis", "profile of run 7",
           "--person", "Pat")  # fmt: skip
    assert cli.ok("status", OP)["stage"] == "algorithm"
    assert cli.ok("resume", OP)["pending_attempt"] is None
    assert len(cli.ok("log", OP)["attempts"]) == 5
    assert cli.ok("render", OP)["changed"] is False
    assert cli.ok("check", OP)["findings"] == []
    assert cli.ok("stop", OP, "--reason", "good enough")["stopped"] == "user"
    assert cli.ok("audit", OP)["clean"] is True
    invoked = {_name(args) for args in cli.invoked}
    assert set(DESIGN_COMMANDS) <= invoked, set(DESIGN_COMMANDS) - invoked


def test_state_changing_commands_report_their_events_and_rerender_memory(cli: Cli) -> None:
    """Each step prints the ids and types it appended, and MEMORY.md follows the ledger."""
    new_op(cli)
    memory = cli.root / "custom" / OP / "MEMORY.md"
    before = memory.read_bytes()
    out = cli.ok("evidence", "compare", OP, "--output", "y=true", "--max-diff", "y=1e-6")
    assert [e["type"] for e in out["events"]] == ["evidence.compare"]
    assert out["events"][0]["id"] == cli.events()[-1]["id"]
    assert memory.read_bytes() != before
    assert cli.ok("check", OP)["findings"] == []


def test_status_json_has_the_design_keys(cli: Cli) -> None:
    """`status --json` carries every key DESIGN §5 names, with best as {config, time_us}."""
    new_op(cli)
    fresh = cli.ok("status", OP)
    assert set(fresh) >= STATUS_KEYS
    assert (fresh["activated"], fresh["target_sheet"], fresh["best"], fresh["stopped"]) == (
        False,
        False,
        None,
        None,
    )
    # The protocol's next steps, then what works at any time (issue 28: allowed is complete).
    assert fresh["allowed"] == [
        "evidence compare", "evidence layout",
        "note", "policy", "report", "status", "resume", "log", "audit",
    ]  # fmt: skip
    attempt = pending(cli, "other")
    data = cli.ok("status", "other")
    assert data["activated"] is True and data["target_sheet"] is True
    assert data["stage"] == "frontend" and data["pending"] == attempt
    assert data["skills"] == ["pypto-op-perf-tune", "tune-frontend"]
    assert data["best"]["config"] == {"vec_tile_shape": [1, 8, 1, 64]}
    assert data["best"]["time_us"] == 100.0 and data["target_us"] == 50.0
    assert [p["name"] for p in data["points"]] == ["F-1"]
    assert "verify" in data["allowed"] and "candidate" not in data["allowed"]


@pytest.mark.parametrize("text", ["71.1us", "0.0711ms", "7.11e-5s", "0.0711", "71100ns", "71.1 µs"])
def test_times_accept_units_and_a_bare_number_is_ms(cli: Cli, text: str) -> None:
    """Every spelling of 71.1 µs gives baseline_us 71.1 (JSON times are in µs)."""
    activate(cli)
    out = cli.ok(
        "target",
        OP,
        "--baseline",
        text,
        "--shape",
        "[32, 32, 1, 256]",
        "--target",
        "35.55us",
        "--target-source",
        "spec",
    )
    assert out["baseline_us"] == pytest.approx(71.1)
    assert out["required_speedup"] == pytest.approx(2.0)


# --- exit codes ----------------------------------------------------------------------------------


def _assert_refusal(result_json: dict[str, object], code: int, rule: str | None) -> None:
    assert result_json["code"] == code
    assert result_json["rule"] == rule
    assert result_json["error"]
    assert result_json["next"], "a refusal says what to do next"


def test_exit_3_names_the_rule_the_blocking_fact_and_the_next_step(cli: Cli) -> None:
    """Entering swimlane before frontend is refused by R4 and writes nothing."""
    frontend(cli)
    before = snapshot(cli.root)
    result = cli("stage", "enter", OP, "swimlane")
    assert result.code == 3
    refusal = result.json
    _assert_refusal(refusal, 3, "R4")
    assert refusal["blocking"] and refusal["kind"] == "rule"
    assert "point open" not in refusal["allowed"] and "stop" in refusal["allowed"]
    assert snapshot(cli.root) == before


def test_exit_3_in_human_form_goes_to_stderr_with_the_rule_first(cli: Cli) -> None:
    """Without --json a refusal prints nothing on stdout; stderr starts with the rule."""
    new_op(cli)
    result = cli("skill", "load", OP, "perf-analyzer", as_json=False)
    assert result.code == 3
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines[0].startswith("R1: ")
    assert any(line.strip().startswith("blocked by:") for line in lines)
    assert any(line.strip().startswith("next:") for line in lines)
    assert "Traceback" not in result.stderr


def test_exit_4_names_the_earlier_attempt_and_its_outcome(cli: Cli) -> None:
    """Measuring a config again is refused by R9, naming the attempt that measured it."""
    attempt = pending(cli)
    cli.ok("verify", OP, attempt, "--output", "y=true", "--layout-exit", "0", "--time", "90us")
    before = snapshot(cli.root)
    result = cli("candidate", OP, "--config", '{"vec_tile_shape":[1,8,1,32]}', "--prior", "x")
    assert result.code == 4
    _assert_refusal(result.json, 4, "R9")
    assert attempt in result.json["error"] and "adopt" in result.json["error"]
    assert snapshot(cli.root) == before
    again = cli(
        "candidate",
        OP,
        "--config",
        '{"vec_tile_shape":[1,8,1,32]}',
        "--prior",
        "x",
        "--override-retry",
        "host was noisy",
    )
    assert again.code == 0


def test_exit_5_records_the_failed_check_and_hands_back(cli: Cli) -> None:
    """A failing activation appends ActivationFailed, exits 5 and says to hand back."""
    new_op(cli)
    cli.ok("evidence", "compare", OP, "--output", "y=false", "--output", "z=true")
    cli.ok("evidence", "layout", OP, "--exit-code", "0")
    result = cli("activate", OP)
    assert result.code == 5
    _assert_refusal(result.json, 5, "R1")
    assert "y" in result.json["blocking"] and "orchestrator" in result.json["next"]
    assert cli.types()[-1] == "activation.failed"
    assert cli.events()[-1]["payload"]["problems"] == ["outputs not all_close: y"]
    status = cli.ok("status", OP)
    assert status["activation_handed_back"] is True and status["activated"] is False
    human = cli("activate", OP, as_json=False)
    assert human.code == 5 and human.stderr.startswith("R1: activation failed")


def test_exit_6_after_stop_refuses_tuning_steps_but_views_still_work(cli: Cli) -> None:
    """After `stop`, steps exit 6 and write nothing; status, log, report, audit exit 0."""
    pending(cli)
    cli.ok("stop", OP, "--reason", "the user has what they need")
    before = snapshot(cli.root)
    for args in (
        ["try", OP, "--set", "vec_tile_shape=[1,8,1,16]"],
        ["candidate", OP, "--config", "{}", "--prior", "p"],
        ["verify", OP, "pending", "--output", "y=true", "--layout-exit", "0", "--time", "1"],
        ["stage", "enter", OP, "swimlane"],
        ["skill", "load", OP, "perf-analyzer"],
        ["point", "open", OP, "F-2"],
    ):
        result = cli(*args)
        assert result.code == 6, (args, result)
        _assert_refusal(result.json, 6, "R10")
    assert snapshot(cli.root) == before
    assert cli.ok("status", OP)["stopped"] == "user"
    # After a stop `allowed` lists what still works (issue 28.4).
    assert cli.ok("status", OP)["allowed"] == ["report", "note", "policy", "status", "log", "audit"]
    cli.ok("log", OP)
    cli.ok("resume", OP)
    cli.ok("report", OP)
    assert cli.ok("audit", OP)["clean"] is True


def test_exit_7_for_a_damaged_ledger_names_file_and_line(cli: Cli) -> None:
    """A byte changed in the middle of the ledger: every command exits 7 naming path:line."""
    activate(cli)
    path = cli.ledger()
    lines = path.read_bytes().split(b"\n")
    lines[2] = lines[2].replace(b'"y"', b'"Y"', 1)
    path.write_bytes(b"\n".join(lines))
    before = snapshot(cli.root)
    for args in (["status", OP], ["note", OP, "--text", "hi"], ["audit", OP]):
        result = cli(*args)
        assert result.code == 7, (args, result)
        assert "events.jsonl:3" in result.json["error"]
        assert result.json["code"] == 7
    human = cli("status", OP, as_json=False)
    assert human.code == 7 and "events.jsonl:3" in human.stderr.splitlines()[0]
    assert snapshot(cli.root) == before


def test_exit_1_for_a_bug_is_one_line_without_traceback(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unexpected exception becomes exit 1 with its cause, never a traceback."""
    new_op(cli)

    def broken(_state: object) -> dict[str, object]:
        raise RuntimeError("status view exploded")

    monkeypatch.setattr(status_view, "status", broken)
    result = cli("status", OP)
    assert result.code == 1
    assert "RuntimeError: status view exploded" in result.json["error"]
    human = cli("status", OP, as_json=False)
    assert human.code == 1
    assert human.stderr.splitlines()[0] == (
        "unexpected error (a bug): RuntimeError: status view exploded"
    )
    assert "Traceback" not in human.stderr + human.stdout


def test_exit_2_for_click_usage_errors_is_one_json_object(cli: Cli) -> None:
    """Unknown commands and options are exit 2 with the usual JSON error object."""
    for args in (["frobnicate"], ["status"], ["status", OP, "--bogus"], []):
        result = cli(*args)
        assert result.code == 2, (args, result)
        assert result.json["code"] == 2 and result.json["error"]


def test_a_global_option_after_the_command_is_explained(cli: Cli) -> None:
    """`status OP --json` is a usage error whose hint says where global options go."""
    new_op(cli)
    result = run_main(["--root", str(cli.root), "status", OP, "--json"])
    assert result.code == 2
    assert "before the command" in result.json["next"]


def test_root_comes_from_the_environment(cli: Cli) -> None:
    """TUNE_LEDGER_ROOT stands for --root."""
    new_op(cli)
    result = run_main(["--json", "status", OP], env={"TUNE_LEDGER_ROOT": str(cli.root)})
    assert result.code == 0 and result.json["op"] == OP


def test_human_output_is_readable_text_on_stdout(cli: Cli) -> None:
    """Without --json, results are short sentences on stdout, not JSON."""
    attempt = pending(cli)
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
        as_json=False,
    )
    assert result.code == 0 and result.stderr == ""
    assert result.stdout.startswith(
        f"attempt {attempt}: adopt, 90.00 µs vs best before 100.00 µs; best now 90.00 µs"
    )
    status = cli("status", OP, as_json=False)
    assert "allowed next:" in status.stdout and not status.stdout.startswith("{")
    log = cli("log", OP, as_json=False).stdout
    assert attempt in log and "adopt" in log
