"""The ledger core benchmark: every figure beside its reference, printed as one JSON report.

    python tools/bench/run.py            # full: 10k, 100k and 1M events (the 1M ledger is
                                          # generated once, then cached under /tmp)
    python tools/bench/run.py --quick    # the same on smaller sizes, in under two minutes

Each figure has a `value`, a `reference` (the anchor it is measured against), their `ratio`,
the `goal` for the ratio and whether it is `met`, with units named and the noise of both sides
(min, median, max over the repeats). Ledgers are synthetic (tools/bench/generate.py) and live
under /tmp only; nothing is written inside the repository.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import gc
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # run as a script: make `tools.bench` importable
    sys.path.insert(0, str(REPO))

from ledger import __version__  # noqa: E402
from ledger.domain.replay import evolve  # noqa: E402
from ledger.domain.state import State  # noqa: E402
from ledger.errors import RetryRefusal  # noqa: E402
from ledger.log.store import FileStore  # noqa: E402
from ledger.projections import memory_file  # noqa: E402
from ledger.shell.api import OpLedger  # noqa: E402
from stages.policy import effective_policy  # noqa: E402
from tools.bench import floors, generate  # noqa: E402
from tools.bench.generate import DEFAULT_CACHE, OP  # noqa: E402

# A figure's sides are timed alternately, so that drift (thermal, other load) hits both alike.


def summary(samples: Sequence[float]) -> dict[str, Any]:
    """min / median / max of repeated samples, and how many there were."""
    return {
        "min": min(samples),
        "median": statistics.median(samples),
        "max": max(samples),
        "n": len(samples),
    }


def figure(
    *,
    value: float | None,
    reference: float | None,
    unit: str,
    ratio: float | None,
    ratio_is: str,
    goal: str,
    met: bool | None,
    what: str,
    reference_is: str,
    noise: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """One figure of the report."""
    return {
        "what": what,
        "value": _round(value),
        "reference": _round(reference),
        "reference_is": reference_is,
        "unit": unit,
        "ratio": _round(ratio),
        "ratio_is": ratio_is,
        "goal": goal,
        "met": met,
        "noise": noise or {},
        **extra,
    }


def _round(value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return value
    return float(f"{value:.6g}")


def alternate(*measures: Callable[[], float], repeats: int) -> list[list[float]]:
    """Time measurements in turn, round after round; each callable returns the seconds it
    measured. The samples of each, in order."""
    samples: list[list[float]] = [[] for _ in measures]
    for _ in range(repeats):
        for measure, taken in zip(measures, samples, strict=True):
            taken.append(measure())
    return samples


def timed(fn: Callable[[], Any]) -> float:
    """The wall time of one call, in seconds."""
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def ledger_file(root: Path) -> Path:
    """The bench op's ledger under `root`."""
    return root / "custom" / OP / "events.jsonl"


# --- 2. full replay vs a bare orjson parse ----------------------------------------------------


def parse_only(path: Path) -> int:
    """The anchor: read the file and orjson-parse every line, nothing else."""
    import orjson

    count = 0
    loads = orjson.loads
    for line in path.read_bytes().split(b"\n"):
        if line:
            loads(line)
            count += 1
    return count


def full_replay(path: Path) -> State:
    """What every command does first (OpLedger.load): verify every line's id and place in the
    chain, and fold each event into the state as it is verified."""
    state = State()
    FileStore(path).stream(partial(evolve, state))  # a new store: nothing cached
    return state


