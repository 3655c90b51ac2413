"""Bad input of every kind: exit 2, a message that says what is wrong, and nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_harness import OP, Cli, activate, ambiguous_ledger, frontend, new_op, pending, snapshot

FRESH = "fresh"  # an activated op without a target sheet


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A root with op `sm` (an attempt pending in frontend) and op `fresh` (activated)."""
    root = tmp_path_factory.mktemp("seeded")
    cli = Cli(root)
    pending(cli)
    activate(cli, FRESH)
    measurement = {
        "times_us": [90.0],
        "layout_exit": 0,
        "outputs": [{"name": "y", "all_close": True}],
    }
    _write(root / "ok.json", measurement)
    _write(root / "list.json", [measurement])
    (root / "broken.json").write_text('{"times_us": [1', "utf-8")
    _write(root / "negative.json", {**measurement, "times_us": [-1.0]})
    _write(root / "zero.json", {**measurement, "times_us": [0]})
    _write(root / "words.json", {**measurement, "times_us": ["fast"]})
    (root / "nan.json").write_text(json.dumps(measurement).replace("90.0", "NaN"), "utf-8")
    _write(root / "util.json", {**measurement, "util_pct": 150})
    _write(
        root / "string-bool.json", {**measurement, "outputs": [{"name": "y", "all_close": "false"}]}
    )
    _write(root / "no-layout.json", {k: v for k, v in measurement.items() if k != "layout_exit"})
    _write(root / "no-times.json", {k: v for k, v in measurement.items() if k != "times_us"})
    _write(root / "adapter-error.json", {"error": "unknown knob 'vec_tile'"})
    (root / "empty-perf").mkdir()
    return root


def _write(path: Path, value: object) -> None:
    path.write_text(json.dumps(value), "utf-8")


VERIFY = ["verify", OP, "pending"]
MANUAL = ["--output", "y=true", "--layout-exit", "0"]
TARGET = ["target", FRESH, "--shape", "32x32", "--target-source", "spec"]

