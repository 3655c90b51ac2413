"""The measurement cache: a config is never run twice, a hit keeps the provenance of the run
that produced it, and nothing the cache holds can change a result (issue 19, goal 3)."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from cli_harness import OP, Cli, activate

from ledger.domain.manifest import parse_manifest
from ledger.shell import measure_cache, measure_key, tool_versions
from ledger.shell.runner import CommandRun

# A fake verifier shared by every root of a test (so their templates are equal): it appends a
# line to runs.log beside itself each time it really runs, and its time is a pure function of
# the config, so a cached result and a fresh one must agree.
VERIFIER = """
    import hashlib, json, pathlib, sys, time
    mode, op_dir, config = sys.argv[1], pathlib.Path(sys.argv[2]), json.loads(sys.argv[3])
    with open(pathlib.Path(__file__).with_name("runs.log"), "a") as log:
        log.write(json.dumps(config, sort_keys=True) + "\\n")
    digest = hashlib.sha256((op_dir / "sm_impl.py").read_bytes()).hexdigest()
    tile = config.get("vec_tile_shape", [1, 8, 1, 64])
    volume = tile[0] * tile[1] * tile[2] * tile[3]
    doc = {"config": config, "impl_digest": digest, "tool": "fake-sim", "tool_version": "1",
           "times_us": [round(40960.0 / volume + 1.0, 3)], "layout_exit": 0,
           "outputs": [{"name": "y", "all_close": True, "max_diff": 0.0}]}
    if mode == "compile" and volume < 512:
        doc.update(times_us=[], failure={"category": "compile", "detail": "UB overflow"})
    if mode == "slow":
        time.sleep(0.3)
    if mode == "sleep":
        time.sleep(30)
    print("log line before the result")
    print(json.dumps(doc))