def bench_replay(path: Path, repeats: int, events: int) -> dict[str, Any]:
    """Full replay vs the bare parse loop over the same file (goal: ratio ≥ 0.5), with the
    floor any verifying replay in Python stays above (tools/bench/floors.py)."""

    def run_replay() -> float:
        return timed(lambda: full_replay(path))

    def run_parse() -> float:
        return timed(lambda: parse_only(path))

    def run_floor() -> float:
        return timed(lambda: floors.verifying_replay(path))

    run_parse()  # warm the page cache once, for both sides
    replay_s, parse_s, floor_s = alternate(run_replay, run_parse, run_floor, repeats=repeats)
    value, reference = statistics.median(replay_s), statistics.median(parse_s)
    floor = statistics.median(floor_s)
    # Where the time goes, once: verification alone (ids, chain, batches; no fold).
    verify_s = timed(lambda: FileStore(path).stream(lambda _event: None))
    gc.collect()
    return figure(
        what=f"FileStore.stream (every id and chain link verified) folding each event into "
        f"the state (what OpLedger.load does), {events} events",
        value=value,
        reference=reference,
        unit="s",
        ratio=reference / value,
        ratio_is="parse_time / replay_time",
        goal="≥ 0.5",
        met=reference / value >= 0.5,
        reference_is="bare orjson.loads over the same file's lines",
        noise={
            "value": summary(replay_s),
            "reference": summary(parse_s),
            "floor": summary(floor_s),
        },
        events=events,
        bytes=path.stat().st_size,
        floor={
            "value": _round(floor),
            "ratio": _round(reference / floor),
            "is": "the barest verifying replay (floors.verifying_replay: content id, one "
            "parse, one Lamport check, one dict insert and one handler call per "
            "event, payloads kept); no replay can reach a better ratio than this",
        },
        per_event_us={
            "replay": _round(value / events * 1e6),
            "parse": _round(reference / events * 1e6),
            "floor": _round(floor / events * 1e6),
            "of_which_verify": _round(verify_s / events * 1e6),
            "of_which_fold": _round((value - verify_s) / events * 1e6),
        },
    )


# --- 3. one command's durable append ----------------------------------------------------------


class Continuation:
    """A copy of a generated campaign in a scratch folder, driven on command by command."""

    def __init__(self, scratch: Path, seed: int, events: int) -> None:
        self.root = scratch
        path = ledger_file(scratch)
        path.parent.mkdir(parents=True)
        with open(path, "wb") as out:
            # Planned ten times longer, so the ledger ends mid-campaign (in a config stage),
            # where most commands are: candidate, try --set, verify, fail.
            self.driver = generate.Driver(seed, events * 10, generate.SealSink(out))
            self.driver.run(events)
        self.path = path

    def next_drafts(self) -> list[Any]:
        """The drafts of the campaign's next command that R9 does not refuse."""
        while True:
            drafts = self.driver.drafts(self.driver.next_command())
            if drafts is not None:
                return drafts
            self.driver._reply = None


def bare_write(fd: int, data: bytes) -> float:
    """The anchor: os.write + os.fsync of the same bytes, on an open file."""
    started = time.perf_counter()
    os.write(fd, data)
    os.fsync(fd)
    return time.perf_counter() - started


def bench_append(scratch: Path, seed: int, events: int, repeats: int) -> dict[str, Any]:
    """FileStore.append of the next command's 1-3 events vs os.write + os.fsync (≤ 1.3×)."""
    run = Continuation(scratch / "append", seed, events)
    store = FileStore(run.path)
    # As OpLedger.execute does: read (verify and replay), decide, then append after the tip
    # it read; each command here then starts from the tip the previous append returned.
    tip = store.stream(lambda _event: None)
    anchor = run.path.with_name("anchor.bin")
    shutil.copyfile(run.path, anchor)
    fd = os.open(anchor, os.O_WRONLY | os.O_APPEND)
    floor = floors.DurableAppend(run.path.with_name("floor.jsonl"))
    store_s: list[float] = []
    bare_s: list[float] = []
    floor_s: list[float] = []
    sizes: list[int] = []
    try:
        for _ in range(repeats):
            drafts = run.next_drafts()
            size = run.path.stat().st_size
            started = time.perf_counter()
            result = store.append(drafts, expected_head=run.driver.sink.head, tip=tip)
            store_s.append(time.perf_counter() - started)
            tip = result.tip
            run.driver.sink.head = result.head
            run.driver.land(result.events)
            with open(run.path, "rb") as f:
                f.seek(size)
                written = f.read()
            sizes.append(len(result.events))
            bare_s.append(bare_write(fd, written))
            floor_s.append(floor(floors.records_of(written)))
    finally:
        os.close(fd)
        floor.close()
    value, reference = statistics.median(store_s), statistics.median(bare_s)
    floor_median = statistics.median(floor_s)
    return figure(
        what=f"FileStore.append of one command's batch (lock, check the tip, seal, write, "
        f"fsync) on "
        f"a {events}-event ledger",
        value=value,
        reference=reference,
        unit="s",
        ratio=value / reference,
        ratio_is="append_time / bare_write_time",
        goal="≤ 1.3",
        met=value / reference <= 1.3,
        reference_is="os.write + os.fsync of the same bytes to a file in the same directory",
        noise={"value": summary(store_s), "reference": summary(bare_s), "floor": summary(floor_s)},
        floor={
            "value": _round(floor_median),
            "ratio": _round(floor_median / reference),
            "is": "the barest locked, canonical, durable append of the same records "
            "(floors.DurableAppend: flock, a size check, each payload and the shared "
            "provenance in the standard library's canonical JSON inside the fixed "
            "envelope, sha256, one write, fsync); no append that writes canonical "
            "bytes under a lock can reach a better ratio than this",
        },
        batch_events={"min": min(sizes), "max": max(sizes)},
        events=events,
    )


