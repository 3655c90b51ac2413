"""Trust by construction (issue 27, items 1, 2 and 4), through the CLI: provenance says who
vouches for a number (`measured` only for the op's declared verifier, `ran` for an ad-hoc
`--run`, `reported` for typed values), the manifest governs by its presence, and
`audit --strict` fails (exit 9) on decisions resting on anything else or on a lowered guard."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from cli_harness import BASE_CONFIG, IMPL_TEXT, OP, Cli, activate, new_op, snapshot
from standin import autopilot, op_root, write_script

# The op's declared verifier: names the config and kernel it ran (R11); its time falls with
# the tile's volume, so a bigger tile is an adopt.
VERIFIER = """
    import hashlib, json, pathlib, sys
    op_dir, config = pathlib.Path(sys.argv[1]), json.loads(sys.argv[2])
    digest = hashlib.sha256((op_dir / "sm_impl.py").read_bytes()).hexdigest()
    tile = config.get("vec_tile_shape", [1, 8, 1, 64])
    volume = tile[0] * tile[1] * tile[2] * tile[3]
    print(json.dumps({"config": config, "impl_digest": digest, "tool": "fake-sim",
                      "times_us": [round(40960.0 / volume + 1.0, 3)], "layout_exit": 0,
                      "outputs": [{"name": "y", "all_close": True, "max_diff": 0.0}]}))
"""
LAYOUT_CHECK = "import sys\nsys.exit(0)\n"
ECHO_COMPARE = 'echo \'{"outputs":[{"name":"y","all_close":true}]}\''


def _spec(cli: Cli, *, timeout_s: int = 60, target_us: float = 2.0) -> None:
    folder = cli.root / "custom" / OP
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{OP}_impl.py").write_text(IMPL_TEXT, "utf-8")
    (folder / "layout_check.py").write_text(LAYOUT_CHECK, "utf-8")
    (cli.root / "verifier.py").write_text(textwrap.dedent(VERIFIER), "utf-8")
    command = [sys.executable, "verifier.py", "{op_dir}", "{config}"]
    (folder / "SPEC.md").write_text(
        "---\n"
        "p0_shapes: [[32, 32, 1, 256]]\n"
        f"perf_target: {{time_us: {target_us}, metric: max_work_time_us}}\n"
        f"baseline_config: {BASE_CONFIG}\n"
        "knobs:\n"
        "  vec_tile_shape: {stage: frontend, kind: tile, default: [1, 8, 1, 64]}\n"
        f"verifier: {{command: {json.dumps(command)}, timeout_s: {timeout_s}}}\n"
        "---\n# sm\n",
        "utf-8",
    )


def _measured_campaign(cli: Cli) -> str:
    """An op governed by its manifest from init on, activated and tuned with measured values
    only; one candidate adopted. Returns the adopted attempt."""
    _spec(cli)
    cli.ok("init", OP)
    cli.ok("evidence", "compare", OP, "--from-spec")
    cli.ok("evidence", "layout", OP, "--from-spec")
    cli.ok("activate", OP)
    cli.ok("target", OP, "--from-spec")
    cli.ok("skill", "load", OP, "pypto-op-perf-tune")
    cli.ok("stage", "enter", OP, "frontend")
    cli.ok("skill", "load", OP, "tune-frontend")
    cli.ok("point", "open", OP, "vec_tile_shape")
    attempt = str(
        cli.ok("candidate", OP, "--config", '{"vec_tile_shape":[1,16,1,64]}', "--prior", "x:1")[
            "attempt"
        ]
    )
    assert cli.ok("measure", OP)["verdict"] == "adopt"
    return attempt


# --- 27.2: the manifest is in force by its presence ---------------------------------------


def test_init_records_the_manifest_of_spec_md(cli: Cli) -> None:
    """No `manifest` call: init records SPEC.md's manifest as the one in force."""
    _spec(cli)
    cli.ok("init", OP)
    recorded = [e for e in cli.events() if e["type"] == "manifest.recorded"]
    assert len(recorded) == 1 and recorded[0]["payload"]["measured_only"] is True
    status = cli.ok("status", OP)
    assert status["manifest"]["measured_only"] is True and status["manifest"]["verifier"]


