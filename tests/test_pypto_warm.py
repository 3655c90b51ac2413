"""The warm worker (tools/pypto/warm.py) seen from the runner: a fork behaves as the new process
it replaces (argv, folder, environment, outputs, exit status, its own process group), the
runner falls back to a new process whenever the worker is unusable, and a fork whose runner
went away is killed. Fast: the worker here preloads a light module instead of pypto and torch,
and the jobs are small scripts (tests/test_pypto_warm_real.py runs the real kernel, slow)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tools/ is not an installed package
from tools.pypto import runner, warm  # noqa: E402
from tools.pypto.spec import load_spec  # noqa: E402

REPORT = """\
import json, os, sys
print(json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "path0": sys.path[0],
                  "leader": os.getpgid(0) == os.getpid(), "seen": os.environ.get("SEEN")}))
print("to stderr", file=sys.stderr)
sys.exit(int(sys.argv[1]))
"""


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.delenv(warm.ENV, raising=False)
    monkeypatch.setenv("SEEN", "the run's")
    # The environment a real run gets: the worker runs `-m tools.pypto.warm` in a folder of
    # its own, so the checkout must be on the path (CI sets no PYTHONPATH).
    return runner.child_environment(dict(os.environ), output_dir=None, home=None)


@pytest.fixture
def worker(environment: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[warm.Worker]:
    started = warm.start(sys.executable, environment, preload=("json",))
    monkeypatch.setenv(warm.ENV, started.address)
    try:
        yield started
    finally:
        started.close()


def script(tmp_path: Path, text: str, name: str = "job.py") -> Path:
    path = tmp_path / "scripts" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


def run(
    tmp_path: Path, argv: list[str], env: dict[str, str], **extra: Any
) -> tuple[warm.WarmRun | None, str]:
    return warm.start_run(
        kind="script",
        argv=argv,
        cwd=tmp_path,
        env=env,
        python=sys.executable,
        stdout=tmp_path / "stdout",
        stderr=tmp_path / "stderr",
        **extra,
    )


def test_a_fork_runs_the_script_as_a_new_process_would(
    worker: warm.Worker, environment: dict[str, str], tmp_path: Path
) -> None:
    job = script(tmp_path, REPORT)
    forked, how = run(tmp_path, [str(job), "4", "x y"], environment)
    assert how == "warm" and forked is not None
    assert forked.wait(timeout=30) == 4
    seen = json.loads((tmp_path / "stdout").read_text())
    assert seen["argv"] == [str(job), "4", "x y"]
    assert seen["cwd"] == str(tmp_path)
    assert seen["path0"] == str(job.parent)  # as `python SCRIPT` puts the script's folder
    assert seen["leader"] is True  # its own process group: the runner's limits cover it
    assert seen["seen"] == "the run's"
    assert (tmp_path / "stderr").read_text() == "to stderr\n"
    # The same script as a new process prints the same.
    done = subprocess.run(
        [sys.executable, str(job), "4", "x y"],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
        start_new_session=True,
    )
    assert done.returncode == 4
    assert json.loads(done.stdout) == seen
    assert done.stderr == "to stderr\n"


def test_the_fork_gets_the_jobs_environment_not_the_workers(
    worker: warm.Worker, environment: dict[str, str], tmp_path: Path
) -> None:
    job = script(tmp_path, "import json, os\nprint(json.dumps(dict(os.environ)))\n")
    # A per-run variable differs from the worker's: the fork sees the run's value.
    env = {**environment, "TUNE_LEDGER_PROGRESS_FILE": str(tmp_path / "phase")}
    forked, how = run(tmp_path, [str(job)], env)
    assert how == "warm" and forked is not None and forked.wait(timeout=30) == 0
    assert json.loads((tmp_path / "stdout").read_text()) == env


def test_a_signal_is_handed_back_as_a_new_process_reports_it(
    worker: warm.Worker, environment: dict[str, str], tmp_path: Path
) -> None:
    job = script(tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    forked, _ = run(tmp_path, [str(job)], environment)
    assert forked is not None and forked.wait(timeout=30) == -signal.SIGKILL
    uncaught = script(tmp_path, "raise ValueError('boom')\n", "uncaught.py")
    forked, _ = run(tmp_path, [str(uncaught)], environment)
    assert forked is not None and forked.wait(timeout=30) == 1
    assert "ValueError: boom" in (tmp_path / "stderr").read_text()


def test_an_unusable_worker_means_a_new_process_and_says_why(
    worker: warm.Worker, environment: dict[str, str], tmp_path: Path
) -> None:
    job = str(script(tmp_path, REPORT))
    # A variable read at import may differ: the worker's imports were made without it.
    forked, how = run(tmp_path, [job, "0"], {**environment, "OMP_NUM_THREADS": "1"})
    assert forked is None and how == "cold (warm worker differs: environment OMP_NUM_THREADS)"
    forked, how = warm.start_run(
        kind="script",
        argv=[job, "0"],
        cwd=tmp_path,
        env=environment,
        python="/another/python",
        stdout=tmp_path / "o",
        stderr=tmp_path / "e",
    )
    assert forked is None and how.startswith("cold (the child's interpreter")


def test_changed_adapter_sources_mean_a_new_process(
    worker: warm.Worker,
    environment: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The worker imported the adapter as it was; a fork would run that, not the file on disk.
    monkeypatch.setattr(warm, "adapter_digest", lambda: "0" * 64)
    forked, how = run(tmp_path, [str(script(tmp_path, REPORT)), "0"], environment)
    assert forked is None and how == "cold (warm worker differs: adapter)"


def test_no_worker_or_a_gone_one_means_a_new_process(
    environment: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = str(script(tmp_path, REPORT))
    forked, how = run(tmp_path, [job, "0"], environment)
    assert forked is None and how == "cold"
    monkeypatch.setenv(warm.ENV, str(tmp_path / "no-such-socket"))
    forked, how = run(tmp_path, [job, "0"], environment)
    assert forked is None and how.startswith("cold (warm worker unreachable")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_fork_whose_runner_went_away_is_killed(
    worker: warm.Worker, environment: dict[str, str], tmp_path: Path
) -> None:
    """measure-ahead kills a verifier whose guess the campaign no longer needs: its fork, which
    nobody watches any more, must not go on using a core."""
    job = script(tmp_path, "import time\ntime.sleep(120)\n")
    forked, _ = run(tmp_path, [str(job)], environment)
    assert forked is not None and _alive(forked.pid)
    forked._lines.connection.close()  # what the runner's death does to its end
    deadline = time.monotonic() + 20
    while _alive(forked.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(forked.pid)


def test_closing_the_worker_lets_a_run_in_flight_finish(
    worker: warm.Worker, environment: dict[str, str], tmp_path: Path
) -> None:
    job = script(tmp_path, "import time\ntime.sleep(1)\nprint('done')\n")
    forked, _ = run(tmp_path, [str(job)], environment)
    assert forked is not None
    worker.close()
    assert forked.wait(timeout=30) == 0
    assert (tmp_path / "stdout").read_text() == "done\n"
    assert not worker.folder.exists()


def test_a_forks_pypto_logs_go_to_its_runs_home(
    worker: warm.Worker, environment: dict[str, str], tmp_path: Path
) -> None:
    """pypto opens its log under the worker's home at import; the runner reads a run's log in
    the run's home (to say why a compile failed), so the worker moves the fork's files there."""
    logs = worker.folder / "home" / "ascend" / "log" / "debug" / "plog"
    job = script(
        tmp_path,
        "import os, pathlib, sys\n"
        f"folder = pathlib.Path({str(logs)!r})\n"
        "folder.mkdir(parents=True, exist_ok=True)\n"
        "(folder / f'pypto-log-{os.getpid()}_1.log').write_text('[ERROR] mine')\n"
        "(folder / 'pypto-log-1_1.log').write_text('another process')\n",
    )
    home = tmp_path / "home"
    forked, _ = run(tmp_path, [str(job)], environment, home=home)
    assert forked is not None and forked.wait(timeout=30) == 0
    moved = home / "ascend" / "log" / "debug" / "plog" / f"pypto-log-{forked.pid}_1.log"
    assert moved.read_text() == "[ERROR] mine"
    assert sorted(p.name for p in logs.iterdir()) == ["pypto-log-1_1.log"]


def test_the_layout_check_forked_reports_what_a_new_process_does(
    environment: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """runner.run_layout_check: exit code and output, warm or cold, on an op folder whose
    layout check fails and writes to both streams."""
    op_dir = tmp_path / "op"
    op_dir.mkdir()
    (op_dir / "SPEC.md").write_text(
        '---\nop_name: op\nsupported_dtypes: ["fp32"]\np0_shapes: [[4]]\n'
        'tolerance: {"rtol": 1e-5, "atol": 1e-6}\n---\n'
    )
    for name in ("op_impl.py", "op_golden.py"):
        (op_dir / name).write_text("")
    (op_dir / "layout_check.py").write_text(
        "import sys\nprint('FAIL LC1', sys.argv[1:])\nprint('warned', file=sys.stderr)\n"
        "sys.exit(1)\n"
    )
    spec = load_spec(op_dir, None, None)
    request = runner.Request(op_dir=op_dir, config={"tile": [1, 2]})
    cold = runner.run_layout_check(spec, request)
    # This process's environment now (pytest names the test phase in it).
    started = warm.start(
        sys.executable,
        runner.child_environment(os.environ, output_dir=None, home=None),
        preload=("json",),
    )
    monkeypatch.setenv(warm.ENV, started.address)
    hows: list[str] = []

    def spied(**job: Any) -> tuple[warm.WarmRun | None, str]:
        forked, how = start_run(**job)
        hows.append(how)
        return forked, how

    start_run = warm.start_run
    monkeypatch.setattr(warm, "start_run", spied)
    try:
        forked = runner.run_layout_check(spec, request)
    finally:
        started.close()
    assert hows == ["warm"]
    assert cold == (1, "FAIL LC1 ['--config', '{\"tile\": [1, 2]}']\nwarned\n")
    assert forked == cold


def test_a_worker_whose_starter_went_away_ends_and_cleans_up(
    environment: dict[str, str],
) -> None:
    """A killed autopilot closes the worker's stdin: the worker ends by itself and removes its
    socket, its home, and its folder when the log in it is empty (nothing is left in /tmp)."""
    started = warm.start(sys.executable, environment, preload=("json",))
    try:
        assert started.process.stdin is not None
        started.process.stdin.close()  # what the starter's death does
        assert started.process.wait(timeout=30) == 0
        assert not started.folder.exists()
    finally:
        started.close()


def test_a_worker_log_that_says_something_stays_behind(
    environment: dict[str, str], tmp_path: Path
) -> None:
    """A worker whose starter went away ends as usual but keeps its folder when its log holds
    something to read (here: a warning its preload printed)."""
    (tmp_path / "noisy_preload.py").write_text("import sys\nprint('a warning', file=sys.stderr)\n")
    environment = {
        **environment,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), environment["PYTHONPATH"]]),
    }
    started = warm.start(sys.executable, environment, preload=("noisy_preload",))
    try:
        assert started.process.stdin is not None
        started.process.stdin.close()
        assert started.process.wait(timeout=30) == 0  # it ended by its own clean-up
        assert sorted(p.name for p in started.folder.iterdir()) == ["worker.log"]
        assert "a warning" in (started.folder / "worker.log").read_text()
    finally:
        started.close()
    assert not started.folder.exists()  # the starter's close removes it, as before