def bench_execute(scratch: Path, seed: int, events: int, repeats: int) -> dict[str, Any]:
    """The whole OpLedger.execute path (load, decide, append, render) vs os.write + fsync."""
    run = Continuation(scratch / "execute", seed, events)
    OpLedger(run.root, OP).render_memory()  # as after the last real command
    anchor = run.path.with_name("anchor.bin")
    shutil.copyfile(run.path, anchor)
    fd = os.open(anchor, os.O_WRONLY | os.O_APPEND)
    exec_s: list[float] = []
    bare_s: list[float] = []
    try:
        while len(exec_s) < repeats:
            command = run.driver.next_command()
            size = run.path.stat().st_size
            ledger = OpLedger(run.root, OP)  # a new one per command, as the CLI makes
            started = time.perf_counter()
            try:
                outcome = ledger.execute(command, command_line="tune-ledger (bench)")
            except RetryRefusal:
                run.driver._reply = None
                continue
            exec_s.append(time.perf_counter() - started)
            run.driver.land(outcome.events)
            with open(run.path, "rb") as f:
                f.seek(size)
                bare_s.append(bare_write(fd, f.read()))
    finally:
        os.close(fd)
    value, reference = statistics.median(exec_s), statistics.median(bare_s)
    return figure(
        what=f"OpLedger.execute of one command (load, decide, append, render MEMORY.md) on a "
        f"{events}-event ledger",
        value=value,
        reference=reference,
        unit="s",
        ratio=value / reference,
        ratio_is="execute_time / bare_write_time",
        # No goal of its own: the issue's ≤ 1.3× is the append's (figure `append`); a new
        # OpLedger per command (as the CLI makes) verifies and replays the whole ledger first.
        goal="(none: shown beside `append`; grows with the ledger)",
        met=None,
        reference_is="os.write + os.fsync of the same bytes to a file in the same directory",
        noise={"value": summary(exec_s), "reference": summary(bare_s)},
        events=events,
    )


# --- 4. startup, and 5. the incremental cost of a long ledger -----------------------------------


def cli_command() -> list[str]:
    """How to run the console script with this interpreter."""
    script = Path(sys.executable).with_name("tune-ledger")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "ledger"]


# Processes run with compiled modules, as an installed tool has them: a shell that sets
# PYTHONDONTWRITEBYTECODE would make every side recompile its sources on every start (the
# first, unmeasured run of each side writes the .pyc files).
PROCESS_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def process_time(
    argv: Sequence[str], cwd: Path | None = None, env: dict[str, str] | None = None
) -> float:
    """The wall time of one process, start to exit; it must succeed."""
    started = time.perf_counter()
    subprocess.run(
        argv,
        cwd=cwd,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=PROCESS_ENV if env is None else env,
    )
    return time.perf_counter() - started


# `status` with its view cache bypassed: what a miss costs (the first status after a change).
UNCACHED = {**PROCESS_ENV, "TUNE_LEDGER_NO_CACHE": "1"}


def status_argv(root: Path) -> list[str]:
    """`tune-ledger --root ROOT --json status bench`."""
    return [*cli_command(), "--root", str(root), "--json", "status", OP]