def test_after_init_the_way_forward_is_only_what_the_manifest_accepts(cli: Cli) -> None:
    """Where SPEC.md declares a verifier, init and resume name `--from-spec` alone: the typed
    and ad-hoc sources they used to offer beside it are refused there (R1)."""
    _spec(cli)
    said = cli("init", OP, as_json=False).stdout
    wanted = [f"tune-ledger evidence {kind} {OP} --from-spec" for kind in ("compare", "layout")]
    assert [line.strip() for line in said.splitlines()[1:]] == wanted
    assert cli.ok("resume", OP)["next"] == wanted
    assert cli.ok("init", "other")["next"] == [  # no SPEC.md: every source is offered
        "tune-ledger evidence compare other --from-spec"
        " (or --run CMD, or --output NAME=true|false)",
        "tune-ledger evidence layout other --from-spec (or --run CMD, or --exit-code N)",
    ]


def test_an_existing_ledger_is_governed_by_the_current_spec_md(cli: Cli) -> None:
    """A ledger begun before SPEC.md declared a verifier: its next command is decided under the
    manifest; a typed evidence it refuses writes nothing (the manifest neither)."""
    new_op(cli)
    _spec(cli)
    before = snapshot(cli.root)
    refused = cli("evidence", "compare", OP, "--output", "y=true")
    assert refused.code == 3 and refused.json["rule"] == "R1"
    assert f"tune-ledger evidence compare {OP} --from-spec" in refused.json["next"]
    assert snapshot(cli.root) == before
    cli.ok("evidence", "compare", OP, "--from-spec")
    types = cli.types()
    assert types[-2:] == ["manifest.recorded", "evidence.compare"]


def test_a_manifest_changed_after_activation_is_recorded_and_shown(cli: Cli) -> None:
    """SPEC.md edited mid-campaign: the next command records it; status and MEMORY.md say so."""
    _measured_campaign(cli)
    _spec(cli, timeout_s=120)
    cli.ok("note", OP, "--text", "the verifier now has more time")
    assert cli.types().count("manifest.recorded") == 2
    assert cli.ok("status", OP)["manifests_recorded"] == 2
    text = cli("status", OP, as_json=False).stdout
    assert "manifest changed 1 time(s) during the campaign" in text
    memory = (cli.root / "custom" / OP / "MEMORY.md").read_text("utf-8")
    assert "**Manifest changed** during the campaign" in memory


def test_a_verdict_never_compares_two_verifier_digests(cli: Cli) -> None:
    """The verifier's script changed after the best was measured: refused (R8), both digests
    named, nothing written; restoring the verifier lets the attempt be measured."""
    _measured_campaign(cli)
    cli.ok("candidate", OP, "--config", '{"vec_tile_shape":[1,32,1,64]}', "--prior", "x:2")
    script = cli.root / "verifier.py"
    original = script.read_text("utf-8")
    script.write_text(original + "# tuned the verifier\n", "utf-8")
    before = snapshot(cli.root)
    refused = cli("measure", OP)
    assert refused.code == 3 and refused.json["rule"] == "R8"
    assert "the verifier changed" in refused.json["error"]
    assert "--prior remeasure:verifier" in refused.json["next"]
    assert snapshot(cli.root) == before
    script.write_text(original, "utf-8")
    assert cli.ok("measure", OP)["verdict"] == "adopt"


def test_the_best_is_remeasured_after_the_verifier_changed(cli: Cli) -> None:
    """The way forward the refusal names: abandon, re-measure the best's config by the
    verifier as it stands (`--prior remeasure:verifier`: no verdict, it is the best from here
    on), then the change again gets its verdict; the campaign audits clean, strictly too."""
    best = _measured_campaign(cli)
    started = cli.ok("candidate", OP, "--config", '{"vec_tile_shape":[1,32,1,64]}', "--prior", "y")
    script = cli.root / "verifier.py"
    script.write_text(script.read_text("utf-8") + "# tuned the verifier\n", "utf-8")
    refused = cli("measure", OP)
    assert refused.code == 3 and "--prior remeasure:verifier" in refused.json["next"]
    cli.ok("abandon", OP, started["attempt"], "--reason", "the verifier changed")
    again = cli.ok(
        "candidate", OP, "--config", '{"vec_tile_shape":[1,16,1,64]}', "--prior",
        "remeasure:verifier",
    )  # fmt: skip
    assert cli.ok("measure", OP)["verdict"] is None
    carried = next(e for e in cli.events() if e["type"] == "best.remeasured")["payload"]
    assert carried == {"attempt": again["attempt"], "previous": best}
    assert cli.ok("status", OP)["best"]["attempt"] == again["attempt"]
    retried = cli.ok(
        "candidate", OP, "--config", '{"vec_tile_shape":[1,32,1,64]}', "--prior", "y again"
    )
    assert cli.ok("measure", OP)["verdict"] == "adopt"
    assert cli.ok("status", OP)["best"]["attempt"] == retried["attempt"]
    assert cli.ok("audit", OP, "--strict")["clean"] is True
    for view in (["log", OP], ["report", OP], ["check", OP], ["resume", OP]):
        cli.ok(*view)