# (arguments, a fragment the message must contain)
BAD_INPUT: list[tuple[list[str], str]] = [
    # unknown op and unsafe op names
    (["status", "nope"], "unknown op 'nope'"),
    (["try", "nope", "--set", "a=1"], "unknown op"),
    (["init", "a/b"], "not allowed"),
    (["init", "../escape"], "not allowed"),
    (["status", ".."], "not allowed"),
    (["init", "a..b"], "not allowed"),
    (["init", ""], "not allowed"),
    (["init", "tab\there"], "not allowed"),
    (["init", "new\nline"], "not allowed"),
    (["init", "esc\x1b[31m"], "not allowed"),
    (["init", "nul\x00"], "not allowed"),
    (["init", "x" * 65], "not allowed"),
    (["init", OP], "already has a ledger"),
    # times
    ([*VERIFY, *MANUAL, "--time", "-5us"], "> 0"),
    ([*VERIFY, *MANUAL, "--time", "0"], "> 0"),
    ([*VERIFY, *MANUAL, "--time", "0us"], "> 0"),
    ([*VERIFY, *MANUAL, "--time", "nan"], "not a time"),
    ([*VERIFY, *MANUAL, "--time", "inf"], "not a time"),
    ([*VERIFY, *MANUAL, "--time", "1e400us"], "finite"),
    ([*VERIFY, *MANUAL, "--time", "fast"], "not a time"),
    ([*VERIFY, *MANUAL, "--time", "5 parsecs"], "unknown unit"),
    ([*VERIFY, *MANUAL, "--time", "5h"], "unknown unit"),
    ([*VERIFY, *MANUAL, "--time", ""], "not a time"),
    ([*TARGET, "--baseline", "fast", "--target", "1us"], "--baseline 'fast' is not a time"),
    ([*TARGET, "--baseline", "1us", "--target", "-1us"], "--target"),
    ([*TARGET, "--baseline", "1furlong", "--target", "1us"], "unknown unit"),
    # JSON
    (["candidate", OP, "--config", "{bad", "--prior", "p"], "not valid JSON"),
    (["candidate", OP, "--config", "[1, 2]", "--prior", "p"], "must be a JSON object"),
    (["candidate", OP, "--config", '"text"', "--prior", "p"], "must be a JSON object"),
    (["candidate", OP, "--config", "NaN", "--prior", "p"], "not valid JSON"),
    ([*TARGET, "--baseline", "1us", "--target", "1us", "--config", "{"], "not valid JSON"),
    ([*TARGET, "--baseline", "1us", "--target", "1us", "--config", "3"], "JSON object"),
    (["relax", FRESH, "--what", "vec", "--limit", "12x", "--basis", "b"], "not valid JSON"),
    (["policy", OP, "noise_threshold", "lots"], "not valid JSON"),
    (["policy", OP, "no_such_policy", "1"], "unknown policy key"),
    # --set
    (["try", OP, "--set", "vec_tile_shape"], "is not NAME=VALUE"),
    (["try", OP, "--set", "=3"], "is not NAME=VALUE"),
    (["try", OP, "--set", "x="], "not valid JSON"),
    (["try", OP, "--set", "x=nan"], "not valid JSON"),
    (["try", OP, "--set", "x=[1,"], "not valid JSON"),
    (["try", OP], "exactly one of --set"),
    (["try", OP, "--set", "x=1", "--algorithm", "fuse"], "exactly one of --set"),
    # names the CLI knows
    (["skill", "load", OP, "tune-everything"], "tune-everything"),
    (["skill", "unload", OP, ""], "is not one of"),
    (["stage", "enter", OP, "backend"], "backend"),
    (["stage", "exit", OP, "FRONTEND"], "FRONTEND"),
    (["fail", OP, "pending", "--category", "cosmic-ray"], "cosmic-ray"),
    (["log", OP, "--verdict", "great"], "great"),
    # attempts
    (["verify", OP, "deadbeef0000", *MANUAL, "--time", "1"], "unknown attempt 'deadbeef0000'"),
    (["verify", OP, "abc", *MANUAL, "--time", "1"], "too short"),
    (["abandon", OP, "ffffffffffff", "--reason", "r"], "unknown attempt"),
    (["fail", OP, "0000", "--category", "oom"], "unknown attempt"),
    (["verify", FRESH, "pending", *MANUAL, "--time", "1"], "no attempt is pending"),
    # missing or conflicting options
    (["candidate", OP, "--config", "{}"], "Missing option '--prior'"),
    (["point", "close", OP, "F-1"], "Missing option '--reason'"),
    (["fail", OP, "pending"], "Missing option '--category'"),
    (["abandon", OP, "pending"], "Missing option '--reason'"),
    (["stop", OP], "Missing option '--reason'"),
    (["target", FRESH, "--baseline", "1", "--target", "1"], "Missing option '--shape'"),
    ([*TARGET, "--target", "1us"], "give the baseline"),
    (["relax", FRESH, "--what", "vec", "--limit", "128"], "Missing option '--basis'"),
    (["verify", OP], "Missing argument 'ATTEMPT'"),
    ([*VERIFY], "--layout-exit"),
    ([*VERIFY, "--layout-exit", "0", "--time", "1"], "no outputs given"),
    ([*VERIFY, "--output", "y=true", "--layout-exit", "0"], "no --time"),
    ([*VERIFY, *MANUAL, "--time", "1", "--run", "true"], "give only one of"),
    ([*VERIFY, "--from-json", "ok.json", "--perf-dir", "empty-perf"], "give only one of"),
    ([*VERIFY, "--run", "true", "--timeout", "0"], "> 0 seconds"),
    ([*VERIFY, "--run", "true", "--timeout", "nan"], "finite"),
    ([*VERIFY, *MANUAL, "--time", "1", "--timeout", "5"], "--timeout applies to --run"),
    (["evidence", "layout", OP], "exactly one of --from-spec, --run CMD or --exit-code"),
    (["evidence", "layout", OP, "--exit-code", "0", "--run", "true"], "exactly one of"),
    (["evidence", "compare", OP], "no outputs given"),
    (["evidence", "compare", OP, "--output", "y=true", "--from-json", "ok.json"], "only one"),
    (["evidence", "layout", OP, "--exit-code", "0", "--impl", "missing.py"], "cannot read"),
    (["audit"], "give OP or --all"),
    (["audit", OP, "--all"], "give OP or --all"),
    # outputs and percentages
    ([*VERIFY, "--output", "y", "--layout-exit", "0", "--time", "1"], "is not NAME=VALUE"),
    ([*VERIFY, "--output", "y=maybe", "--layout-exit", "0", "--time", "1"], "true or false"),
    ([*VERIFY, *MANUAL, "--output", "y=false", "--time", "1"], "given twice"),
    ([*VERIFY, *MANUAL, "--max-diff", "z=1", "--time", "1"], "which no --output gives"),
    ([*VERIFY, *MANUAL, "--time", "1", "--util", "101"], "within [0, 100]"),
    ([*VERIFY, *MANUAL, "--time", "1", "--bubble", "-1"], "within [0, 100]"),
    ([*VERIFY, *MANUAL, "--time", "1", "--util", "nan"], "finite"),
    ([*VERIFY, *MANUAL, "--time", "1", "--util", "high"], "must be a number"),
    # measurement documents
    ([*VERIFY, "--from-json", "missing.json"], "cannot read"),
    ([*VERIFY, "--from-json", "broken.json"], "not valid JSON"),
    ([*VERIFY, "--from-json", "nan.json"], "not valid JSON"),
    ([*VERIFY, "--from-json", "list.json"], "must hold a JSON object"),
    ([*VERIFY, "--from-json", "negative.json"], "> 0"),
    ([*VERIFY, "--from-json", "zero.json"], "> 0"),
    ([*VERIFY, "--from-json", "words.json"], "non-numeric time"),
    ([*VERIFY, "--from-json", "util.json"], "within [0, 100]"),
    ([*VERIFY, "--from-json", "string-bool.json"], "all_close must be true or false"),
    ([*VERIFY, "--from-json", "no-layout.json"], "layout_exit"),
    ([*VERIFY, "--from-json", "no-times.json"], "times_us"),
    ([*VERIFY, "--from-json", "adapter-error.json"], "unknown knob"),
    ([*VERIFY, "--perf-dir", "empty-perf"], "has no measurement.json"),
    ([*VERIFY, "--perf-dir", "no-such-dir"], "has no measurement.json"),
    (["evidence", "compare", OP, "--from-json", "adapter-error.json"], "outputs"),
]