def import_costs(root: Path, top: int = 12) -> dict[str, Any]:
    """What `status` imports (python -X importtime): total, and self time by top package."""
    code = "import sys; from ledger.cli import main; sys.argv[0] = 'tune-ledger'; main()"
    done = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-c",
            code,
            "--root",
            str(root),
            "--json",
            "status",
            OP,
        ],
        capture_output=True,
        text=True,
        check=True,
        env=PROCESS_ENV,
    )
    by_package: dict[str, float] = {}
    modules = []
    total = 0.0
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cumulative_us, name = line[len("import time:") :].split("|")
        depth = (len(name) - len(name.lstrip()) - 1) // 2
        module = name.strip()
        if depth == 0:
            total += int(cumulative_us) / 1000
        package = module.split(".")[0]
        by_package[package] = by_package.get(package, 0.0) + int(self_us) / 1000
        modules.append((int(cumulative_us) / 1000, module))
    ranked = sorted(by_package.items(), key=lambda item: -item[1])[:top]
    heaviest = sorted(modules, reverse=True)[:top]
    return {
        "total_ms": round(total, 1),
        "self_ms_by_package": {name: round(ms, 1) for name, ms in ranked},
        "heaviest_cumulative_ms": {name: round(ms, 1) for ms, name in heaviest},
    }


def bench_startup(root: Path, repeats: int) -> dict[str, Any]:
    """`tune-ledger --json status` on a small ledger vs `python -c "import click"` (≤ 2×)."""
    status = status_argv(root)
    click = [sys.executable, "-c", "import click"]
    process_time(status)
    status_s, click_s = alternate(
        lambda: process_time(status), lambda: process_time(click), repeats=repeats
    )
    value, reference = min(status_s), min(click_s)
    uncached_s = [process_time(status, env=UNCACHED) for _ in range(repeats)]
    return figure(
        what="tune-ledger --json status OP on a small ledger, whole process (best of N; the "
        "first run wrote the view cache, so these are hits)",
        uncached_s=_round(min(uncached_s)),
        value=value,
        reference=reference,
        unit="s",
        ratio=value / reference,
        ratio_is="status_time / import_click_time",
        goal="≤ 2",
        met=value / reference <= 2,
        reference_is='python -c "import click" (same interpreter)',
        noise={"value": summary(status_s), "reference": summary(click_s)},
        events=_count_lines(ledger_file(root)),
        import_costs=import_costs(root),
    )


def bench_incremental(small: Path, big: Path, repeats: int) -> dict[str, Any]:
    """`status` on a long ledger vs on a 1k-event one (goal ≤ 2×: cost must not grow with n)."""
    small_argv, big_argv = status_argv(small), status_argv(big)
    first_big = process_time(big_argv)  # the first run may build a snapshot
    process_time(small_argv)
    big_s, small_s = alternate(
        lambda: process_time(big_argv), lambda: process_time(small_argv), repeats=repeats
    )
    value, reference = min(big_s), min(small_s)
    big_events, small_events = _count_lines(ledger_file(big)), _count_lines(ledger_file(small))
    return figure(
        what=f"tune-ledger --json status OP on a {big_events}-event ledger (best of N)",
        value=value,
        reference=reference,
        unit="s",
        ratio=value / reference,
        ratio_is="status_time(big) / status_time(small)",
        goal="≤ 2",
        met=value / reference <= 2,
        reference_is=f"the same on a {small_events}-event ledger",
        noise={"value": summary(big_s), "reference": summary(small_s)},
        first_run_s=_round(first_big),
        events=big_events,
        reference_events=small_events,
        snapshot=_snapshot_note(big),
    )


def _snapshot_note(root: Path) -> str:
    entry = ledger_file(root).parent / ".tune-ledger-cache" / "views.json"
    if entry.is_file():
        return f"status served from the view cache {entry} (the first run wrote it)"
    return "no view cache (every status replayed the whole ledger)"