# --- 27.1: provenance levels, and only measured values under a verifier ------------------


def test_ad_hoc_runs_and_typed_evidence_do_not_activate(cli: Cli) -> None:
    """The incident: `evidence compare --run "echo ..."` and `evidence layout --run true`
    under a manifest that declares a verifier: refused (exit 3) naming --from-spec."""
    _spec(cli)
    cli.ok("init", OP)
    before = snapshot(cli.root)
    for args, kind in (
        (["evidence", "compare", OP, "--run", ECHO_COMPARE], "compare"),
        (["evidence", "layout", OP, "--run", "true"], "layout"),
        (["evidence", "layout", OP, "--exit-code", "0"], "layout"),
    ):
        refused = cli(*args)
        assert refused.code == 3, refused.stdout
        assert refused.json["rule"] == "R1"
        assert f"tune-ledger evidence {kind} {OP} --from-spec" in refused.json["next"]
    assert "provenance ran" in cli("evidence", "layout", OP, "--run", "true").json["error"]
    assert snapshot(cli.root) == before


def test_typed_target_and_times_are_refused_with_the_command_to_run(cli: Cli) -> None:
    """A typed target sheet (R11) and a typed time (no verdict) under the manifest."""
    _spec(cli)
    cli.ok("init", OP)
    cli.ok("evidence", "compare", OP, "--from-spec")
    cli.ok("evidence", "layout", OP, "--from-spec")
    cli.ok("activate", OP)
    typed = cli(
        "target", OP, "--baseline", "100us", "--shape", "32x32x1x256", "--target", "2us",
        "--target-source", "spec", "--config", BASE_CONFIG, "--tool", "sim",
    )  # fmt: skip
    assert typed.code == 3 and typed.json["rule"] == "R11"
    assert f"tune-ledger target {OP} --from-spec" in typed.json["next"]
    cli.ok("target", OP, "--from-spec")
    cli.ok("skill", "load", OP, "pypto-op-perf-tune")
    cli.ok("stage", "enter", OP, "frontend")
    cli.ok("skill", "load", OP, "tune-frontend")
    cli.ok("point", "open", OP, "vec_tile_shape")
    attempt = cli.ok("candidate", OP, "--config", '{"vec_tile_shape":[1,16,1,64]}', "--prior", "x")
    refused = cli(
        "verify", OP, attempt["attempt"], "--output", "y=true", "--layout-exit", "0",
        "--time", "2us",
    )  # fmt: skip
    assert refused.code == 3 and refused.json["rule"] == "R11"
    assert f"tune-ledger measure {OP} {attempt['attempt']}" in refused.json["next"]
    echo = (
        "echo '"
        + json.dumps(
            {"times_us": [2.0], "layout_exit": 0, "outputs": [{"name": "y", "all_close": True}]}
        )
        + "'"
    )
    ran = cli("verify", OP, attempt["attempt"], "--run", echo)
    assert ran.code == 3 and "provenance ran" in ran.json["error"]
    assert f"tune-ledger measure {OP} {attempt['attempt']}" in ran.json["next"]


