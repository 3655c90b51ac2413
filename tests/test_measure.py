"""`tune-ledger measure`: the ledger runs the manifest's verifier and records what it measured.

Each test is "given these events and this verifier, this command yields these events / is
refused with nothing written" (R8, R11), through the CLI.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import sys
import textwrap

import pytest
from cli_harness import OP, Cli, activate, pending, snapshot

# A fake verifier: measures nothing, but behaves as the manifest's contract says. What it does
# is chosen by its first argument; it names the config it ran and the kernel's digest.
VERIFIER = """
    import hashlib, json, pathlib, sys, time
    mode, op_dir, config = sys.argv[1], pathlib.Path(sys.argv[2]), json.loads(sys.argv[3])
    digest = hashlib.sha256((op_dir / "sm_impl.py").read_bytes()).hexdigest()
    doc = {"config": config, "impl_digest": digest, "tool": "fake-sim", "tool_version": "1",
           "times_us": [60.0], "layout_exit": 0,
           "outputs": [{"name": "y", "all_close": True, "max_diff": 0.0}]}
    # The baseline config (the manifest's, also the knobs' default) is the slower one.
    doc["times_us"] = [80.0 if config.get("vec_tile_shape", [1, 8, 1, 64]) == [1, 8, 1, 64]
                       else 60.0]
    if mode == "lie":  # runs a neighbour of the config it was given
        doc["config"] = {**config, "vec_tile_shape": [1, 16, 1, 64]}
    if mode == "other-kernel":
        doc["impl_digest"] = "0" * 64
    if mode == "silent":  # names neither what it ran nor the kernel
        del doc["config"], doc["impl_digest"]
    if mode == "usage":
        print("usage: verifier MODE OP_DIR CONFIG", file=sys.stderr)
        sys.exit(2)
    if mode == "crash":
        raise RuntimeError("a bug in the verifier")
    if mode == "compile":
        doc.update(times_us=[], failure={"category": "compile", "detail": "UB overflow"})
    if mode == "sleep":
        time.sleep(30)
    if mode == "error":
        doc = {"error": "unknown knob stitch"}
    print("log line before the result")
    print(json.dumps(doc))
