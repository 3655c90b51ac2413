"""Measurements through the CLI (--run, --from-json, --perf-dir, provenance), evidence runs,
activation hand-back, and retry-safe idempotency keys."""

from __future__ import annotations

import json

from cli_harness import MEASURE, OP, Cli, activate, frontend, new_op, pending, snapshot


def _last(cli: Cli, type_name: str) -> dict[str, object]:
    record = next(r for r in reversed(cli.events()) if r["type"] == type_name)
    payload: dict[str, object] = record["payload"]
    return payload


# --- verify: where the measurement comes from -----------------------------------------------


def test_verify_run_records_a_ran_provenance(cli: Cli) -> None:
    """--run: the ledger runs the verifier, parses its last JSON line, records exit code."""
    attempt = pending(cli)
    measure = cli.script("measure.py", MEASURE)
    out = cli.ok("verify", OP, attempt, "--run", f"{measure} 90")
    # The best it was compared with, and the best after the verdict (issue 28.4).
    assert (out["verdict"], out["time_us"], out["best_before_us"], out["best_us"]) == (
        "adopt", 90.0, 100.0, 90.0,
    )  # fmt: skip
    measured = _last(cli, "attempt.measured")
    origin = measured["origin"]
    assert isinstance(origin, dict)
    assert origin["level"] == "ran" and origin["exit_code"] == 0
    # Recorded portable (issue 27.7): the interpreter and the root as placeholders.
    assert origin["command"] == "{python} {root}/measure.py 90" and origin["tool"] == "fake-sim"
    assert len(str(origin["output_digest"])) == 64
    assert measured["times_us"] == [90.0, 90.0, 90.0]
    assert (measured["util_pct"], measured["bubble_pct"]) == (50.0, 20.0)


def test_verify_run_that_reports_a_wrong_output_is_an_accuracy_failure(cli: Cli) -> None:
    """An output not all_close gives failure accuracy and verdict rollback (R8)."""
    attempt = pending(cli)
    measure = cli.script("measure.py", MEASURE)
    out = cli.ok("verify", OP, attempt, "--run", f"{measure} 50 bad")
    assert (out["verdict"], out["failure"]) == ("rollback", "accuracy")


def test_verify_from_json_and_perf_dir_record_an_artefact_provenance(cli: Cli) -> None:
    """--from-json FILE and --perf-dir DIR (DIR/measurement.json) record the file's digest."""
    attempt = pending(cli)
    doc = {
        "times_us": [95.0, 96.0, 94.0],
        "layout_exit": 0,
        "tool": "pypto-sim",
        "outputs": [{"name": "y", "all_close": True, "max_diff": 1e-6}],
    }
    (cli.root / "m.json").write_text(json.dumps(doc), "utf-8")
    out = cli.ok("verify", OP, attempt, "--from-json", str(cli.root / "m.json"))
    assert out["verdict"] == "adopt" and out["time_us"] == 95.0
    origin = _last(cli, "attempt.measured")["origin"]
    assert isinstance(origin, dict)
    assert origin["level"] == "artefact" and origin["command"].endswith("m.json")
    cli.ok("try", OP, "--set", "vec_tile_shape=[1,8,1,16]")
    perf = cli.root / "perf" / "run-1"
    perf.mkdir(parents=True)
    (perf / "measurement.json").write_text(json.dumps({**doc, "times_us": [80.0]}), "utf-8")
    out = cli.ok("verify", OP, "pending", "--perf-dir", str(perf))
    assert out["verdict"] == "adopt" and out["time_us"] == 80.0
    origin = _last(cli, "attempt.measured")["origin"]
    assert isinstance(origin, dict)
    assert origin["level"] == "artefact"
    assert str(origin["command"]).endswith("run-1/measurement.json")


def test_audit_summarizes_measured_artefact_and_reported_provenance(cli: Cli) -> None:
    """Audit counts each measurement and evidence by provenance level (R11)."""
    attempt = pending(cli)  # evidence and target sheet typed in: 3 reported
    measure = cli.script("measure.py", MEASURE)
    cli.ok("verify", OP, attempt, "--run", f"{measure} 90")
    cli.ok("try", OP, "--set", "vec_tile_shape=[1,8,1,16]")
    (cli.root / "m.json").write_text(
        json.dumps(
            {"times_us": [95.0], "layout_exit": 0, "outputs": [{"name": "y", "all_close": True}]}
        ),
        "utf-8",
    )
    cli.ok("verify", OP, "pending", "--from-json", str(cli.root / "m.json"))
    audit = cli.ok("audit", OP)["ops"][0]
    assert audit["provenance"] == {
        "measured": 0,
        "unbound": 0,
        "ran": 1,
        "artefact": 1,
        "reported": 3,
    }
    human = cli("audit", OP, as_json=False)
    assert human.code == 0
    assert "artefact 1, measured 0, ran 1, reported 3" in human.stdout


