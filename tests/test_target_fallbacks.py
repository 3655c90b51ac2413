"""Where SPEC.md has no budget, `target --from-spec` measures R3's next source of a target (a
comparable upstream kernel, then torch eager) with the command `target_fallbacks` names, and
records it with its provenance instead of a typed value (issue 29.6)."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from cli_harness import OP, Cli, activate, snapshot
from test_device_measurements import VERIFIER

# Prints the times its first argument gives (a JSON list), as a reference command does; "fail"
# reports a failure. Each run leaves a line in ran.log beside it.
REFERENCE = """
    import json, pathlib, sys
    with open(pathlib.Path(__file__).with_name("ran.log"), "a") as log:
        log.write(" ".join(sys.argv[1:]) + "\\n")
    if sys.argv[1] == "fail":
        failure = {"category": "runtime", "detail": "no torch"}
        print(json.dumps({"times_us": [], "failure": failure}))
    else:
        print(json.dumps({"times_us": json.loads(sys.argv[1]), "source": sys.argv[2],
                          "method": sys.argv[2] + " timed by the stand-in", "tool": "torch"}))
"""


def _root(cli: Cli, fallbacks: list[tuple[str, str]], budget: bool = False) -> Path:
    cli.root.mkdir(exist_ok=True)
    activate(cli)
    verifier = cli.root / "verifier.py"
    verifier.write_text(textwrap.dedent(VERIFIER), "utf-8")
    ref = cli.root / "reference.py"
    ref.write_text(textwrap.dedent(REFERENCE), "utf-8")
    command = [sys.executable, str(verifier), "{op_dir}", "{config}"]
    entries = [
        {"source": source, "command": [sys.executable, str(ref), times, source]}
        for source, times in fallbacks
    ]
    (cli.root / "custom" / OP / "SPEC.md").write_text(
        "---\n"
        "p0_shapes: [[32, 32, 1, 256]]\n"
        + ("perf_target: {time_us: 5.0, metric: max_work_time_us}\n" if budget else "")
        + "baseline_config: {vec_tile_shape: [1, 8, 1, 64]}\n"
        "knobs:\n"
        "  vec_tile_shape: {stage: frontend, kind: tile, default: [1, 8, 1, 64]}\n"
        f"verifier: {{command: {json.dumps(command)}}}\n"
        + (f"target_fallbacks: {json.dumps(entries)}\n" if entries else "")
        + "---\n# sm\n",
        "utf-8",
    )
    return ref.with_name("ran.log")


def _sheet(cli: Cli) -> dict:  # type: ignore[type-arg]
    return next(e["payload"] for e in cli.events() if e["type"] == "target.set")


def test_without_a_budget_torch_eager_is_measured_with_provenance(cli: Cli) -> None:
    ran = _root(cli, [("torch-eager", "[30.0, 24.0, 26.0]")])
    cli.ok("target", OP, "--from-spec")
    sheet = _sheet(cli)
    assert sheet["target_us"] == 26.0  # the median of the three timed runs
    assert sheet["target_samples_us"] == [30.0, 24.0, 26.0]
    assert sheet["target_source"] == "torch-eager"
    assert sheet["target_origin"]["level"] == "measured"
    assert "reference.py" in sheet["target_origin"]["command"]
    assert sheet["source_ref"].startswith(
        "measured: torch-eager, torch-eager timed by the stand-in"
    )
    assert ran.read_text("utf-8").count("\n") == 1
    memory = (cli.root / "custom" / OP / "MEMORY.md").read_text("utf-8")
    assert "| Target | 26.00 µs | measured torch eager (measured: torch-eager" in memory
    assert "(provenance: measured); precedence" in memory
    assert cli.ok("audit", OP)["clean"] is True


def test_an_upstream_kernel_comes_before_torch_eager(cli: Cli) -> None:
    ran = _root(cli, [("torch-eager", "[30.0]"), ("upstream", "[12.0, 11.0, 13.0]")])
    cli.ok("target", OP, "--from-spec")
    sheet = _sheet(cli)
    assert (sheet["target_source"], sheet["target_us"]) == ("upstream", 12.0)
    assert "upstream" in ran.read_text("utf-8") and "torch-eager" not in ran.read_text("utf-8")


def test_with_a_budget_no_fallback_runs(cli: Cli) -> None:
    ran = _root(cli, [("torch-eager", "[30.0]")], budget=True)
    cli.ok("target", OP, "--from-spec")
    sheet = _sheet(cli)
    assert (sheet["target_source"], sheet["target_us"]) == ("spec", 5.0)
    assert "target_origin" not in sheet
    assert not ran.exists()


def test_a_failed_reference_run_writes_nothing(cli: Cli) -> None:
    _root(cli, [("torch-eager", "fail")])
    before = snapshot(cli.root)
    result = cli("target", OP, "--from-spec")
    assert result.code == 2, result.stdout
    assert result.json["rule"] == "R3"
    assert "torch-eager reference run failed (runtime: no torch)" in result.json["error"]
    assert snapshot(cli.root) == before


@pytest.mark.parametrize(
    ("fallbacks", "problem"),
    [
        ('[{source: "cuda", command: ["x"]}]', "'cuda' is not one of"),
        ('[{source: upstream, command: ["x"]}, {source: upstream, command: ["y"]}]', "twice"),
        ('[{source: upstream, command: ["{nope}"]}]', "unknown placeholder {nope}"),
    ],
)
def test_a_malformed_fallback_is_named(cli: Cli, fallbacks: str, problem: str) -> None:
    _root(cli, [])
    spec = cli.root / "custom" / OP / "SPEC.md"
    spec.write_text(
        spec.read_text("utf-8").replace("---\n# sm", f"target_fallbacks: {fallbacks}\n---\n# sm"),
        "utf-8",
    )
    result = cli("target", OP, "--from-spec")
    assert result.code == 2
    assert problem in result.json["error"] and "target_fallbacks" in result.json["error"]