def test_measured_values_carry_the_verifier_digest_and_views_mark_each_level(cli: Cli) -> None:
    """From the spec: `measured`, with the verifier's digest; an ad-hoc run (an op without a
    manifest) is `ran` and marked ‡ in log and MEMORY.md; status JSON names each level."""
    _measured_campaign(cli)
    measured = next(e for e in cli.events() if e["type"] == "attempt.measured")["payload"]
    assert measured["origin"]["level"] == "measured"
    assert len(measured["origin"]["verifier_digest"]) == 64
    status = cli.ok("status", OP)
    assert status["best"]["provenance"] == "measured"
    assert status["baseline_provenance"] == "measured"
    assert status["evidence_provenance"] == {"compare": "measured", "layout": "measured"}

    other = Cli(cli.root)
    activate(other, "plain")
    other.ok(
        "target", "plain", "--baseline", "100us", "--shape", "32x32x1x256", "--target", "50us",
        "--target-source", "spec", "--config", BASE_CONFIG, "--tool", "sim",
    )  # fmt: skip
    other.ok("skill", "load", "plain", "pypto-op-perf-tune")
    other.ok("stage", "enter", "plain", "frontend")
    other.ok("skill", "load", "plain", "tune-frontend")
    other.ok("point", "open", "plain", "F-1")
    started = other.ok("candidate", "plain", "--config", '{"vec_tile_shape":[1,8,1,32]}',
                       "--prior", "x")  # fmt: skip
    run = (
        "echo '"
        + json.dumps(
            {"times_us": [90.0], "layout_exit": 0, "outputs": [{"name": "y", "all_close": True}]}
        )
        + "'"
    )
    other.ok("verify", "plain", started["attempt"], "--run", run)
    log = other("log", "plain", as_json=False).stdout
    assert "90.00 µs‡" in log and "‡ run by an ad-hoc --run command nobody declared" in log
    memory = (cli.root / "custom" / "plain" / "MEMORY.md").read_text("utf-8")
    assert "90.00 µs‡" in memory and "(provenance `ran`)" in memory


# --- 27.4: audit --strict ----------------------------------------------------------------


def test_audit_strict_passes_a_measured_campaign(cli: Cli) -> None:
    _measured_campaign(cli)
    assert cli.ok("audit", OP, "--strict")["clean"] is True
    assert cli.ok("audit", "--all", "--strict")["clean"] is True


def test_audit_strict_names_decisions_on_unmeasured_values(cli: Cli) -> None:
    """An op without a verifier, adopted on a typed time and an ad-hoc run: plain audit is
    clean, --strict exits 9 naming each decision with its level."""
    activate(cli)
    cli.ok(
        "target", OP, "--baseline", "100us", "--shape", "32x32x1x256", "--target", "10us",
        "--target-source", "spec", "--config", BASE_CONFIG, "--tool", "sim",
    )  # fmt: skip
    cli.ok("skill", "load", OP, "pypto-op-perf-tune")
    cli.ok("stage", "enter", OP, "frontend")
    cli.ok("skill", "load", OP, "tune-frontend")
    cli.ok("point", "open", OP, "F-1")
    first = cli.ok("candidate", OP, "--config", '{"vec_tile_shape":[1,8,1,32]}', "--prior", "x")
    cli.ok("verify", OP, first["attempt"], "--output", "y=true", "--layout-exit", "0",
           "--time", "80us")  # fmt: skip
    assert cli.ok("audit", OP)["clean"] is True
    shown = cli("status", OP, as_json=False).stdout
    assert "baseline 100.00 µs†" in shown and "best 80.00 µs†" in shown
    assert "† reported by hand (provenance `reported`)" in shown
    strict = cli("audit", OP, "--strict")
    assert strict.code == 9 and strict.json["kind"] == "not-measured"
    digest = cli.ok("status", OP)["impl_digest_expected"] or ""
    assert strict.json["strict"] == [
        f"{OP}: activation of implementation {digest[:12]} rests on evidence not measured "
        "(compare: reported; layout: reported)",
        f"{OP}: attempt {first['attempt']}: adopt rests on values not measured "
        "(its times: reported; the baseline: reported)",
    ]
    assert cli("audit", "--all", "--strict").code == 9
    human = cli("audit", OP, "--strict", as_json=False)
    assert human.code == 9 and "strict: attempt" in human.stdout


def test_audit_strict_names_a_lowered_guard(cli: Cli) -> None:
    """A measured campaign with a loosened noise threshold fails until it is restored."""
    _measured_campaign(cli)
    cli.ok("policy", OP, "noise_threshold", "0.2", "--person", "Ana", "--reason", "noisy machine")
    strict = cli("audit", OP, "--strict")
    assert strict.code == 9
    assert strict.json["strict"] == [f"{OP}: noise_threshold 0.2 (default 0.01, R8)"]
    cli.ok("policy", OP, "noise_threshold", "0.01", "--reason", "back to the default")
    assert cli("audit", OP, "--strict").code == 0


