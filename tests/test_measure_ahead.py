"""Measure-ahead workers: the pending config first, a failing run never blocks the campaign,
and closing kills the runs in flight (tools/measure_ahead.py)."""

from __future__ import annotations

import functools
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

from ledger import processes
from ledger.shell.measure import Cancel
from tools.measure_ahead import MeasureAhead

Started = Callable[[Cancel], None]


def _kill(process: subprocess.Popen[bytes]) -> Cancel:
    """The cancel of a run that is a process leading its own group."""
    return functools.partial(processes.kill_group, process.pid)


def test_the_needed_config_runs_first_and_guesses_no_longer_wanted_are_dropped() -> None:
    """One worker: `needed` runs before the guesses; a re-plan drops queued guesses."""
    order: list[Any] = []
    gate = threading.Event()

    def measure(config: dict[str, Any], _started: Started) -> None:
        gate.wait(10)
        order.append(config["n"])

    ahead = MeasureAhead([measure])
    try:
        ahead.plan({"n": 0}, [{"n": 1}, {"n": 2}])
        time.sleep(0.1)  # the worker has taken n=0 and waits at the gate
        ahead.plan({"n": 3}, [{"n": 1}])
        gate.set()
        ahead.wait({"n": 3})
        ahead.wait({"n": 1})
    finally:
        ahead.close()
    assert order == [0, 3, 1]
    assert ahead.runs == 3


def _returns(ahead: MeasureAhead, config: dict[str, Any], seconds: float = 10) -> bool:
    """Whether `ahead.wait(config)` returns within `seconds` (a blocked wait is left behind in
    a daemon thread, so a broken behaviour fails the test instead of hanging it)."""
    waiter = threading.Thread(target=ahead.wait, args=(config,), daemon=True)
    waiter.start()
    waiter.join(seconds)
    return not waiter.is_alive()


def test_a_failing_run_does_not_block_the_campaign() -> None:
    """A worker whose run raises (the verifier could not start) is done: `wait` returns and
    the ledger's own `measure` then reports the error; the worker goes on with the next
    config the campaign plans."""
    attempted: list[int] = []

    def measure(config: dict[str, Any], _started: Started) -> None:
        attempted.append(config["n"])
        if config["n"] < 2:
            raise RuntimeError("the verifier could not start")

    ahead = MeasureAhead([measure, measure])
    try:
        ahead.plan({"n": 0}, [{"n": 1}])
        assert _returns(ahead, {"n": 0}) and _returns(ahead, {"n": 1})
        ahead.plan({"n": 2}, [])  # the next step, after `measure` reported the error
        assert _returns(ahead, {"n": 2})
    finally:
        ahead.close()
    assert sorted(attempted) == [0, 1, 2]
    assert (ahead.runs, ahead.killed) == (3, 0)


def test_closing_kills_the_runs_in_flight() -> None:
    """A speculative run still going when the campaign ends is killed, not awaited."""
    running: list[subprocess.Popen[bytes]] = []

    def measure(config: dict[str, Any], started: Started) -> None:
        process = subprocess.Popen(["sleep", "30"], start_new_session=True)
        running.append(process)
        started(_kill(process))
        process.wait()

    ahead = MeasureAhead([measure, measure])
    ahead.plan({"n": 0}, [{"n": 1}])
    deadline = time.monotonic() + 10
    while len(running) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    began = time.monotonic()
    ahead.close()
    assert time.monotonic() - began < 5
    assert [p.poll() for p in running] == [-9, -9]


def test_the_pending_config_never_waits_for_a_stale_guess() -> None:
    """A guess the campaign no longer needs is killed, so the pending config starts at once."""
    ran: list[int] = []

    def measure(config: dict[str, Any], started: Started) -> None:
        ran.append(config["n"])
        if config["n"] == 1:  # the guess: a long run
            process = subprocess.Popen(["sleep", "30"], start_new_session=True)
            started(_kill(process))
            process.wait()

    ahead = MeasureAhead([measure])
    try:
        ahead.plan({"n": 0}, [{"n": 1}])
        ahead.wait({"n": 0})
        deadline = time.monotonic() + 10
        while ran != [0, 1] and time.monotonic() < deadline:
            time.sleep(0.05)
        began = time.monotonic()
        ahead.plan({"n": 2}, [])  # the campaign went another way
        ahead.wait({"n": 2})
        assert time.monotonic() - began < 5
    finally:
        ahead.close()
    assert ran == [0, 1, 2] and ahead.killed == 1
