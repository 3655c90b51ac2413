"""A new process that dies with the process that started it.

Why: the kernel's child leads its own process group (the runner's memory and wall-time limits
cover what it starts), so killing the verifier's group, as measure-ahead does when it cancels a
run, never reached it: a cancelled simulation went on for minutes on a 2-core host, its result
read by nobody. The warm worker's forks need none of this (the worker kills a fork's group when
its runner goes away); a new process asks Linux to kill it when its parent ends.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def to_this_process() -> Callable[[], None] | None:
    """A `preexec_fn` for subprocess.Popen that has the new process SIGKILLed when this one
    ends (None where the kernel offers no such request: the child then outlives a kill, as
    before)."""
    if not sys.platform.startswith("linux"):
        return None
    # Looked up before the fork: the function run in the new process only calls it.
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    parent = os.getpid()

    def tether() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent ended before the request was made
            os.kill(os.getpid(), signal.SIGKILL)

    return tether