"""


def _manifest(cli: Cli, mode: str, *, timeout_s: float = 60, program: str | None = None) -> None:
    script = cli.root / "verifier.py"
    script.write_text(textwrap.dedent(VERIFIER), "utf-8")
    command = [program or sys.executable, str(script), mode, "{op_dir}", "{config}"]
    (cli.root / "custom" / OP / "SPEC.md").write_text(
        "---\n"
        "p0_shapes: [[32, 32, 1, 256]]\n"
        "perf_target: {time_us: 50.0, metric: max_work_time_us}\n"
        "baseline_config: {vec_tile_shape: [1, 8, 1, 64]}\n"
        "knobs:\n"
        "  vec_tile_shape: {stage: frontend, kind: tile, default: [1, 8, 1, 64]}\n"
        f"verifier: {{command: {json.dumps(command)}, timeout_s: {timeout_s}}}\n"
        "---\n# sm\n",
        "utf-8",
    )


@pytest.fixture
def attempt(cli: Cli) -> str:
    """An op in frontend with one candidate, `vec_tile_shape [1,8,1,32]`, pending (its
    target sheet typed by hand: a reported baseline)."""
    return pending(cli)


@pytest.fixture
def measured_attempt(cli: Cli) -> str:
    """The same, with the target sheet from SPEC.md and its baseline measured by the ledger."""
    activate(cli)
    _manifest(cli, "ok")
    cli.ok("target", OP, "--from-spec")
    cli.ok("skill", "load", OP, "pypto-op-perf-tune")
    cli.ok("stage", "enter", OP, "frontend")
    cli.ok("skill", "load", OP, "tune-frontend")
    cli.ok("point", "open", OP, "vec_tile_shape")
    started = cli.ok(
        "candidate", OP, "--config", '{"vec_tile_shape":[1,8,1,32]}', "--prior", "kernels/x.py:1"
    )
    return str(started["attempt"])


def test_dry_run_prints_the_exact_command_and_writes_nothing(cli: Cli, attempt: str) -> None:
    """The config is one argument, canonical JSON, quoted by the ledger."""
    _manifest(cli, "ok")
    before = snapshot(cli.root)
    shown = cli.ok("measure", OP, "--dry-run")
    assert shown["attempt"] == attempt
    assert shown["argv"][-1] == '{"vec_tile_shape":[1,8,1,32]}'
    assert shlex.split(shown["command"]) == shown["argv"]
    assert shown["argv"][-2] == str(cli.root / "custom" / OP)
    assert snapshot(cli.root) == before


def test_a_measurement_is_recorded_as_measured(cli: Cli, measured_attempt: str) -> None:
    """The verifier's result gets the ledger's verdict, with the command and its exit code."""
    _manifest(cli, "ok")
    result = cli.ok("measure", OP)
    assert result["attempt"] == measured_attempt
    assert result["verdict"] == "adopt"
    measured = next(e for e in cli.events() if e["type"] == "attempt.measured")
    origin = measured["payload"]["origin"]
    assert origin["level"] == "measured" and origin["exit_code"] == 0
    assert origin["tool"] == "fake-sim"
    assert json.loads(shlex.split(origin["command"])[-1]) == {"vec_tile_shape": [1, 8, 1, 32]}


@pytest.mark.parametrize(
    ("mode", "program", "cause"),
    [
        ("ok", "/nonexistent/python", "was not found"),
        ("usage", None, "refused its arguments (exit 2"),
        ("crash", None, "failed (exit 1) and printed no result"),
        ("error", None, "reported an error: unknown knob stitch"),
    ],
)
def test_a_harness_error_writes_nothing_and_keeps_the_attempt_pending(
    cli: Cli, attempt: str, mode: str, program: str | None, cause: str
) -> None:
    """A verifier that cannot do its job is not a failed idea: exit 2, nothing written."""
    _manifest(cli, mode, program=program)
    before = snapshot(cli.root)
    refused = cli("measure", OP)
    assert refused.code == 2, refused.stdout
    assert refused.json["rule"] == "R11"
    assert "harness error" in refused.json["error"] and cause in refused.json["error"]
    assert snapshot(cli.root) == before
    assert cli.ok("status", OP)["pending"] == attempt


def test_a_kernel_failure_is_recorded(cli: Cli, attempt: str) -> None:
    """A compile failure the verifier reports is the idea's failure: recorded, rolled back."""
    _manifest(cli, "compile")
    result = cli.ok("measure", OP)
    assert result["failure"] == "compile"
    failed = next(e for e in cli.events() if e["type"] == "attempt.failed")
    assert failed["payload"]["detail"] == "UB overflow"
    assert cli.ok("status", OP)["pending"] is None


def test_past_the_wall_time_limit_the_attempt_times_out(cli: Cli, attempt: str) -> None:
    """The manifest's timeout_s is enforced by the ledger: the run is killed, a timeout failure."""
    _manifest(cli, "sleep", timeout_s=1)
    result = cli.ok("measure", OP)
    assert result["failure"] == "timeout"


def test_without_a_verifier_measure_says_how_to_declare_one(cli: Cli, attempt: str) -> None:
    """No `verifier` in SPEC.md: bad input naming R11 and the manifest field."""
    (cli.root / "custom" / OP / "SPEC.md").write_text("---\np0_shapes: [[4]]\n---\n", "utf-8")
    refused = cli("measure", OP)
    assert refused.code == 2
    assert refused.json["rule"] == "R11"
    assert refused.json["error"].startswith("custom/sm/SPEC.md declares no verifier")
    assert "verifier:" in refused.json["next"]


def test_dry_run_names_the_kernel_the_result_must_be_bound_to(cli: Cli, attempt: str) -> None:
    """The dry run names the digest of the implementation on disk that activation recorded."""
    _manifest(cli, "ok")
    shown = cli.ok("measure", OP, "--dry-run")
    impl = (cli.root / "custom" / OP / "sm_impl.py").read_bytes()
    assert shown["impl_digest"] == hashlib.sha256(impl).hexdigest()


