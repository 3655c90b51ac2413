"""Whole-process timing: the console script's command line, and the wall time of a process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from tools.bench.campaign import OP


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