"""


def _spec(script: Path, mode: str = "ok", timeout_s: float = 60) -> str:
    command = [sys.executable, str(script), mode, "{op_dir}", "{config}"]
    return (
        "---\n"
        "p0_shapes: [[32, 32, 1, 256]]\n"
        "perf_target: {time_us: 5.0, metric: max_work_time_us}\n"
        "baseline_config: {vec_tile_shape: [1, 8, 1, 64]}\n"
        "knobs:\n"
        "  vec_tile_shape: {stage: frontend, kind: tile, default: [1, 8, 1, 64]}\n"
        f"verifier: {{command: {json.dumps(command)}, timeout_s: {timeout_s}}}\n"
        "---\n# sm\n"
    )


@pytest.fixture
def verifier(tmp_path: Path) -> Path:
    """The shared fake verifier script."""
    folder = tmp_path / "verifier"
    folder.mkdir()
    script = folder / "verifier.py"
    script.write_text(textwrap.dedent(VERIFIER), "utf-8")
    return script


def _runs(verifier: Path) -> list[dict[str, Any]]:
    log = verifier.with_name("runs.log")
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text("utf-8").splitlines()]


def _op(tmp_path: Path, name: str, verifier: Path, mode: str = "ok", **spec: Any) -> Cli:
    """A root whose op `sm` is activated, its SPEC.md running the shared verifier."""
    cli = Cli(tmp_path / name)
    cli.root.mkdir()
    activate(cli)
    (cli.root / "custom" / OP / "SPEC.md").write_text(_spec(verifier, mode, **spec), "utf-8")
    return cli


def _in_frontend(cli: Cli) -> None:
    cli.ok("target", OP, "--from-spec")
    cli.ok("skill", "load", OP, "pypto-op-perf-tune")
    cli.ok("stage", "enter", OP, "frontend")
    cli.ok("skill", "load", OP, "tune-frontend")
    cli.ok("point", "open", OP, "vec_tile_shape")


def _payload(cli: Cli, kind: str) -> dict[str, Any]:
    return next(e["payload"] for e in reversed(cli.events()) if e["type"] == kind)


# --- the key ---------------------------------------------------------------------------------


def _material(op_dir: Path, config: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    manifest = parse_manifest((op_dir / "SPEC.md").read_text("utf-8"), str(op_dir / "SPEC.md"))
    assert manifest.verifier is not None
    values = {"python": sys.executable, "op_dir": str(op_dir), "config": json.dumps(config)}
    argv = tuple(token.format(**values) for token in manifest.verifier.argv)
    material = measure_key.key_material(
        manifest,
        config,
        argv,
        op_dir=op_dir,
        op=OP,
        python=sys.executable,
        cwd=op_dir.parent.parent,
        env=overrides.get("env"),
    )
    assert material is not None
    return material


def _op_folder(root: Path, verifier: Path) -> Path:
    op_dir = root / "custom" / OP
    op_dir.mkdir(parents=True)
    (op_dir / "SPEC.md").write_text(_spec(verifier), "utf-8")
    (op_dir / "sm_impl.py").write_text("def kernel(x):\n    return x\n", "utf-8")
    (op_dir / "sm_golden.py").write_text("def golden(x):\n    return x\n", "utf-8")
    # What the kernel imports or reads from subfolders of its op folder is part of it too.
    (op_dir / "lib").mkdir()
    (op_dir / "lib" / "tiling.py").write_text("TILE = 64\n", "utf-8")
    (op_dir / "data").mkdir()
    (op_dir / "data" / "inputs.json").write_text("[1]\n", "utf-8")
    return op_dir


def test_the_key_changes_with_everything_that_determines_the_result(
    tmp_path: Path, verifier: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Config, kernel, the op's other sources, SPEC.md's front matter (verifier, P0 shape,
    tolerance), the verifier script, the tool versions and a CANN toolkit each change the key;
    the root the op lives in and the prose of SPEC.md do not."""
    op_dir = _op_folder(tmp_path / "a", verifier)
    config = {"vec_tile_shape": [1, 16, 1, 64]}
    key = measure_key.key_of(_material(op_dir, config))
    other_root = _op_folder(tmp_path / "b", verifier)
    assert measure_key.key_of(_material(other_root, config)) == key
    spelled = {**config}
    assert measure_key.key_of(_material(op_dir, spelled)) == key
    spec = op_dir / "SPEC.md"
    spec.write_text(spec.read_text("utf-8") + "More prose.\n", "utf-8")
    assert measure_key.key_of(_material(op_dir, config)) == key

    changed: dict[str, str] = {}
    changed["config"] = measure_key.key_of(_material(op_dir, {"vec_tile_shape": [1, 8, 1, 64]}))

    def edited(path: Path, old: str, new: str) -> str:
        text = path.read_text("utf-8")
        path.write_text(text.replace(old, new), "utf-8")
        found = measure_key.key_of(_material(op_dir, config))
        path.write_text(text, "utf-8")
        return found

    changed["kernel"] = edited(op_dir / "sm_impl.py", "return x", "return x * 1")
    changed["golden"] = edited(op_dir / "sm_golden.py", "return x", "return -x")
    changed["subfolder module"] = edited(op_dir / "lib" / "tiling.py", "= 64", "= 32")
    changed["data file"] = edited(op_dir / "data" / "inputs.json", "[1]", "[2]")
    changed["p0 shape"] = edited(spec, "[[32, 32, 1, 256]]", "[[64, 32, 1, 256]]")
    changed["verifier"] = edited(spec, "timeout_s: 60", "timeout_s: 61")
    changed["tolerance"] = edited(spec, "---\n# sm", "tolerance: {rtol: 0.1, atol: 0.1}\n---\n# sm")
    changed["script"] = edited(verifier, "import hashlib", "import hashlib  # v2")
    changed["cann"] = measure_key.key_of(
        _material(op_dir, config, env={"ASCEND_HOME_PATH": "/usr/local/Ascend"})
    )
    probe = tool_versions.probe

    def newer_pypto(*args: Any) -> dict[str, Any] | None:
        found = probe(*args)
        return None if found is None else {**found, "pypto": "0.2.1"}

    monkeypatch.setattr(tool_versions, "probe", newer_pypto)
    changed["pypto"] = measure_key.key_of(_material(op_dir, config))
    monkeypatch.setattr(measure_key, "__version__", "9.9.9")
    changed["tune-ledger"] = measure_key.key_of(_material(op_dir, config))
    assert key not in changed.values()
    assert len(set(changed.values())) == len(changed), changed