@pytest.mark.parametrize(
    ("command", "cause"),
    [
        ("/nonexistent/.venv/bin/python -m verifier", "was not found (exit 127)"),
        ("sh -c 'echo usage: v CONFIG >&2; exit 2'", "refused its arguments (exit 2"),
    ],
)
def test_verify_run_with_a_broken_command_writes_nothing(
    cli: Cli, attempt: str, command: str, cause: str
) -> None:
    """`verify --run` with a typo in the command is a harness error, not a runtime failure."""
    before = snapshot(cli.root)
    refused = cli("verify", OP, attempt, "--run", command)
    assert refused.code == 2
    assert refused.json["rule"] == "R11" and cause in refused.json["error"]
    assert snapshot(cli.root) == before
    assert cli.ok("status", OP)["pending"] == attempt


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("times_us", [True, "3.5"]),
        ("times_us", ["3.5"]),
        ("util_pct", "50"),
        ("util_pct", 101),
        ("bubble_pct", True),
    ],
)
def test_a_measurement_value_of_the_wrong_type_is_refused(
    cli: Cli, attempt: str, field: str, value: object
) -> None:
    """Strict types for every measured value (R11): nothing is written for `true` or "3.5"."""
    doc = {
        "times_us": [60.0],
        "layout_exit": 0,
        "outputs": [{"name": "y", "all_close": True}],
        field: value,
    }
    path = cli.root / "measurement.json"
    path.write_text(json.dumps(doc), "utf-8")
    before = snapshot(cli.root)
    refused = cli("verify", OP, attempt, "--from-json", str(path))
    assert refused.code == 2, refused.stdout
    assert refused.json["rule"] == "R11"
    assert snapshot(cli.root) == before


def test_target_from_spec_measures_the_baseline_of_the_manifest(cli: Cli) -> None:
    """Shape, target, metric and baseline config come from SPEC.md; the baseline is measured."""
    activate(cli)
    _manifest(cli, "ok")
    written = cli.ok("target", OP, "--from-spec")
    assert (written["baseline_us"], written["target_us"]) == (80.0, 50.0)
    sheet = next(e for e in cli.events() if e["type"] == "target.set")["payload"]
    assert sheet["shape"] == "[32, 32, 1, 256]"
    assert sheet["target_source"] == "spec" and sheet["metric"] == "max_work_time_us"
    assert sheet["config"] == {"vec_tile_shape": [1, 8, 1, 64]}
    assert sheet["origin"]["level"] == "measured"


@pytest.mark.parametrize(
    ("mode", "problem"),
    [
        ("lie", "measured another config than the baseline's (vec_tile_shape: measured"),
        ("other-kernel", "ran implementation 000000000000, but the baseline is bound to"),
    ],
)
def test_target_from_spec_refuses_an_unbound_baseline(cli: Cli, mode: str, problem: str) -> None:
    """A baseline of another config or kernel is refused (R11), nothing written."""
    activate(cli)
    _manifest(cli, mode)
    before = snapshot(cli.root)
    refused = cli("target", OP, "--from-spec")
    assert refused.code == 2
    assert refused.json["rule"] == "R11" and problem in refused.json["error"]
    assert snapshot(cli.root) == before


def test_target_from_spec_with_hand_typed_values_is_bad_input(cli: Cli) -> None:
    """--from-spec and --target (or --shape, --baseline...) are two sources: refused."""
    activate(cli)
    _manifest(cli, "ok")
    refused = cli("target", OP, "--from-spec", "--target", "5us")
    assert refused.code == 2 and "drop --target" in refused.json["error"]


@pytest.mark.parametrize("shape", ["[32, 32, 1, 256]", "[32,32,1,256]", "32x32x1x256"])
def test_every_shape_spelling_is_recorded_as_the_manifest_writes_it(cli: Cli, shape: str) -> None:
    """One shape syntax: the JSON list of SPEC.md, whichever spelling was typed."""
    activate(cli)
    cli.ok(
        "target",
        OP,
        "--baseline",
        "100us",
        "--shape",
        shape,
        "--target",
        "50us",
        "--target-source",
        "spec",
    )
    sheet = next(e for e in cli.events() if e["type"] == "target.set")["payload"]
    assert sheet["shape"] == "[32, 32, 1, 256]"


