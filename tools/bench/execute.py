"""Benchmark: the whole OpLedger.execute path of one command vs a bare os.write + os.fsync."""

from __future__ import annotations

import os
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from ledger.errors import RetryRefusal
from ledger.shell.api import OpLedger
from tools.bench.append import Continuation, bare_write
from tools.bench.campaign import OP
from tools.bench.timing import figure, summary


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
                run.driver.refused()
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
