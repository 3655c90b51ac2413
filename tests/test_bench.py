"""A quick smoke of tools/bench: the synthetic campaigns obey the protocol and end where the
benches need them, the floors do their work, a guardrail judges its ratio, and every guardrail
but the real campaigns runs on small ledgers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_harness import run_main

from ledger.log.file_store import FileStore
from ledger.shell.api import OpLedger
from tools.bench import campaign, core, ledgers, run
from tools.bench.timing import Guardrail


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Generated campaigns go to a cache of this test's own."""
    folder = tmp_path / "cache"
    monkeypatch.setattr(ledgers, "CACHE", folder)
    return folder


@pytest.mark.parametrize("events", [100, 400])
def test_a_campaign_audits_clean_and_ends_where_every_size_ends(
    cache: Path, tmp_path: Path, events: int
) -> None:
    """Every rule held (audit is clean), every result is labelled synthetic, and the campaign
    stands in incore with a point open, nothing pending, a best and the target unmet."""
    root = ledgers.copy_of(events, tmp_path)
    audit = run_main(["--root", str(root), "--json", "audit", ledgers.OP])
    assert audit.code == 0 and audit.json["clean"], audit.stdout
    log = FileStore(ledgers.ledger_file(root)).read()
    # past the size: the last attempt, closing its point, opening the next, the policy
    assert events <= len(log.events) <= events + 8
    origins = [e.data["origin"] for e in log.events if isinstance(e.data.get("origin"), dict)]
    assert origins and {o["tool"] for o in origins} == {"bench-synthetic"}
    state = OpLedger(root, ledgers.OP).load().state
    assert (state.stage, state.pending, state.stopped) == ("incore", None, None)
    assert state.open_point is not None and state.points[state.open_point].attempts == []
    assert state.best is not None and state.best.time_us > ledgers.TARGET_US


def test_a_cached_campaign_is_reused_and_each_copy_is_fresh(cache: Path, tmp_path: Path) -> None:
    """The second copy comes from the cache (not generated again) into a folder of its own."""
    first = ledgers.copy_of(100, tmp_path)
    marker = ledgers.cache_root(100) / "done"
    stamp = marker.stat().st_mtime_ns
    second = ledgers.copy_of(100, tmp_path)
    assert first != second and marker.stat().st_mtime_ns == stamp
    assert ledgers.ledger_file(first).read_bytes() == ledgers.ledger_file(second).read_bytes()


def test_the_verifying_floor_checks_every_content_id(cache: Path, tmp_path: Path) -> None:
    """It keeps every line's payload, and an edited line fails it."""
    path = ledgers.ledger_file(ledgers.copy_of(100, tmp_path))
    lines = path.read_bytes().splitlines(keepends=True)
    assert core.verifying_floor(path) == [json.loads(line)["payload"] for line in lines]
    lines[7] = lines[7].replace(b'"lamport":8', b'"lamport":9')
    path.write_bytes(b"".join(lines))
    with pytest.raises(ValueError, match="line 8 does not verify"):
        core.verifying_floor(path)


@pytest.mark.parametrize(
    ("at_most", "limit", "passed"), [(True, 2.0, True), (True, 1.5, False), (False, 0.5, True)]
)
def test_a_guardrail_judges_the_ratio_of_the_medians(
    at_most: bool, limit: float, passed: bool
) -> None:
    """value / reference for an upper limit, reference / value for a lower one (a speed)."""
    guardrail = Guardrail(
        name="g", what="", value_is="", reference_is="", value=[1.0, 2.0, 9.0],
        reference=[1.0, 1.0, 5.0], limit=limit, at_most=at_most,
    )  # fmt: skip
    assert guardrail.ratio == (2.0 if at_most else 0.5)
    assert guardrail.passed is passed
    assert guardrail.report()["value"] == {"min": 1.0, "median": 2.0, "max": 9.0}
    assert guardrail.line().startswith("PASS" if passed else "FAIL")