@pytest.mark.parametrize(
    ("mode", "problem"),
    [
        ("lie", "measured another config than attempt"),
        ("other-kernel", "ran implementation 000000000000"),
    ],
)
def test_a_measurement_of_something_else_is_refused(
    cli: Cli, attempt: str, mode: str, problem: str
) -> None:
    """The verifier ran another config or kernel: exit 2 (R11), the attempt stays pending."""
    _manifest(cli, mode)
    cli.ok("manifest", OP)  # recorded up front, so only the refused measurement is at stake
    before = snapshot(cli.root)
    refused = cli("measure", OP)
    assert refused.code == 2, refused.stdout
    assert refused.json["rule"] == "R11" and problem in refused.json["error"]
    assert snapshot(cli.root) == before
    assert cli.ok("status", OP)["pending"] == attempt


def test_verify_run_of_another_config_is_refused(cli: Cli, attempt: str) -> None:
    """The incident: the candidate was [1,8,1,32], the adapter ran [1,16,1,64] (R11)."""
    _manifest(cli, "lie")
    command = shlex.join(
        [
            sys.executable,
            str(cli.root / "verifier.py"),
            "lie",
            str(cli.root / "custom" / OP),
            '{"vec_tile_shape": [1, 8, 1, 32]}',
        ]
    )
    before = snapshot(cli.root)
    refused = cli("verify", OP, attempt, "--run", command)
    assert refused.code == 2 and refused.json["rule"] == "R11"
    assert "vec_tile_shape: measured [1,16,1,64], expected [1,8,1,32]" in refused.json["error"]
    assert snapshot(cli.root) == before


def test_a_result_that_names_nothing_it_ran_is_refused_then_recorded_unbound(
    cli: Cli, measured_attempt: str
) -> None:
    """Neither config nor digest in the result: no verdict while require_measured is on
    (issue 27: only bound measurements are `measured`); with it off (a person's decision),
    recorded with the weaker provenance."""
    _manifest(cli, "silent")
    before = snapshot(cli.root)
    refused = cli("measure", OP)
    assert refused.code == 3 and refused.json["rule"] == "R11"
    assert "provenance unbound" in refused.json["error"]
    assert "config and impl_digest" in refused.json["next"]
    assert snapshot(cli.root) == before
    cli.ok("policy", OP, "require_measured", "false", "--person", "Ana", "--reason", "cannot bind")
    cli.ok("measure", OP)
    measured = next(e for e in cli.events() if e["type"] == "attempt.measured")["payload"]
    assert measured["origin"]["level"] == "unbound" and "binding" not in measured


def test_a_bound_measurement_records_what_it_ran(cli: Cli, measured_attempt: str) -> None:
    """The binding is kept in the event, and audit re-checks it clean."""
    _manifest(cli, "ok")
    cli.ok("measure", OP)
    measured = next(e for e in cli.events() if e["type"] == "attempt.measured")["payload"]
    assert measured["binding"]["config"] == {"vec_tile_shape": [1, 8, 1, 32]}
    assert (
        measured["binding"]["impl_digest"]
        == hashlib.sha256((cli.root / "custom" / OP / "sm_impl.py").read_bytes()).hexdigest()
    )
    assert cli.ok("audit", OP)["clean"] is True


def test_measure_records_the_manifest_it_measures_with(cli: Cli, measured_attempt: str) -> None:
    """The manifest's digest is recorded when the campaign first uses it, and again on change."""
    _manifest(cli, "ok")
    cli.ok("measure", OP)
    recorded = [e for e in cli.events() if e["type"] == "manifest.recorded"]
    assert len(recorded) == 1 and recorded[0]["payload"]["source"] == "custom/sm/SPEC.md"
    assert recorded[0]["payload"]["declared"]["knobs"]["vec_tile_shape"]["stage"] == "frontend"