def _count_lines(path: Path) -> int:
    with open(path, "rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))


# --- 6. MEMORY.md ------------------------------------------------------------------------------


def _states_at(path: Path, marks: Sequence[int]) -> Iterator[tuple[int, State, State]]:
    """For each mark m: the state once m - 1 attempts ended, and once m attempts ended."""
    log = FileStore(path).read()
    state = State()
    wanted = sorted(marks)
    before: State | None = None
    for event in log.events:
        evolve(state, event)
        if state.pending is not None or not wanted:
            continue
        ended = len(state.attempts)
        if ended == wanted[0] - 1 and before is None:
            before = _copy(state)
        elif ended >= wanted[0] and before is not None:
            yield wanted.pop(0), before, _copy(state)
            before = None
        if not wanted:
            return


def _copy(state: State) -> State:
    import copy

    return copy.deepcopy(state)


def _render(state: State) -> str:
    position = memory_file.Position(events=state.event_count, last=state.last_event or "")
    return memory_file.render_memory(None, state, effective_policy(state), position)


def changed_bytes(before: str, after: str) -> tuple[int, int]:
    """Lines and bytes (UTF-8) that differ between two renderings (removed + added)."""
    lines = bytes_ = 0
    for line in difflib.unified_diff(before.splitlines(True), after.splitlines(True), n=0):
        if line.startswith(("---", "+++", "@@")):
            continue
        lines += 1
        bytes_ += len(line[1:].encode())
    return lines, bytes_


def bench_memory(path: Path, marks: Sequence[int], repeats: int) -> dict[str, Any]:
    """MEMORY.md render time and size at each mark, and the bytes one new attempt changes."""
    rows: dict[str, Any] = {}
    for attempts, before, state in _states_at(path, marks):
        samples = [timed(lambda s=state: _render(s)) for _ in range(repeats)]
        text = _render(state)
        lines, changed = changed_bytes(_render(before), text)
        rows[str(attempts)] = {
            "render_s": summary(samples),
            "size_bytes": len(text.encode()),
            "changed_by_next_attempt": {"lines": lines, "bytes": changed},
        }
    sizes = sorted(rows, key=int)
    low, high = sizes[0], sizes[-1]
    t_low = rows[low]["render_s"]["median"]
    t_high = rows[high]["render_s"]["median"]
    exponent = math.log(t_high / t_low) / math.log(int(high) / int(low))
    largest = max(r["size_bytes"] for r in rows.values())
    most_changed = max(r["changed_by_next_attempt"]["bytes"] for r in rows.values())
    return {
        "render_time": figure(
            what=f"MEMORY.md render time from {low} to {high} attempts (scaling exponent)",
            value=t_high,
            reference=t_low,
            unit="s",
            ratio=exponent,
            ratio_is=f"log(t({high})/t({low})) / log({high}/{low}): 1 is linear",
            goal="≤ 1 (linear or better)",
            met=exponent <= 1.0,
            reference_is=f"render time at {low} attempts",
            per_size=rows,
        ),
        "size": figure(
            what="MEMORY.md size, largest over the sizes",
            value=largest,
            reference=32 * 1024,
            unit="bytes",
            ratio=largest / (32 * 1024),
            ratio_is="size / 32 KiB",
            goal="≤ 1 (bounded: stays under 32 KiB however long the campaign)",
            met=largest <= 32 * 1024,
            reference_is="32 KiB, the bound memory_sections.py promises",
        ),
        "changed_per_attempt": figure(
            what="bytes of MEMORY.md changed by one new attempt, largest over the sizes",
            value=most_changed,
            reference=largest,
            unit="bytes",
            ratio=most_changed / largest,
            ratio_is="changed bytes / file size",
            goal="≤ 0.25 (a few lines, not a rewrite)",
            met=most_changed / largest <= 0.25,
            reference_is="the file's size",
        ),
    }


# --- 7. Optuna ------------------------------------------------------------------------------


def bench_optuna(root: Path, scratch: Path, repeats: int) -> dict[str, Any]:
    """Replay and whole-process status vs an equivalent Optuna journal (≥ 20×, ≥ 5×)."""
    try:
        from tools.bench import optuna_anchor
    except ImportError as e:  # optuna is the optional extra `bench`
        return {"skipped": f"optuna is not installed ({e}); pip install -e '.[bench]'"}
    path = ledger_file(root)
    journal, trials = optuna_anchor.journal_for(path, scratch)
    optuna_anchor.load_trials(journal)  # warm the page cache
    ledger_s, optuna_s, floor_s = alternate(
        lambda: timed(lambda: full_replay(path)),
        lambda: timed(lambda: optuna_anchor.load_trials(journal)),
        lambda: timed(lambda: floors.verifying_replay(path)),
        repeats=repeats,
    )
    value, reference = statistics.median(ledger_s), statistics.median(optuna_s)
    floor = statistics.median(floor_s)
    in_process = figure(
        what=f"in-process replay of a {trials}-attempt campaign (read + verify + replay)",
        value=value,
        reference=reference,
        unit="s",
        ratio=reference / value,
        ratio_is="optuna_time / ledger_time (times faster)",
        goal="≥ 20",
        met=reference / value >= 20,
        reference_is=f"Optuna JournalStorage(JournalFileBackend) load + study.trials, "
        f"{trials} trials with the same parameters and values",
        noise={
            "value": summary(ledger_s),
            "reference": summary(optuna_s),
            "floor": summary(floor_s),
        },
        floor={
            "value": _round(floor),
            "ratio": _round(reference / floor),
            "is": "the barest verifying replay of the same ledger (floors.verifying_replay, "
            "as in the replay figures); no replay that verifies every content id can "
            "be more times faster than this",
        },
    )
    status = status_argv(root)
    best = optuna_anchor.best_trial_argv(journal)
    process_time(status)
    process_time(best)
    status_s, best_s = alternate(
        lambda: process_time(status), lambda: process_time(best), repeats=repeats
    )
    value, reference = min(status_s), min(best_s)
    processes = figure(
        what=f"whole process: tune-ledger --json status on the {trials}-attempt campaign "
        "(best of N)",
        value=value,
        reference=reference,
        unit="s",
        ratio=reference / value,
        ratio_is="optuna_time / ledger_time (times faster)",
        goal="≥ 5",
        met=reference / value >= 5,
        reference_is="a new python process that loads the Optuna study and reads best_trial",
        noise={"value": summary(status_s), "reference": summary(best_s)},
        note="fresh processes with a warm OS page cache on both sides",
    )
    return {"replay": in_process, "process": processes, "optuna_version": optuna_anchor.version()}


# --- 8. the ledger's share of an autopilot campaign ------------------------------------------


def autopilot_share(log: Path | None) -> dict[str, Any]:
    """The ledger's share of an autopilot campaign's wall time (goal ≤ 5%), from the closing
    JSON line `python -m tools.autopilot` prints (`timing: {wall_s, ledger_s, pypto_s,
    pypto_runs, ledger_share}`), passed as `--autopilot-log FILE`: the campaign takes minutes
    of real PyPTO runs, so the bench reads its record instead of running it."""
    if log is None or not log.exists():
        return {
            "what": "ledger time / wall time of an autopilot campaign",
            "value": None,
            "unit": "fraction",
            "status": "todo",
            "how": "python -m tools.autopilot --op OP > /tmp/autopilot.log; then "
            "python tools/bench/run.py --autopilot-log /tmp/autopilot.log",
        }
    timing = None
    for line in log.read_text().splitlines():
        with contextlib.suppress(ValueError):
            doc = json.loads(line)
            if isinstance(doc, dict) and isinstance(doc.get("timing"), dict):
                timing = doc["timing"]
    if timing is None:
        return {"value": None, "status": f"no timing summary found in {log}"}
    share = timing.get("ledger_share")
    return figure(
        what="ledger time / wall time of an autopilot campaign",
        value=timing.get("ledger_s"),
        reference=timing.get("wall_s"),
        unit="s",
        ratio=share,
        ratio_is="ledger_s / wall_s",
        goal="≤ 0.05",
        met=None if share is None else share <= 0.05,
        reference_is="the campaign's wall time",
        timing=timing,
        source=str(log),
    )


# --- the report --------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    """Where the figures were measured."""
    cpu = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    memory_gib = None
    with contextlib.suppress(OSError, ValueError, IndexError):
        first = Path("/proc/meminfo").read_text().splitlines()[0]
        memory_gib = round(int(first.split()[1]) / 2**20, 1)
    import orjson

    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": memory_gib,
        "orjson": orjson.__version__,
        "tune_ledger": __version__,
        "bench_tmp": tempfile.gettempdir(),
    }


