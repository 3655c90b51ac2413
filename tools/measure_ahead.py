"""Measure-ahead: while the ledger holds one pending attempt (R6), verifier runs of the configs
the campaign is about to need go on in parallel, into the measurement cache.

The ledger is not touched here. Workers only fill the cache (ledger/shell/measure_cache.py):
the autopilot still records one attempt at a time, in the same order and with the same
verdicts as with one worker, and `tune-ledger measure` then finds each result in the cache. A
guess that is never used stays a cache entry. A speculative run that crashes, is killed or
times out is not cached (the cache keeps only what the simulator decided), so when that config
is needed `measure` runs it again and records what really happens; a worker's error (the
verifier could not start) is left to `measure` to report the same way.

Order of work: the pending attempt's config first, then the guesses in the order the
autopilot would try them (the rest of the point's candidates, then the best's untried
mutations alternating with the pending config's (should it be adopted), then the next point's
candidates and mutations). Each step re-plans: a queued guess no longer among the first is
dropped, a running one far from the front is killed (on a shared machine a useless run slows
the useful ones), and the pending config never waits for a guess to finish.

Stopping: the campaign's end and Ctrl-C kill the runs in flight. A SIGKILL of the autopilot
cannot: each verifier runs in its own process group (so that its timeout kills all of it), and
finishes by itself within its time limit, into the cache, where the resumed campaign finds it
(its `measure` waits on the entry's lock instead of running the config a second time).

Where a worker's runs go is its own `measure`: a process here (`--workers N`), one NPU of this
host (`--devices`, tools/devices.py) or a Ray task (`--executor ray`, tools/farm.py); each run
hands the worker the means to cancel it.
"""

from __future__ import annotations

import functools
import itertools
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import attrs

from ledger.domain.keys import measured_key
from ledger.domain.state import Best, State
from ledger.log import codec
from ledger.schema.vocabulary import CONFIG_STAGES
from ledger.shell.measure import Cancel

from . import search_space

# Runs one config into the cache; calls its argument with the cancel of each verifier run it
# starts (for a process here: the kill of its group, the run and everything it started).
Measure = Callable[[dict[str, Any], Callable[[Cancel], None]], None]


