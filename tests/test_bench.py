"""The bench tools: generated campaigns are legal ledgers, and every figure has its keys."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ledger.log import verification
from ledger.log.store import MemoryStore
from ledger.shell import audit
from tools.bench import floors, generate, ledgers, run
from tools.bench.append import bench_append
from tools.bench.autopilot_share import autopilot_share
from tools.bench.campaign import SYNTHETIC_HOST
from tools.bench.commands import READS, WRITES, bench_commands
from tools.bench.execute import bench_execute
from tools.bench.incremental import bench_incremental
from tools.bench.ledgers import count_lines, ledger_file
from tools.bench.memory import bench_memory
from tools.bench.optuna_compare import bench_optuna
from tools.bench.replay import bench_replay
from tools.bench.startup import bench_startup

FIGURE_KEYS = {
    "what",
    "value",
    "reference",
    "reference_is",
    "unit",
    "ratio",
    "ratio_is",
    "goal",
    "met",
    "noise",
}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cached 400-event campaign under a temporary cache."""
    root, _meta = ledgers.cached_ledger(400, seed=7, cache=tmp_path_factory.mktemp("cache"))
    return root


def test_a_generated_campaign_reads_verifies_and_audits_clean() -> None:
    data = generate.generate_bytes(seed=3, events=600)
    log = MemoryStore(data).read()
    assert len(log.events) >= 600 and log.torn is None
    verified = verification.verify(data)
    assert verified.findings == ()
    assert audit.schema_findings(log.events) == []
    assert audit.legality_findings(log.events) == []
    kinds = {e.data.get("verdict") for e in log.events if e.type == "attempt.verdict"}
    assert {"adopt", "rollback", "no-gain"} <= kinds
    assert {e.type for e in log.events} >= {"attempt.failed", "point.closed", "stage.exited"}


def test_every_event_is_labelled_synthetic() -> None:
    log = MemoryStore(generate.generate_bytes(seed=3, events=300)).read()
    assert all(e.provenance["host"] == SYNTHETIC_HOST for e in log.events)
    origins = [e.data["origin"] for e in log.events if e.type == "attempt.measured"]
    assert origins and all(o["tool"] == SYNTHETIC_HOST for o in origins)


def test_the_fast_path_writes_the_bytes_the_store_writes() -> None:
    store = MemoryStore()
    through_store = generate.generate_bytes(seed=5, events=300, via_store=store)
    assert generate.generate_bytes(seed=5, events=300) == through_store


def test_the_same_seed_gives_the_same_bytes_and_another_seed_does_not() -> None:
    first = generate.generate_bytes(seed=11, events=200)
    assert generate.generate_bytes(seed=11, events=200) == first
    assert generate.generate_bytes(seed=12, events=200) != first


def test_a_cached_ledger_is_reused_not_regenerated(tmp_path: Path) -> None:
    root, meta = ledgers.cached_ledger(250, seed=2, cache=tmp_path)
    path = ledger_file(root)
    stamp = path.stat().st_mtime_ns
    again, meta_again = ledgers.cached_ledger(250, seed=2, cache=tmp_path)
    assert (again, meta_again) == (root, meta)
    assert path.stat().st_mtime_ns == stamp
    assert meta["events"] == count_lines(path) and meta["bytes"] == path.stat().st_size


def test_replay_and_append_figures_have_their_keys(tiny: Path, tmp_path: Path) -> None:
    replayed = bench_replay(ledger_file(tiny), repeats=1, events=400)
    appended = bench_append(tmp_path, seed=7, events=300, repeats=2)
    executed = bench_execute(tmp_path, seed=7, events=300, repeats=2)
    for figure in (replayed, appended, executed):
        assert set(figure) >= FIGURE_KEYS
        assert figure["value"] > 0 and figure["reference"] > 0 and figure["ratio"] > 0
        assert set(figure["noise"]["value"]) == {"min", "median", "max", "n"}
    assert 1 <= appended["batch_events"]["min"] <= appended["batch_events"]["max"] <= 4
    for figure in (replayed, appended):
        assert figure["floor"]["value"] > 0 and figure["floor"]["ratio"] > 0
        floor = figure["floor"]
        assert floor["met"] == (
            floor["product_ratio"] >= 0.75 if figure is replayed else floor["product_ratio"] <= 1.2
        )


def test_the_replay_floor_verifies_ids_and_keeps_every_payload(tmp_path: Path) -> None:
    data = generate.generate_bytes(seed=3, events=300)
    path = tmp_path / "events.jsonl"
    path.write_bytes(data)
    assert len(floors.verifying_replay(path)) == data.count(b"\n")
    lines = data.split(b"\n")
    lines[100] = lines[100].replace(b'"schema":1', b'"schema":2')
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(ValueError, match="does not verify"):
        floors.verifying_replay(path)


def test_the_append_floor_writes_the_very_bytes_the_store_wrote(tmp_path: Path) -> None:
    data = generate.generate_bytes(seed=3, events=300)
    append = floors.DurableAppend(tmp_path / "floor.jsonl")
    try:
        for chunk in (data[: data.index(b"\n") + 1], data[data.index(b"\n") + 1 :]):
            assert append(floors.records_of(chunk)) > 0
    finally:
        append.close()
    assert (tmp_path / "floor.jsonl").read_bytes() == data