def test_verify_run_without_json_records_a_runtime_failure(cli: Cli) -> None:
    """A verifier that crashes without a result: failure runtime, with its exit code."""
    attempt = pending(cli)
    crash = cli.script("crash.py", "import sys\nprint('Segmentation fault')\nsys.exit(139)\n")
    out = cli.ok("verify", OP, attempt, "--run", crash)
    assert (out["verdict"], out["failure"]) == ("rollback", "runtime")
    failed = _last(cli, "attempt.failed")
    assert failed["category"] == "runtime"
    assert "exit 139" in str(failed["detail"]) and "Segmentation fault" in str(failed["detail"])
    origin = failed["origin"]
    assert isinstance(origin, dict) and origin["exit_code"] == 139
    assert origin["level"] == "ran"


def test_verify_run_past_its_timeout_records_a_timeout_failure(cli: Cli) -> None:
    """--timeout: a verifier still running after the limit fails with category timeout."""
    attempt = pending(cli)
    slow = cli.script("slow.py", "import time\ntime.sleep(30)\n")
    out = cli.ok("verify", OP, attempt, "--run", slow, "--timeout", "0.5")
    assert (out["verdict"], out["failure"]) == ("rollback", "timeout")
    assert _last(cli, "attempt.failed")["detail"] == "no result within 0.5 s"
    assert cli.ok("status", OP)["pending"] is None


def test_verify_run_that_reports_a_compile_failure_records_it(cli: Cli) -> None:
    """A measurement document with `failure: compile` becomes that failure."""
    attempt = pending(cli)
    compile_error = cli.script(
        "compile.py",
        """
        import json
        print(json.dumps({"failure": {"category": "compile", "detail": "tile too big"}}))
        raise SystemExit(3)
    """,
    )
    out = cli.ok("verify", OP, attempt, "--run", compile_error)
    assert (out["verdict"], out["failure"]) == ("rollback", "compile")
    assert _last(cli, "attempt.failed")["detail"] == "tile too big"


# --- evidence and activation ----------------------------------------------------------------


def test_evidence_layout_run_records_the_real_exit_code(cli: Cli) -> None:
    """evidence layout --run records the command's own exit code and a measured origin."""
    new_op(cli)
    check = cli.script("layout.py", "import sys\nprint('stride mismatch')\nsys.exit(3)\n")
    out = cli.ok("evidence", "layout", OP, "--run", check)
    assert out["exit_code"] == 3 and out["passed"] is False
    layout = _last(cli, "evidence.layout")
    origin = layout["origin"]
    assert layout["exit_code"] == 3
    assert isinstance(origin, dict) and (origin["level"], origin["exit_code"]) == ("ran", 3)


def test_evidence_compare_run_reads_outputs_and_binds_the_implementation(cli: Cli) -> None:
    """evidence compare --run: outputs from the JSON the command prints, impl digest recorded."""
    new_op(cli)
    compare = cli.script(
        "compare.py",
        """
        import json
        print(json.dumps({"outputs": [{"name": "y", "all_close": True, "max_diff": 0.0},
                                      {"name": "amax", "all_close": False, "max_diff": 0.5}]}))
    """,
    )
    out = cli.ok("evidence", "compare", OP, "--run", compare)
    assert out["passed"] is False
    evidence = _last(cli, "evidence.compare")
    assert sorted(o["name"] for o in evidence["outputs"]) == ["amax", "y"]  # type: ignore[attr-defined]
    assert evidence["impl_digest"] == out["impl_digest"]


def test_failed_activation_exits_5_then_passes_after_new_evidence(cli: Cli) -> None:
    """Layout exit 3 -> activate exits 5 with ActivationFailed; passing evidence activates."""
    new_op(cli)
    cli.ok("evidence", "compare", OP, "--output", "y=true")
    failing = cli.script("layout.py", "raise SystemExit(3)\n")
    cli.ok("evidence", "layout", OP, "--run", failing)
    result = cli("activate", OP)
    assert result.code == 5
    assert result.json["rule"] == "R1" and "exited 3" in result.json["blocking"]
    assert "hand back" in result.json["next"]
    assert cli.types()[-1] == "activation.failed"
    memory = (cli.root / "custom" / OP / "MEMORY.md").read_text("utf-8")
    assert "failed" in memory.lower()
    refused = cli("skill", "load", OP, "perf-analyzer")
    assert refused.code == 3 and refused.json["rule"] == "R1"
    cli.ok("evidence", "layout", OP, "--run", "true")
    assert cli.ok("activate", OP)["activated"] is True