def test_exit_code_9_is_in_the_help(cli: Cli) -> None:
    assert "9 audit --strict" in cli("--help", as_json=False).stdout


def test_git_setup_offers_the_ci_snippet(tmp_path: Path) -> None:
    """git-setup prints the CI step and pre-commit hook; it writes neither."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    cli = Cli(tmp_path)
    first = cli("git-setup", as_json=False)
    assert first.code == 0 and "entry: tune-ledger audit --all --strict" in first.stdout
    done = cli.ok("git-setup")
    assert done["ci"]["commands"] == ["tune-ledger check --all", "tune-ledger audit --all --strict"]
    assert "tune-ledger audit --all --strict" in done["ci"]["github_actions"]
    assert "entry: tune-ledger audit --all --strict" in done["ci"]["pre_commit"]
    assert not (tmp_path / ".pre-commit-config.yaml").exists()


# --- the campaign the README runs (tools.autopilot), on a stand-in verifier -------------


def _autopilot_campaign(tmp_path: Path) -> Cli:
    """A short autopilot campaign on the stand-in verifier (tests/standin.py): every value
    measured by the op's declared verifier, from the manifest in force since init."""
    script = write_script(tmp_path / "standin")
    root = op_root(tmp_path, "pilot", script, "sleep:0")
    autopilot(root, tmp_path / "cache", "--max-attempts", "4")
    return Cli(root)


@pytest.mark.slow  # an autopilot campaign of real processes
def test_an_autopilot_campaign_passes_strict_audit(tmp_path: Path) -> None:
    cli = _autopilot_campaign(tmp_path)
    status = cli.ok("status", OP)
    assert status["best"]["provenance"] == "measured" and status["manifest"]["measured_only"]
    assert status["attempts"] >= 2
    strict = cli("audit", "--all", "--strict")
    assert strict.code == 0, strict.stdout
    assert strict.json["ops"][0]["strict"] == []


@pytest.mark.slow  # an autopilot campaign of real processes
def test_a_typed_time_or_echo_evidence_fails_strict_audit(tmp_path: Path) -> None:
    """The same campaign, then a person lowers require_measured and a typed time is adopted;
    and an op activated on `echo` evidence: audit --all --strict exits 9 naming each."""
    cli = _autopilot_campaign(tmp_path)
    assert cli("audit", "--all", "--strict").code == 0
    cli.ok(
        "policy", OP, "require_measured", "false", "--person", "Ana", "--reason", "typed on purpose"
    )
    state = cli.ok("status", OP)
    if state["stopped"] is None and state["pending"] is None and state["open_point"]:
        started = cli.ok(
            "candidate", OP, "--config", '{"vec_tile_shape":[1,2,1,64]}', "--prior", "typed"
        )
        cli.ok("verify", OP, started["attempt"], "--output", "y=true", "--layout-exit", "0",
               "--time", "0.5us")  # fmt: skip
    echo = Cli(cli.root)
    new_op(echo, "echoed")
    echo.ok("evidence", "compare", "echoed", "--run", ECHO_COMPARE)
    echo.ok("evidence", "layout", "echoed", "--run", "true")
    echo.ok("activate", "echoed")
    strict = cli("audit", "--all", "--strict")
    assert strict.code == 9, strict.stdout
    named = strict.json["strict"]
    assert f"{OP}: require_measured false (R11)" in named
    assert any(s.startswith("echoed: activation of implementation") and "compare: ran" in s
               for s in named)  # fmt: skip


def test_a_pending_attempt_under_a_verifier_is_finished_by_measure(cli: Cli) -> None:
    """Where SPEC.md declares a verifier, `measure` is what finishes a pending attempt: status
    lists it first, and a second change is refused naming it (an agent over MCP had guessed)."""
    _measured_campaign(cli)
    attempt = cli.ok("try", OP, "--set", "vec_tile_shape=[1,32,1,64]")["attempt"]
    allowed = cli.ok("status", OP)["allowed"]
    finishing = allowed[allowed.index("measure") :][:5]
    assert finishing == ["measure", "verify", "fail", "abandon", "stop"]
    refused = cli("try", OP, "--set", "vec_tile_shape=[1,8,1,64]")
    assert refused.code == 3 and refused.json["rule"] == "R6"
    assert f"tune-ledger measure {OP} {attempt}" in refused.json["next"]
