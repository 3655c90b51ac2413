"""A kernel child started as a new process dies with the verifier that started it, though it
leads its own process group (`ledger.processes.start(tether=True)`, as the adapter starts it):
killing a cancelled verifier's group, as measure-ahead does, leaves no simulation running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# The verifier's part: a child in its own session (as runner._run_child starts one), then wait.
PARENT = """
import sys, time
from ledger import processes
child = processes.start(
    [sys.executable, "-c", "import time; time.sleep(120)"], tether=sys.argv[1] == "tethered"
)
print(child.pid, flush=True)
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    """Whether `pid` still runs (a zombie waiting for its new parent to reap it has ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _child_after_parent_killed(mode: str) -> int:
    """Start the parent in `mode`, SIGKILL it (as killpg does), return its child's pid."""
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, mode], cwd=REPO, stdout=subprocess.PIPE
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    return child


def _ended_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a Linux prctl request")
def test_a_tethered_child_ends_with_its_parent() -> None:
    child = _child_after_parent_killed("tethered")
    try:
        assert _ended_within(child, 10.0)
    finally:
        if _alive(child):
            os.kill(child, signal.SIGKILL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a Linux prctl request")
def test_without_the_tether_the_child_outlives_its_parent() -> None:
    """What the tether is for: its own session keeps a plain child out of the parent's kill."""
    child = _child_after_parent_killed("plain")
    try:
        assert not _ended_within(child, 0.5)
    finally:
        os.kill(child, signal.SIGKILL)