def test_the_append_floor_writes_the_very_bytes_the_store_appended(
    cache: Path, tmp_path: Path
) -> None:
    """Each timed append is matched by one floor write of the same bytes."""
    root = ledgers.copy_of(100, tmp_path)
    before = ledgers.ledger_file(root).stat().st_size
    guardrail = core.append(root, 100, 4)
    assert len(guardrail.value) == len(guardrail.reference) >= 4
    written = ledgers.ledger_file(root).read_bytes()[before:]
    assert (root / "custom" / ledgers.OP / "floor.bin").read_bytes() == written


def test_a_process_is_timed_by_wall_and_cpu_and_must_succeed() -> None:
    """`process_times` gives a process's wall and CPU time (user + sys); a failing process is
    an error, not a sample."""
    import sys

    from tools.bench.timing import process_times

    wall, cpu = process_times([sys.executable, "-c", "sum(range(3 * 10**6))"])
    assert cpu > 0 and wall > 0
    with pytest.raises(RuntimeError, match="exited 3"):
        process_times([sys.executable, "-c", "raise SystemExit(3)"])


@pytest.mark.slow
def test_every_guardrail_but_the_campaigns_runs_on_small_ledgers(
    cache: Path, tmp_path: Path
) -> None:
    """Replay, append, every command as a process, the MCP step: each a guardrail with samples
    on both sides (the campaigns need real PyPTO runs: skipped here)."""
    pytest.importorskip("mcp")
    plan = run.Plan(
        replay=2, appends=3, command_rounds=1, mcp_steps=2, autopilot_attempts=0,
        agent_tries=0, replay_sizes=(100,), append_size=100, command_sizes=(100, 200),
        mcp_size=100,
    )  # fmt: skip
    found, skipped = run.guardrails(plan, tmp_path / "scratch", False, lambda _m: None)
    names = [g.name for g in found]
    commands = ("status", "resume", "log", "note", "try", "verify", "fail", "abandon")
    assert names == [
        "replay_100",
        "append",
        *(f"{c}_{kind}" for c in commands for kind in ("vs_click", "growth")),
        "mcp_step",
    ]
    assert set(skipped) == {"campaign_autopilot", "campaign_agent_mcp"}
    for guardrail in found:
        assert guardrail.value and guardrail.reference, guardrail.name
        assert min(guardrail.reference) > 0, guardrail.name
        json.dumps(guardrail.report())
        if guardrail.name.endswith("_vs_click"):  # CPU time beside wall time
            assert guardrail.extra["cpu_best_ratio"] > 0, guardrail.name


@pytest.mark.slow
def test_the_bench_runs_as_a_module_from_the_repository_root(tmp_path: Path) -> None:
    """`python -m tools.bench.ledgers N` imports the bench as a package and says where the
    campaign it generated is."""
    import subprocess
    import sys

    env = {**os.environ, "TUNE_LEDGER_BENCH_CACHE": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "tools.bench.ledgers", "100"],
        cwd=Path(__file__).resolve().parents[1],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["events"] == 100 and Path(found["root"]).parent == tmp_path


@pytest.mark.slow
def test_the_agent_sessions_ledger_time_leaves_out_the_runs_it_made(tmp_path: Path) -> None:
    """A real (one-attempt) MCP session on softmax: the compare, layout check and measurement
    are runs of this session (the baseline is the compare's cached run), and the ledger's time
    is what remains of the calls."""
    pytest.importorskip("pypto")
    pytest.importorskip("mcp")
    guardrail = campaign.agent_over_mcp(tmp_path, 1, lambda _m: None)
    (ledger_s,), (wall_s,) = guardrail.value, guardrail.reference
    assert guardrail.extra["runs"] == 3
    assert 0 < ledger_s < guardrail.extra["calls_s"] < wall_s
    assert guardrail.extra["calls_s"] - guardrail.extra["runs_s"] == pytest.approx(
        ledger_s, abs=0.01
    )
