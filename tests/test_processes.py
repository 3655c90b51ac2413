"""The one process runner (ledger/processes.py): a child and everything it starts end together,
at a limit or when the child ends, and a flood of output is bounded."""

from __future__ import annotations

import hashlib
import sys
import threading
import time
from pathlib import Path

import pytest

from ledger import processes
from ledger.processes import Limits
from ledger.shell import runner

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

# A child that starts a grandchild which sleeps (both in the child's group), says the
# grandchild's pid, then sleeps itself unless told to leave at once.
SPAWNER = """
import subprocess, sys, time
grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(grandchild.pid, flush=True)
if sys.argv[1] == "stay":
    time.sleep(60)
"""


def _alive(pid: int) -> bool:
    """Whether `pid` still runs (a zombie waiting to be reaped has ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_a_timeout_kills_the_child_and_its_grandchild() -> None:
    """Past its wall time the whole group is killed: no grandchild survives its parent."""
    began = time.monotonic()
    done = processes.run([sys.executable, "-c", SPAWNER, "stay"], limits=Limits(wall_s=3.0))
    grandchild = int(done.text().split()[0])
    assert done.timed_out and done.exit_code == -9
    assert time.monotonic() - began < 20
    assert _gone_within(grandchild, 5.0), "the grandchild outlived the timeout"


def test_what_a_finished_child_left_running_is_killed_without_waiting_for_it() -> None:
    """A child that ends leaving a grandchild (which holds its output pipe) returns at once,
    and the grandchild goes with it."""
    began = time.monotonic()
    done = processes.run([sys.executable, "-c", SPAWNER, "leave"], limits=Limits(wall_s=30.0))
    grandchild = int(done.text().split()[0])
    assert not done.timed_out and done.exit_code == 0
    assert time.monotonic() - began < 15
    assert _gone_within(grandchild, 5.0)


def test_a_shell_command_given_to_verify_run_is_killed_with_its_group(tmp_path: Path) -> None:
    """`--run CMD` goes through a shell; at its timeout the shell's children go too (the
    runner `verify --run` used before did not kill the group)."""
    pid_file = tmp_path / "pid"
    command = f"sleep 60 & echo $! > {pid_file}; wait"
    run = runner.run_command(command, tmp_path, timeout_s=2.0)
    assert run.timed_out and run.exit_code == -9
    assert _gone_within(int(pid_file.read_text()), 5.0)


def test_output_beyond_the_bound_keeps_its_tail_and_the_digest_of_all_of_it() -> None:
    """A flood of output is drained, not held: the last bytes are kept (a measurement is the
    last line), the digest covers every byte."""
    flood = (
        "import sys; sys.stdout.buffer.write(bytes(range(256)) * 12000 + b'{\\\"end\\\": 1}\\n')"
    )
    done = processes.run([sys.executable, "-c", flood], limits=Limits(output_bytes=100_000))
    whole = bytes(range(256)) * 12000 + b'{"end": 1}\n'
    assert done.output == whole[-100_000:]
    assert done.output_truncated
    assert done.output_digest == hashlib.sha256(whole).hexdigest()


def test_a_group_over_its_memory_limit_is_killed() -> None:
    """The memory limit counts the group's resident memory (here a grandchild's)."""
    hog = (
        "import subprocess, sys; subprocess.run([sys.executable, '-c', "
        "'b = bytearray(400 << 20); import time; time.sleep(60)'])"
    )
    done = processes.run([sys.executable, "-c", hog], limits=Limits(wall_s=60.0, memory_mb=150.0))
    assert done.over_memory and not done.timed_out
    assert done.peak_rss_mb > 150.0


def test_stderr_kept_apart_and_a_cancel_from_another_thread() -> None:
    """stderr may be kept apart; `on_start` hands over the group, which another thread kills."""
    apart = processes.run(
        [sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr)"],
        separate_stderr=True,
    )
    assert (apart.output, apart.errors) == (b"out\n", b"err\n")

    def cancel_soon(group: int) -> None:
        threading.Timer(0.5, processes.kill_group, [group]).start()

    began = time.monotonic()
    cancelled = processes.run(["sleep", "60"], on_start=cancel_soon)
    assert cancelled.exit_code == -9 and not cancelled.timed_out
    assert time.monotonic() - began < 15


REPO = Path(__file__).resolve().parents[1]
STARTERS = {"run", "Popen", "call", "check_call", "check_output", "getoutput", "getstatusoutput"}


def _process_starts(path: Path) -> list[str]:
    """Where a file starts a process other than through ledger/processes.py."""
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module == "subprocess":
            found += [f"{path}:{node.lineno}" for a in node.names if a.name in STARTERS]
        called = node.func if isinstance(node, ast.Call) else None
        if isinstance(called, ast.Attribute) and isinstance(called.value, ast.Name):
            module, name = called.value.id, called.attr
            if (module == "subprocess" and name in STARTERS) or (
                module == "os" and (name in ("system", "popen") or name.startswith("spawn"))
            ):
                found.append(f"{path}:{node.lineno}: {module}.{name}")
    return found


def test_every_process_is_started_by_the_one_runner() -> None:
    """ledger/ and tools/ (the benchmarks aside) start processes only through
    ledger/processes.py, and nothing runs our own CLI as a process."""
    files = [
        p
        for p in sorted([*(REPO / "ledger").rglob("*.py"), *(REPO / "tools").rglob("*.py")])
        if "bench" not in p.relative_to(REPO).parts and p != REPO / "ledger" / "processes.py"
    ]
    assert len(files) > 100
    assert [hit for path in files for hit in _process_starts(path)] == []
    own_cli = [str(p) for p in files if '"-m", "ledger"' in p.read_text("utf-8")]
    assert own_cli == []