def test_process_figures_have_their_keys(tiny: Path) -> None:
    startup = bench_startup(tiny, repeats=1)
    assert set(startup) >= FIGURE_KEYS
    assert startup["import_costs"]["total_ms"] > 0
    assert "click" in startup["import_costs"]["self_ms_by_package"]
    incremental = bench_incremental(tiny, tiny, repeats=1)
    assert set(incremental) >= FIGURE_KEYS


@pytest.mark.slow
def test_every_command_figure_has_its_keys(tiny: Path) -> None:
    """Every counted command, as a process, against click; writes with their peak RSS."""
    found = bench_commands(tiny, tiny, 1, lambda _message: None)
    for name in [*READS, *WRITES]:
        assert set(found[name]["vs_click"]) >= FIGURE_KEYS
        assert set(found[name]["growth"]) >= FIGURE_KEYS
        assert found[name]["vs_click"]["cpu_s"]["small"]["min"] > 0
        assert ("peak_rss" in found[name]) == (name not in READS)
    assert found["note"]["peak_rss"]["value"] > 5  # MiB: a Python process at least
    floor = found["floor"]["imports_and_schema"]
    assert floor["wall"]["min"] > 0 and floor["ratio_vs_click"] > 0
    assert found["note"]["vs_click"]["floor"]["command_over_floor"] > 0


def test_memory_figures_report_size_time_and_change(tmp_path: Path) -> None:
    root, _meta = ledgers.cached_ledger(0, seed=4, cache=tmp_path, attempts=60)
    figures = bench_memory(ledger_file(root), marks=(10, 60), repeats=1)
    assert set(figures) == {"render_time", "size", "changed_per_attempt"}
    per_size = figures["render_time"]["per_size"]
    assert set(per_size) == {"10", "60"}
    assert per_size["60"]["changed_by_next_attempt"]["lines"] > 0


def test_the_autopilot_share_is_a_todo_until_a_log_is_given(tmp_path: Path) -> None:
    assert autopilot_share(None)["status"] == "todo"
    log = tmp_path / "autopilot.log"
    timing = {
        "wall_s": 100.0,
        "ledger_s": 2.0,
        "pypto_s": 95.0,
        "pypto_runs": 40,
        "ledger_share": 0.02,
    }
    log.write_text("attempt 1 ...\n" + json.dumps({"op": "x", "timing": timing}) + "\n")
    share = autopilot_share(log)
    assert share["ratio"] == 0.02 and share["value"] == 2.0 and share["met"] is True
    log.write_text(json.dumps({"timing": {**timing, "ledger_s": 6.0, "ledger_share": 0.06}}))
    assert autopilot_share(log)["met"] is False


def test_the_optuna_anchor_holds_the_same_trials(tiny: Path, tmp_path: Path) -> None:
    pytest.importorskip("optuna")
    from tools.bench import optuna_anchor

    journal, count = optuna_anchor.journal_for(ledger_file(tiny), tmp_path)
    trials = optuna_anchor.load_trials(journal)
    assert len(trials) == count > 0
    figures = bench_optuna(tiny, tmp_path, repeats=1)
    assert set(figures["replay"]) >= FIGURE_KEYS and set(figures["process"]) >= FIGURE_KEYS


def test_goals_are_collected_from_nested_figures() -> None:
    figures = {
        "a": {"goal": "≤ 1", "met": True},
        "memory": {"size": {"goal": "≤ 1", "met": False}},
        "todo": {"value": None},
        "replay": {"goal": "≥ 0.5", "met": False, "floor": {"goal": "≥ 0.75", "met": True}},
    }
    assert run.goals_met(figures) == {
        "a": True,
        "memory.size": False,
        "replay": False,
        "replay.floor": True,
    }


def test_the_bench_runs_as_a_module_from_the_repository_root(tmp_path: Path) -> None:
    """`python -m tools.bench.ledgers` imports the bench as a package and prints the ledger."""
    repo = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-m", "tools.bench.ledgers", "--events", "200", "--cache", str(tmp_path)],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed["events"] >= 200 and ledger_file(Path(printed["root"])).is_file()
    usage = subprocess.run(
        [sys.executable, "-m", "tools.bench.run", "--help"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert usage.returncode == 0 and "--autopilot-log" in usage.stdout


def test_a_change_to_the_campaign_model_makes_new_ledgers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache key covers the modules that decide the bytes, campaign.py among them."""
    assert {p.name for p in ledgers._GENERATOR} == {"campaign.py", "generate.py", "events.py"}
    copies = []
    for path in ledgers._GENERATOR:
        copy = tmp_path / path.name
        copy.write_bytes(path.read_bytes())
        copies.append(copy)
    monkeypatch.setattr(ledgers, "_GENERATOR", tuple(copies))
    before = ledgers.code_digest()
    campaign = tmp_path / "campaign.py"
    campaign.write_text(campaign.read_text() + "\nBASELINE_US = 90.0\n")
    assert ledgers.code_digest() != before