SIZES = {
    "full": {
        "replay": (10_000, 100_000, 1_000_000),
        "incremental": 1_000_000,
        "repeats": {10_000: 7, 100_000: 5, 1_000_000: 3},
        "append": 40,
        "startup": 10,
        "process_repeats": 3,
    },
    "quick": {
        "replay": (10_000, 100_000),
        "incremental": 100_000,
        "repeats": {10_000: 5, 100_000: 2},
        "append": 20,
        "startup": 5,
        "process_repeats": 2,
    },
}
SMALL_EVENTS = 1_000
APPEND_EVENTS = 10_000
MEMORY_MARKS = (100, 1_000, 10_000)
OPTUNA_ATTEMPTS = 10_000


def build_report(
    mode: str, seed: int, cache: Path, autopilot_log: Path | None, log: Callable[[str], None]
) -> dict[str, Any]:
    """Run every figure of `mode` ("full" or "quick") and return the report."""
    plan = SIZES[mode]
    started = time.perf_counter()
    report: dict[str, Any] = {
        "mode": mode,
        "seed": seed,
        "machine": machine(),
        "data": generate.SYNTHETIC,
        "figures": {},
    }
    figures = report["figures"]
    ledgers = {}
    for events in sorted({SMALL_EVENTS, *plan["replay"], plan["incremental"]}):
        ledgers[events], _meta = generate.cached_ledger(events, seed, cache, log)
    campaign, campaign_meta = generate.cached_ledger(0, seed, cache, log, attempts=OPTUNA_ATTEMPTS)
    with tempfile.TemporaryDirectory(prefix="tune-ledger-bench-") as tmp:
        scratch = Path(tmp)
        for events in plan["replay"]:
            log(f"replay vs parse, {events} events")
            figures[f"replay_{events}"] = bench_replay(
                ledger_file(ledgers[events]), plan["repeats"][events], events
            )
        log("durable append")
        figures["append"] = bench_append(scratch, seed, APPEND_EVENTS, plan["append"])
        log("OpLedger.execute")
        figures["execute"] = bench_execute(scratch, seed, APPEND_EVENTS, plan["append"] // 2)
        log("startup")
        figures["startup"] = bench_startup(ledgers[SMALL_EVENTS], plan["startup"])
        log("incremental status")
        figures["incremental"] = bench_incremental(
            ledgers[SMALL_EVENTS], ledgers[plan["incremental"]], plan["process_repeats"]
        )
        log("MEMORY.md")
        figures["memory"] = bench_memory(ledger_file(campaign), MEMORY_MARKS, 5)
        log("optuna")
        figures["optuna"] = bench_optuna(campaign, cache, plan["process_repeats"])
        figures["optuna"]["campaign"] = campaign_meta
    figures["autopilot_share"] = autopilot_share(autopilot_log)
    report["goals_met"] = _goals(figures)
    report["elapsed_s"] = round(time.perf_counter() - started, 1)
    return report


def _goals(figures: dict[str, Any]) -> dict[str, bool | None]:
    """Every figure's `met`, flattened by name."""
    found: dict[str, bool | None] = {}

    def walk(prefix: str, node: Any) -> None:
        if isinstance(node, dict) and "met" in node and "goal" in node:
            found[prefix] = node["met"]
        elif isinstance(node, dict):
            for key, value in node.items():
                if key not in ("noise", "per_size", "machine"):
                    walk(f"{prefix}.{key}" if prefix else key, value)

    walk("", figures)
    return found


def main(argv: Sequence[str] | None = None) -> None:
    """Run the benchmark and print one JSON report on stdout (progress on stderr)."""
    parser = argparse.ArgumentParser(description="tune-ledger core benchmark")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, < 2 minutes")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--cache",
        type=Path,
        default=DEFAULT_CACHE,
        help="where generated ledgers are kept (default %(default)s)",
    )
    parser.add_argument(
        "--autopilot-log",
        type=Path,
        default=None,
        help="an autopilot run's output, for the ledger's share of wall time",
    )
    args = parser.parse_args(argv)
    report = build_report(
        "quick" if args.quick else "full",
        args.seed,
        args.cache,
        args.autopilot_log,
        lambda m: print(m, file=sys.stderr, flush=True),
    )
    print(json.dumps(report, indent=1, sort_keys=True, ensure_ascii=False))


if __name__ == "__main__":
    main()