class MeasureAhead:
    """One worker per `measures` entry (each its own way to run a config), all at once on the
    configs the campaign needs next."""

    def __init__(self, measures: Sequence[Measure]) -> None:
        self.workers = len(measures)
        self._changed = threading.Condition()
        self._queue: list[str] = []  # config keys, in the order to run them
        self._configs: dict[str, dict[str, Any]] = {}
        self._running: dict[str, list[Cancel]] = {}  # config key -> its runs' cancels
        self._cancelled: set[str] = set()  # running, but killed: its run is not kept
        self._finished: set[str] = set()
        self._closed = False
        self.runs = 0  # verifier runs started by the workers
        self.killed = 0  # guesses killed once the campaign went another way
        self._threads = [
            threading.Thread(
                target=self._work, args=(measure,), name=f"measure-ahead-{n}", daemon=True
            )
            for n, measure in enumerate(measures)
        ]
        for thread in self._threads:
            thread.start()

    def plan(self, needed: dict[str, Any], upcoming: Iterable[dict[str, Any]]) -> None:
        """Run `needed` at once, then the first guesses of `upcoming`, as workers free up.

        Every worker should be busy with the likeliest next configs: a queued guess no longer
        among them is dropped, a running one far down the list (or gone from it: the campaign
        went another way) is killed, and when no worker is free for `needed`, the running
        guess ranked last makes room for it. A killed run is not cached.
        """
        order: list[str] = []
        for config in (needed, *upcoming):
            key = codec.canonical_json(config)
            if key not in order:
                order.append(key)
                self._configs.setdefault(key, config)
        rank = {key: n for n, key in enumerate(order)}
        with self._changed:
            keep = set(order[: 1 + 2 * self.workers])
            for key in list(self._running):
                if key not in keep:
                    self._cancel(key)
            self._queue = [
                key
                for key in order[: 1 + self.workers]
                if key not in self._running and key not in self._finished
            ]
            busy = [key for key in self._running if key not in self._cancelled]
            if order[0] in self._queue and len(busy) >= self.workers:
                self._cancel(max(busy, key=lambda key: rank.get(key, len(order))))
            self._changed.notify_all()

    def wait(self, config: dict[str, Any]) -> None:
        """Block while `config` is queued or running."""
        key = codec.canonical_json(config)
        with self._changed:
            while not self._closed and (key in self._queue or key in self._running):
                self._changed.wait()

    def close(self) -> None:
        """Drop the queue, kill the runs in flight (they are not cached), stop the workers."""
        with self._changed:
            self._closed = True
            self._queue = []
            for key in list(self._running):
                self._cancel(key)
            self._changed.notify_all()
        for thread in self._threads:
            thread.join()

    def _cancel(self, key: str) -> None:
        # Called with the lock held. The worker sees its run end (killed) and frees itself.
        if key in self._cancelled:
            return
        self._cancelled.add(key)
        self.killed += 1
        for cancel in self._running[key]:
            cancel()

    def _work(self, measure: Measure) -> None:
        while True:
            with self._changed:
                while not self._closed and not self._queue:
                    self._changed.wait()
                if self._closed:
                    return
                key = self._queue.pop(0)
                self._running[key] = []
                self.runs += 1
            try:
                measure(self._configs[key], functools.partial(self._started, key))
            except Exception:  # noqa: BLE001 - `measure` reports it when the config is needed
                pass
            finally:
                with self._changed:
                    del self._running[key]
                    if key in self._cancelled:
                        self._cancelled.discard(key)  # killed: may be queued again later
                    else:
                        self._finished.add(key)
                    self._changed.notify_all()

    def _started(self, key: str, cancel: Cancel) -> None:
        with self._changed:
            self._running[key].append(cancel)
            if self._closed or key in self._cancelled:
                cancel()


def upcoming(space: search_space.Space, state: State, root: Path, op: str) -> list[dict[str, Any]]:
    """The configs the autopilot will try after the pending attempt, most likely first."""
    point = state.open_point
    pending = state.attempts.get(state.pending) if state.pending else None
    if pending is None or point is None or state.best is None or pending.kind == "algorithm":
        return []
    guesses: list[dict[str, Any]] = []
    if state.points[point].mutations == 0 and pending.kind == "candidate":
        guesses += [config for config, _prior in space.candidates(state, root, op, point)]
    best = state.best.config
    stays = [{**best, param: value} for param, value in space.mutations(state, point)]
    adopted = attrs.evolve(
        state, best=Best(config=pending.config, measurement=state.best.measurement, attempt=None)
    )
    moves = [{**pending.config, param: value} for param, value in space.mutations(adopted, point)]
    # Both outcomes of the pending verdict, alternately: the next mutation is the best's first
    # untried one when the pending attempt is not adopted, else the pending config's first.
    guesses += [config for pair in itertools.zip_longest(stays, moves) for config in pair if config]
    following = _next_point(space, state, point)
    if following is not None:
        # Once this point closes, the next one starts with its candidates, then mutations.
        guesses += [config for config, _prior in space.candidates(state, root, op, following)]
        guesses += [{**best, param: value} for param, value in space.mutations(state, following)]
    seen = {measured_key(state, pending.config), *state.measured_configs}
    found = []
    for config in guesses:
        key = measured_key(state, config)
        if key not in seen:
            seen.add(key)
            found.append(config)
    return found


def _next_point(space: search_space.Space, state: State, point: str) -> str | None:
    """The point the autopilot opens after `point`: the stage's next, else the next stage's
    first (tools/pilot.py opens them in manifest order, one stage after another)."""
    stages = (
        CONFIG_STAGES[CONFIG_STAGES.index(state.stage) :] if state.stage in CONFIG_STAGES else ()
    )
    for stage in stages:
        for name in space.points(stage):
            if name != point and name not in state.points:
                return name
    return None