def test_the_ledgers_own_files_are_not_part_of_the_key(tmp_path: Path, verifier: Path) -> None:
    """The ledger, its lock and quarantine files, MEMORY.md, the report and chart, byte code
    and a file being replaced are written by the ledger or Python, not read by the kernel:
    they leave the key as it is, anywhere in the folder for byte code."""
    op_dir = _op_folder(tmp_path / "a", verifier)
    config = {"vec_tile_shape": [1, 16, 1, 64]}
    key = measure_key.key_of(_material(op_dir, config))
    for name in (
        "events.jsonl",
        "events.jsonl.lock",
        "events.jsonl.quarantine-1",
        "MEMORY.md",
        f"{OP}_tuning_report.md",
        f"{OP}_tuning_report.svg",
        ".MEMORY.md.0123456789ab.tmp",
        "__pycache__/sm_impl.cpython-311.pyc",
        "lib/__pycache__/tiling.cpython-311.pyc",
        ".tune-ledger-cache/views.json",
        # a kept kernel: the ledger's copy of what it measured (the compare's run is then
        # still the baseline's, as the agent's session bench counts on)
        "kernels/" + "0" * 64 + ".py",
    ):
        (op_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (op_dir / name).write_text("written by the ledger or by Python\n", "utf-8")
    assert measure_key.key_of(_material(op_dir, config)) == key
    (op_dir / "lib" / "more.py").write_text("X = 1\n", "utf-8")
    assert measure_key.key_of(_material(op_dir, config)) != key


def test_a_folder_the_key_cannot_vouch_for_is_not_cached(tmp_path: Path, verifier: Path) -> None:
    """A link inside the root is followed into the key; a link leading out of the root, or a
    FIFO, leaves the run uncached (no key) rather than read or hang."""
    op_dir = _op_folder(tmp_path / "a", verifier)
    config = {"vec_tile_shape": [1, 16, 1, 64]}
    shared = tmp_path / "a" / "shared"
    shared.mkdir()
    (shared / "common.py").write_text("A = 1\n", "utf-8")
    (op_dir / "common").symlink_to(shared, target_is_directory=True)
    key = measure_key.key_of(_material(op_dir, config))
    (shared / "common.py").write_text("A = 2\n", "utf-8")
    assert measure_key.key_of(_material(op_dir, config)) != key
    manifest = parse_manifest((op_dir / "SPEC.md").read_text("utf-8"), "SPEC.md")

    def material() -> dict[str, Any] | None:
        return measure_key.key_material(
            manifest, config, (), op_dir=op_dir, op=OP, python=sys.executable,
            cwd=op_dir.parent.parent,
        )  # fmt: skip

    outside = tmp_path / "outside.py"
    outside.write_text("B = 1\n", "utf-8")
    (op_dir / "lib" / "outside.py").symlink_to(outside)
    assert material() is None
    (op_dir / "lib" / "outside.py").unlink()
    os.mkfifo(op_dir / "data" / "pipe")
    assert material() is None


def test_a_changed_module_in_a_subfolder_is_measured_again(tmp_path: Path, verifier: Path) -> None:
    """Issue 26: a changed custom/sm/lib/tiling.py was served the run of the old one, recorded
    as measured. A root with the same files is a hit; one whose subfolder module differs runs
    the verifier again, for the baseline and the candidate."""
    config = '{"vec_tile_shape":[1,16,1,64]}'
    times = []
    for name, tile in (("first", 64), ("same", 64), ("changed", 32)):
        cli = _op(tmp_path, name, verifier)
        (cli.root / "custom" / OP / "lib").mkdir()
        (cli.root / "custom" / OP / "lib" / "tiling.py").write_text(f"TILE = {tile}\n", "utf-8")
        _in_frontend(cli)
        cli.ok("candidate", OP, "--config", config, "--prior", "p")
        times.append(cli.ok("measure", OP)["time_us"])
        cached = "cached" in _payload(cli, "attempt.measured")["origin"]
        assert cached == (name == "same"), name
    assert len(_runs(verifier)) == 4  # first: baseline + candidate; same: none; changed: both
    assert times[0] == times[1] == times[2]  # the fake verifier's time ignores the module


# --- hits and their provenance ----------------------------------------------------------------


def test_a_hit_is_recorded_with_the_provenance_of_the_run_that_produced_it(
    tmp_path: Path, verifier: Path
) -> None:
    """A second root measures the same config from the cache: same result, the first run's
    command, exit code and output digest, marked cached; audit counts it measured, names it."""
    first = _op(tmp_path, "first", verifier)
    _in_frontend(first)
    config = '{"vec_tile_shape":[1,16,1,64]}'
    first.ok("candidate", OP, "--config", config, "--prior", "p")
    done = first.ok("measure", OP)
    second = _op(tmp_path, "second", verifier)
    _in_frontend(second)
    second.ok("candidate", OP, "--config", config, "--prior", "p")
    hit = second.ok("measure", OP)
    assert (hit["verdict"], hit["time_us"]) == (done["verdict"], done["time_us"])
    assert len(_runs(verifier)) == 2  # the baseline and the candidate, each once
    original = _payload(first, "attempt.measured")["origin"]
    cached = _payload(second, "attempt.measured")["origin"]
    assert "cached" not in original
    assert cached["cached"]["host"] and cached["cached"]["at"]
    assert len(cached["cached"]["key"]) == 64
    assert {k: v for k, v in cached.items() if k != "cached"} == original
    # Recorded portable (issue 27.7): no root of either machine; the entry names the run.
    assert "{root}/custom/sm" in cached["command"] and str(first.root) not in cached["command"]
    assert _payload(second, "target.set")["origin"]["cached"]["key"] != cached["cached"]["key"]
    audited = second.ok("audit", OP)
    report = audited["ops"][0]
    assert audited["clean"] is True
    assert report["provenance"]["measured"] == 2  # the baseline and the candidate
    assert len(report["cache_hits"]) == 2
    assert "from the measurement cache" in report["cache_hits"][1]
    assert "cache hit:" in second("audit", OP, as_json=False).stdout


def test_a_deterministic_failure_is_cached_and_a_timeout_is_not(
    tmp_path: Path, verifier: Path
) -> None:
    """A compile failure is what the simulator decided: kept. A timeout depends on the machine
    at that moment: not kept, so the next measure runs the config again."""
    cli = _op(tmp_path, "compile", verifier, mode="compile")
    _in_frontend(cli)
    cli.ok("candidate", OP, "--config", '{"vec_tile_shape":[1,4,1,64]}', "--prior", "p")
    assert cli.ok("measure", OP)["failure"] == "compile"
    again = _op(tmp_path, "again", verifier, mode="compile")
    _in_frontend(again)
    again.ok("candidate", OP, "--config", '{"vec_tile_shape":[1,4,1,64]}', "--prior", "p")
    assert again.ok("measure", OP)["failure"] == "compile"
    assert len(_runs(verifier)) == 2  # the baseline, then the failing config once
    assert "cached" in _payload(again, "attempt.failed")["origin"]
    kept = sorted(Path(measure_cache.folder() or "").rglob("*.json"))

    slow = _op(tmp_path, "slow", verifier, mode="sleep", timeout_s=1)
    # The sleeping verifier cannot measure a baseline: a person lets the sheet be typed.
    slow.ok("policy", OP, "require_measured", "false", "--person", "Ana", "--reason", "no baseline")
    slow.ok("target", OP, "--baseline", "100us", "--shape", "[32,32,1,256]", "--target", "5us",
            "--target-source", "spec")  # fmt: skip
    slow.ok("skill", "load", OP, "pypto-op-perf-tune")
    slow.ok("stage", "enter", OP, "frontend")
    slow.ok("skill", "load", OP, "tune-frontend")
    slow.ok("point", "open", OP, "vec_tile_shape")
    slow.ok("candidate", OP, "--config", '{"vec_tile_shape":[1,32,1,64]}', "--prior", "p")
    assert slow.ok("measure", OP)["failure"] == "timeout"
    assert sorted(Path(measure_cache.folder() or "").rglob("*.json")) == kept  # no timeout
    assert len(kept) == 2  # the baseline and the compile failure


@pytest.mark.parametrize(
    ("exit_code", "output", "timed_out", "signal", "kept"),
    [
        (0, '{"times_us": [1.0], "layout_exit": 0}', False, None, True),
        (1, '{"failure": "compile", "detail": "x"}', False, None, True),
        (1, '{"failure": {"category": "accuracy", "detail": "x"}}', False, None, True),
        (1, '{"failure": "runtime", "detail": "x"}', False, None, False),
        (1, '{"failure": "oom", "detail": "x"}', False, None, False),
        (1, '{"failure": "timeout", "detail": "x"}', False, None, False),
        (1, '{"failure": "weird"}', False, None, False),
        (-9, "", True, None, False),
        (-11, '{"times_us": [1.0], "layout_exit": 0}', False, 11, False),
        (2, "usage: verifier", False, None, False),
        (0, '{"error": "unknown knob"}', False, None, False),
    ],
)
def test_only_what_the_simulator_decided_is_kept(
    exit_code: int, output: str, timed_out: bool, signal: int | None, kept: bool
) -> None:
    """Measurements and compile/accuracy/layout failures are kept; crashes, kills, timeouts,
    resource failures and harness errors are not."""
    run = CommandRun(
        command="v",
        exit_code=exit_code,
        output=output,
        output_digest="0" * 64,
        duration_s=1.0,
        timed_out=timed_out,
    )
    assert measure_cache.cacheable(run, signal) is kept


# --- what cannot be trusted ---------------------------------------------------------------------


def _entry(verifier: Path) -> Path:
    found = sorted(Path(measure_cache.folder() or "").rglob("*.json"))
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("damage", ["truncated", "edited output", "another key's entry", "empty"])
def test_a_damaged_or_mismatched_entry_is_ignored_and_measured_again(
    tmp_path: Path, verifier: Path, damage: str
) -> None:
    """An entry that is torn, edited, or holds another key's run is never trusted: the config
    is measured for real again and the entry rewritten."""
    first = _op(tmp_path, "first", verifier)
    first.ok("target", OP, "--from-spec")
    entry = _entry(verifier)
    data = entry.read_bytes()
    if damage == "truncated":
        entry.write_bytes(data[: len(data) // 2])
    elif damage == "edited output":
        entry.write_bytes(data.replace(b'\\"times_us\\": [81.0]', b'\\"times_us\\": [1.0]'))
        assert entry.read_bytes() != data
    elif damage == "another key's entry":
        record = json.loads(data)
        record["material"]["config"] = {"vec_tile_shape": [1, 1, 1, 1]}
        entry.write_text(json.dumps(record), "utf-8")
    else:
        entry.write_bytes(b"")
    second = _op(tmp_path, "second", verifier)
    assert second.ok("target", OP, "--from-spec")["baseline_us"] == 81.0
    assert len(_runs(verifier)) == 2
    assert "cached" not in _payload(second, "target.set")["origin"]
    assert entry.read_bytes() != b"" and json.loads(entry.read_bytes())["key"] == entry.stem


def test_the_cache_can_be_disabled(
    tmp_path: Path, verifier: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TUNE_LEDGER_MEASURE_CACHE=off: every measure runs the verifier, nothing is kept."""
    monkeypatch.setenv(measure_cache.ENV, "off")
    assert measure_cache.folder() is None
    for name in ("first", "second"):
        cli = _op(tmp_path, name, verifier)
        cli.ok("target", OP, "--from-spec")
        assert "cached" not in _payload(cli, "target.set")["origin"]
    assert len(_runs(verifier)) == 2


def test_a_cache_folder_that_cannot_be_written_only_loses_the_cache(
    tmp_path: Path, verifier: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cache path that is a file (or read-only): measured and recorded as without a cache."""
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("", "utf-8")
    monkeypatch.setenv(measure_cache.ENV, str(blocked / "cache"))
    cli = _op(tmp_path, "root", verifier)
    assert cli.ok("target", OP, "--from-spec")["baseline_us"] == 81.0
    assert "cached" not in _payload(cli, "target.set")["origin"]


def test_the_default_folder_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Without the variable the cache lives under $XDG_CACHE_HOME (else ~/.cache)."""
    environ = {"XDG_CACHE_HOME": str(tmp_path)}
    assert measure_cache.folder(environ) == tmp_path / "tune-ledger" / "measurements"
    home = measure_cache.folder({"HOME": str(tmp_path)})
    assert home is not None and home.parts[-3:] == (".cache", "tune-ledger", "measurements")
    assert measure_cache.folder({measure_cache.ENV: str(tmp_path / "c")}) == tmp_path / "c"


@pytest.mark.slow
def test_a_second_real_pypto_measure_of_the_same_config_is_a_hit(tmp_path: Path) -> None:
    """Real PyPTO: the first run of a config simulates and is kept; the second, even from
    another root, is read from the cache: the same output, no second simulation."""
    pytest.importorskip("pypto")
    import os
    import shutil
    import time

    from ledger.shell import measure, measure_plan
    from ledger.shell.manifest_file import read_manifest

    repo = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(repo)}
    runs = []
    for name in ("first", "second"):
        op_dir = tmp_path / name / "custom" / "softmax"
        shutil.copytree(repo / "custom" / "softmax", op_dir, ignore=shutil.ignore_patterns(
            "events.jsonl*", "MEMORY.md", "*report*", ".tune-*"))  # fmt: skip
        spec = op_dir / "SPEC.md"
        spec.write_text(spec.read_text().replace('"last"', '"graph"'))  # a few seconds a run
        manifest = read_manifest(op_dir)
        config = {"vec_tile_shape": [1, 16, 1, 64], "unroll_list": [1]}
        plan = measure_plan.plan_config(
            manifest, config, "x", None, root=tmp_path / name, op="softmax", python=sys.executable
        )
        started = time.monotonic()
        ran = measure.run(plan, manifest, op="softmax", python=sys.executable, env=env)
        runs.append((ran, time.monotonic() - started))
    (first, _), (second, took) = runs
    assert first.cached is None and second.cached is not None
    assert second.run == first.run and first.run.exit_code == 0
    assert '"times_us"' in first.run.output
    assert took < first.run.duration_s


def test_the_interpreter_is_probed_again_only_when_what_it_read_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe (an interpreter start) runs once per process for one interpreter, adapter and
    environment; a changed adapter source or a package installed into its import folders
    makes the next key probe again, and its answer shows the change."""
    adapter = tmp_path / "site" / "fake_adapter"
    adapter.mkdir(parents=True)
    (adapter / "__init__.py").write_text("VERSION = 1\n", "utf-8")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    calls = []
    real = tool_versions._run_probe

    def counted(*args: Any) -> dict[str, Any] | None:
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(tool_versions, "_probed", {})
    monkeypatch.setattr(tool_versions, "_run_probe", counted)
    first = tool_versions.probe(sys.executable, "fake_adapter", tmp_path, env)
    again = tool_versions.probe(sys.executable, "fake_adapter", tmp_path, env)
    assert first is not None and again == first and "watch" not in first
    assert len(calls) == 1
    (adapter / "__init__.py").write_text("VERSION = 2  # a changed source\n", "utf-8")
    changed = tool_versions.probe(sys.executable, "fake_adapter", tmp_path, env)
    assert len(calls) == 2
    assert changed is not None and changed["adapter"] != first["adapter"]
    (tmp_path / "site" / "newpkg-1.0.dist-info").mkdir()  # what an install does
    tool_versions.probe(sys.executable, "fake_adapter", tmp_path, env)
    assert len(calls) == 3