def test_a_reported_adopt_is_refused_when_the_ledger_could_measure(
    cli: Cli, measured_attempt: str
) -> None:
    """require_measured (auto: the manifest declares a verifier): hand-typed times give no
    verdict at all under a manifest in force since issue 27 (not only no adopt)."""
    before = snapshot(cli.root)
    for time in ("1us", "900us"):  # a target-reached, a rollback: both refused
        refused = cli(
            "verify",
            OP,
            measured_attempt,
            "--output",
            "y=true",
            "--layout-exit",
            "0",
            "--time",
            time,
        )
        assert refused.code == 3
        assert refused.json["rule"] == "R11"
        assert refused.json["error"] == (
            f"only measured times give a verdict: attempt {measured_attempt}'s times were typed "
            "in (provenance reported)"
        )
    assert f"tune-ledger measure {OP} {measured_attempt}" in refused.json["next"]
    assert snapshot(cli.root) == before


def test_without_require_measured_audit_lists_reported_decisions(cli: Cli, attempt: str) -> None:
    """No verifier, so no require_measured: a reported target-reached is recorded, and audit
    lists it as resting on reported values (R11)."""
    done = cli.ok(
        "verify", OP, attempt, "--output", "y=true", "--layout-exit", "0", "--time", "1us"
    )
    assert done["verdict"] == "target-reached"
    audited = cli.ok("audit", OP)
    rests = audited["ops"][0]["reported_decisions"]
    assert rests == [
        f"attempt {attempt}: target-reached rests on reported values (its times; the baseline)",
        "stop target-reached rests on reported values (attempt " + attempt + ")",
    ]
    assert audited["clean"] is True


def test_status_and_resume_name_the_exact_measure_command(cli: Cli, measured_attempt: str) -> None:
    """A pending attempt: its full config and the command that measures it, in JSON and text."""
    status = cli.ok("status", OP)
    assert status["pending_config"] == {"vec_tile_shape": [1, 8, 1, 32]}
    assert status["next_command"] == f"tune-ledger measure {OP} {measured_attempt}"
    assert cli.ok("resume", OP)["next"][0] == f"tune-ledger measure {OP} {measured_attempt}"
    text = cli("resume", OP, as_json=False).stdout
    assert 'pending config: {"vec_tile_shape":[1,8,1,32]}' in text
    assert f"next: tune-ledger measure {OP} {measured_attempt}" in text


def test_without_a_verifier_resume_says_what_to_measure(cli: Cli, attempt: str) -> None:
    """No manifest verifier: the next step is verify, with the config to measure spelt out."""
    step = cli.ok("resume", OP)["next"][0]
    assert step.startswith(f"tune-ledger verify {OP} {attempt} --run VERIFIER")
    assert '{"vec_tile_shape":[1,8,1,32]}' in step


def test_reported_times_are_marked_where_a_reader_looks(cli: Cli, attempt: str) -> None:
    """MEMORY.md, `log` and the report mark a hand-typed time and explain the mark (R11)."""
    cli.ok("verify", OP, attempt, "--output", "y=true", "--layout-exit", "0", "--time", "90us")
    memory = (cli.root / "custom" / OP / "MEMORY.md").read_text("utf-8")
    legend = "† reported by hand (provenance `reported`), not measured by the ledger (R11)."
    assert "| 90.00 µs† (-10.0%) |" in memory and "| 100.00 µs† |" in memory
    assert legend in memory
    log = cli("log", OP, as_json=False).stdout
    assert "90.00 µs†" in log and legend in log
    cli.ok("report", OP)
    report = (cli.root / "custom" / OP / f"{OP}_tuning_report.md").read_text("utf-8")
    assert "90.00 µs† (-10.0%)" in report and legend in report


def test_status_says_when_spec_md_changed_since_the_manifest_was_recorded(
    cli: Cli, measured_attempt: str
) -> None:
    """An edited manifest is visible at once in status, before anything records it."""
    assert cli.ok("status", OP)["warnings"] == []
    spec = cli.root / "custom" / OP / "SPEC.md"
    spec.write_text(spec.read_text("utf-8").replace("time_us: 50.0", "time_us: 40.0"), "utf-8")
    warnings = cli.ok("status", OP)["warnings"]
    assert len(warnings) == 1
    assert warnings[0].startswith(f"custom/{OP}/SPEC.md's manifest changed since the ledger")
    assert f"`tune-ledger manifest {OP}` records it" in warnings[0]
    cli.ok("manifest", OP)
    assert cli.ok("status", OP)["warnings"] == []
    assert len(cli.ok("audit", OP)["ops"][0]["manifests"]) == 2