def test_evidence_for_an_older_implementation_does_not_activate(cli: Cli) -> None:
    """Changing the implementation after the evidence makes it stale (R1): exit 5."""
    new_op(cli)
    cli.ok("evidence", "compare", OP, "--output", "y=true")
    cli.ok("evidence", "layout", OP, "--exit-code", "0")
    (cli.root / "custom" / OP / f"{OP}_impl.py").write_text("def kernel(x):\n    return -x\n")
    result = cli("activate", OP)
    assert result.code == 5 and "stale" in result.json["blocking"]


# --- idempotency keys -----------------------------------------------------------------------


def test_a_retried_key_returns_the_original_result_and_appends_nothing(cli: Cli) -> None:
    """Same key, same arguments: the original output (replayed) and not one byte more."""
    activate(cli)
    args = [
        "target",
        OP,
        "--baseline",
        "100us",
        "--shape",
        "[32, 32, 1, 256]",
        "--target",
        "50us",
        "--target-source",
        "spec",
    ]
    first = cli.ok(*args, key="agent-42")
    before = snapshot(cli.root)
    again = cli.ok(*args, key="agent-42")
    assert snapshot(cli.root) == before
    assert again["replayed"] is True and first["replayed"] is False
    assert {k: v for k, v in again.items() if k != "replayed"} == {
        k: v for k, v in first.items() if k != "replayed"
    }


def test_the_same_key_with_other_arguments_exits_2(cli: Cli) -> None:
    """Same key, different arguments (or another command): refused, nothing written."""
    attempt = pending(cli)
    cli.ok("note", OP, "--text", "first", key="k1")
    before = snapshot(cli.root)
    for args in (["note", OP, "--text", "second"], ["abandon", OP, attempt, "--reason", "x"]):
        result = cli(*args, key="k1")
        assert result.code == 2
        assert "idempotency key 'k1'" in result.json["error"]
    assert snapshot(cli.root) == before


def test_a_retried_verify_run_does_not_run_the_verifier_again(cli: Cli) -> None:
    """The key is matched before --run: the verifier ran once, the verdict is the original."""
    attempt = pending(cli)
    counter = cli.root / "runs.txt"
    verifier = cli.script(
        "counting.py",
        f"""
        import json
        with open({str(counter)!r}, "a") as runs:
            runs.write("run\\n")
        print(json.dumps({{"times_us": [90.0], "layout_exit": 0,
                          "outputs": [{{"name": "y", "all_close": True}}]}}))
    """,
    )
    first = cli.ok("verify", OP, "pending", "--run", verifier, key="verify-1")
    before = snapshot(cli.root)
    again = cli.ok("verify", OP, "pending", "--run", verifier, key="verify-1")
    assert snapshot(cli.root) == before
    assert counter.read_text().count("run") == 1
    assert (again["verdict"], again["attempt"], again["replayed"]) == ("adopt", attempt, True)
    assert again["events"] == first["events"]


def test_a_retried_candidate_returns_the_same_attempt(cli: Cli) -> None:
    """A candidate retried after a timeout gets its attempt id back, not an R6 refusal."""
    frontend(cli)
    new = cli.ok("candidate", OP, "--config", "{}", "--prior", "p", key="c1")
    again = cli.ok("candidate", OP, "--config", "{}", "--prior", "p", key="c1")
    assert again["attempt"] == new["attempt"] and again["replayed"] is True


def test_a_retried_failed_activation_hands_back_again_without_appending(cli: Cli) -> None:
    """A hand-back is the original result of its key: exit 5 again, no second event."""
    new_op(cli)
    cli.ok("evidence", "compare", OP, "--output", "y=false")
    cli.ok("evidence", "layout", OP, "--exit-code", "0")
    assert cli("activate", OP, key="act-1").code == 5
    before = snapshot(cli.root)
    again = cli("activate", OP, key="act-1")
    assert again.code == 5 and again.json["rule"] == "R1" and again.json["replayed"] is True
    assert snapshot(cli.root) == before
    assert cli.types().count("activation.failed") == 1


def test_a_retried_report_does_not_rewrite_or_append(cli: Cli) -> None:
    """`report` with a seen key returns the original path and digest."""
    new_op(cli)
    first = cli.ok("report", OP, key="r1")
    before = snapshot(cli.root)
    again = cli.ok("report", OP, key="r1")
    assert snapshot(cli.root) == before
    assert (again["path"], again["digest"], again["chart"]) == (
        first["path"],
        first["digest"],
        first["chart"],
    )


def test_init_with_a_key_is_retry_safe(cli: Cli) -> None:
    """`init` retried with its key does not fail with "already has a ledger"."""
    (cli.root / "custom").mkdir()
    first = cli.ok("init", OP, key="init-1")
    again = cli.ok("init", OP, key="init-1")
    assert again["replayed"] is True and again["events"] == first["events"]