@pytest.mark.parametrize(
    ("args", "fragment"), BAD_INPUT, ids=[" ".join(a)[:60] for a, _ in BAD_INPUT]
)
def test_bad_input_exits_2_with_a_clear_message_and_writes_nothing(
    seeded: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], fragment: str
) -> None:
    """Exit 2, one JSON error naming the problem and the next step; no byte changed."""
    monkeypatch.chdir(seeded)
    cli = Cli(seeded)
    before = snapshot(seeded)
    result = cli(*args)
    assert result.code == 2, result
    error = result.json
    assert error["code"] == 2 and error["kind"] == "bad-input"
    assert fragment in error["error"], error
    assert error["next"], "every error says what to do next"
    assert snapshot(seeded) == before
    human = cli(*args, as_json=False)
    assert human.code == 2 and human.stdout == ""
    assert fragment.splitlines()[0] in human.stderr
    assert "Traceback" not in human.stderr
    assert snapshot(seeded) == before


def test_an_ambiguous_attempt_prefix_is_refused(tmp_path: Path) -> None:
    """Two attempts share their first 4 characters: that prefix names both and is refused."""
    first, second = ambiguous_ledger(tmp_path)
    cli = Cli(tmp_path)
    cli.ok("render", "softmax")
    before = snapshot(tmp_path)
    result = cli("abandon", "softmax", first[:4], "--reason", "which one?")
    assert result.code == 2
    assert "ambiguous" in result.json["error"]
    assert first in result.json["error"] and second in result.json["error"]
    assert snapshot(tmp_path) == before
    done = cli.ok("abandon", "softmax", second, "--reason", "this one")
    assert done["attempt"] == second
    assert cli.ok("audit", "softmax")["clean"] is True


# --- a single-valued option given twice ----------------------------------------------------------
# click keeps the last value of a repeated option silently; a dropped `--set` is a lost change
# (R6), so every command refuses the repetition and names both values.


def test_two_set_options_are_refused_naming_both_and_nothing_is_written(cli: Cli) -> None:
    frontend(cli)
    before = snapshot(cli.root)
    result = cli("try", OP, "--set", "vec_tile_shape=[1,8,1,64]", "--set", "unroll_list=[2,1]")
    assert result.code == 2
    assert result.json["error"] == (
        "--set was given 2 times (--set 'vec_tile_shape=[1,8,1,64]' and --set "
        "'unroll_list=[2,1]'); it takes one value and nothing was recorded"
    )
    assert result.json["next"] == "give --set once: a mutation changes one parameter (R6)"
    assert snapshot(cli.root) == before


def test_repeated_option_spelled_with_equals_is_refused_too(cli: Cli) -> None:
    new_op(cli)
    before = snapshot(cli.root)
    result = cli("evidence", "layout", OP, "--exit-code", "0", "--exit-code=1")
    assert result.code == 2
    assert result.json["error"] == (
        "--exit-code was given 2 times (--exit-code '0' and --exit-code '1'); it takes one "
        "value and nothing was recorded"
    )
    assert result.json["next"] == "give --exit-code once"
    assert snapshot(cli.root) == before


def test_repeated_global_option_is_refused(cli: Cli) -> None:
    new_op(cli)
    result = cli("--root", str(cli.root), "status", OP)
    assert result.code == 2
    assert result.json["error"].startswith("--root was given 2 times")


def test_options_meant_to_repeat_still_repeat(cli: Cli) -> None:
    new_op(cli)
    cli.ok("evidence", "compare", OP, "--output", "y=true", "--output", "z=true")
    assert [o["name"] for o in cli.events()[-1]["payload"]["outputs"]] == ["y", "z"]


def test_a_value_that_looks_like_an_option_is_a_value(cli: Cli) -> None:
    new_op(cli)
    cli.ok("note", OP, "--text", "--text")
    assert cli.events()[-1]["payload"]["text"] == "--text"
