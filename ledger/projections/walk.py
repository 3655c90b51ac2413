"""The campaign's steps with what MEMORY.md's history sections count in them, kept warm.

`walk(state)` gives the same steps as `timeline.steps(state)`, plus the adopted and failed
ones, the no-gain count and the earlier failures grouped. Rendering after every append used to
walk, filter and group all attempts: at 100k events that was most of a command's time. The
part of the walk over the finished attempts that start the campaign cannot change (an attempt
is settled once it is verified, failed or abandoned; only merged branches touch one again, and
the fold counts that in `State.finished_revision`), so it is kept in `State.derived` and only
the attempts after it are walked again. The result is the same as walking everything: a walk
is a pure function of the state; keeping part of it is a cache of that function.

The kept part holds only what a section can show: it counts every step, adoption and failure,
but keeps the most recent `rows` of each, and groups each failure as it leaves the shown ones.
It is carried with the state snapshot (ledger/shell/state_snapshot.py), so a kept walk that
held every step (32k at 100k events) cost every process ~60 ms to unpickle.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar, overload

from attrs import define, field, frozen

from ledger.domain.state import Attempt, State
from ledger.domain.tail import added_since
from ledger.projections.attempt_markdown import FailedGroups
from ledger.projections.timeline import Step, baseline_config, is_failed

_ADOPTED = ("adopt", "target-reached")
_KEY = "walk"


@frozen
class Walk:
    """Every step in start order, and the ones the history sections list or count (of the
    state's kept walk, every one is counted but only the most recent can be read)."""

    steps: Sequence[Step]
    adopted: Sequence[Step]
    failed: Sequence[Step]
    no_gain: int
    # The first `grouped` failures, grouped (may be fewer than asked: see `failed_groups`).
    groups: FailedGroups = field(factory=FailedGroups)
    grouped: int = 0
    # Of the state's kept walk: what the sections rendered from its kept part, by name (with
    # the key they were rendered for), and how many of `failed` are in that part (None: a
    # walk given whole, which keeps nothing).
    rendered: dict[str, tuple[Any, str]] | None = None
    kept_failed: int = 0

    @classmethod
    def of(cls, steps: Sequence[Step]) -> Walk:
        """The walk of steps given whole (a report's, a test's): counted by scanning them."""
        walk = _Prefix([], [], [])
        for step in steps:
            walk.add(step)
        return cls(walk.steps, walk.adopted, walk.failed, walk.no_gain)

    def failed_groups(self, count: int, op: str) -> str:
        """`attempt_markdown.failed_groups` of the first `count` failures (R9)."""
        if count == self.grouped:  # the usual case: nothing failed after a pending attempt
            return self.groups.text(op)
        if self.grouped > count:
            groups, start = FailedGroups(), 0
        else:  # copied: the kept groups must stay those of the first `grouped` failures
            groups, start = self.groups.copy(), self.grouped
        for step in self.failed[start:count]:
            groups.add(step)
        return groups.text(op)


T = TypeVar("T")


class _Indexed(Sequence[T]):
    """A sequence read by index through `_item`; slices are lists of the items they cover."""

    def __len__(self) -> int:
        raise NotImplementedError

    def _item(self, index: int) -> T:
        raise NotImplementedError

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            return [self._item(i) for i in range(len(self))[index]]
        return self._item(range(len(self))[index])


class _Latest(_Indexed[T]):
    """A list that counts every item appended but keeps only the most recent `keep` (at
    least): reading an older one is an IndexError, never a wrong item."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.total = 0
        self.items: list[T] = []

    def append(self, item: T) -> None:
        self.items.append(item)
        self.total += 1
        if len(self.items) > 2 * self.keep:  # trimmed in batches: O(1) per item appended
            del self.items[: -self.keep]

    def __len__(self) -> int:
        return self.total

    def _item(self, index: int) -> T:
        dropped = self.total - len(self.items)
        if index < dropped:
            raise IndexError(f"item {index} is not kept: only the last {self.keep} are")
        return self.items[index - dropped]


@define
class _Prefix:
    """A walk extended one step at a time: lists, or (kept) `_Latest` with grouping."""

    steps: list[Step] | _Latest[Step]
    adopted: list[Step] | _Latest[Step]
    failed: list[Step] | _Latest[Step]
    no_gain: int = 0
    # The best config and time after the last step (what the next attempt is compared with).
    best_config: dict[str, Any] = field(factory=dict)
    best_us: float | None = None
    # Kept walks only: the failures before the last `shown_failures` are grouped as they
    # leave the shown ones (they are earlier in every later walk too, failures only
    # accumulate), so `failed_groups` is O(new ones) and they need not be kept.
    shown_failures: int | None = None
    groups: FailedGroups = field(factory=FailedGroups)
    grouped: int = 0
    # Sections rendered from this kept part, with their keys (`Walk.rendered`): its steps only
    # grow at the end, so a key that counts them names one rendering.
    rendered: dict[str, tuple[Any, str]] = field(factory=dict)

    @classmethod
    def kept(cls, rows: int, shown_failures: int, best_config: dict[str, Any]) -> _Prefix:
        """A walk that keeps the most recent `rows` of each list, and of the failures one more
        than are shown (`Walk.failed_groups` reads the shown ones back; the one leaving them
        is grouped after it is appended)."""
        keep = max(rows, shown_failures + 1)
        return cls(_Latest(keep), _Latest(keep), _Latest(keep), best_config=best_config,
                   shown_failures=shown_failures)  # fmt: skip

    def add(self, step: Step) -> None:
        attempt = step.attempt
        self.steps.append(step)
        if attempt.failure is None and attempt.verdict in _ADOPTED:
            self.adopted.append(step)
        elif attempt.failure is None and attempt.verdict == "no-gain":
            self.no_gain += 1
        if is_failed(attempt):
            self.failed.append(step)
            if self.shown_failures is not None and len(self.failed) > self.shown_failures:
                self.groups.add(self.failed[self.grouped])  # the one that left the shown
                self.grouped += 1

    def step(self, attempt: Attempt) -> Step:
        """The attempt's step, moving the best on when it was adopted (as `timeline.steps`)."""
        before = attempt.compared_us if attempt.compared_us is not None else self.best_us
        # A kept walk's step keeps what the sections render of it (`timeline.kept_text`): it
        # holds a settled attempt, which only a merge changes again, and that bumps
        # `finished_revision`, so the walk is then rebuilt with new steps.
        texts: dict[str, Any] | None = {} if self.shown_failures is not None else None
        step = Step(attempt, self.best_config, before, texts)
        if attempt.verdict in _ADOPTED and attempt.failure is None:
            self.best_config = attempt.config
            if attempt.measurement is not None:
                self.best_us = attempt.measurement.median_us
        return step


def walk(state: State, shown_failures: int, rows: int) -> Walk:
    """The state's walk: the kept walk of its settled first attempts, then the rest walked.

    All but the last `shown_failures` failures are grouped as they settle; of each list only
    the last `rows` (and the shown failures) can be read. The walk is valid until the state
    changes: like the state, it is the accumulator's, not a value to keep."""
    baseline = baseline_config(state)
    # What the kept part depends on besides the settled attempts themselves.
    key = (state.finished_revision, state.target, baseline, shown_failures, rows)
    kept = state.derived.get(_KEY)
    if not isinstance(kept, tuple) or kept[0] != key:
        prefix = _Prefix.kept(rows, shown_failures, baseline)
        prefix.best_us = state.target.baseline_us if state.target else None
        kept = (key, prefix)
        state.derived[_KEY] = kept
    prefix = kept[1]
    rest = added_since(state.attempts, len(prefix.steps))
    tail: _Prefix | None = None
    for attempt in rest:
        if tail is None and attempt.status != "pending":
            prefix.add(prefix.step(attempt))
            continue
        if tail is None:  # the first unsettled attempt: from here on nothing is kept
            tail = _Prefix([], [], [], best_config=prefix.best_config, best_us=prefix.best_us)
        tail.add(tail.step(attempt))
    if tail is None:
        return Walk(prefix.steps, prefix.adopted, prefix.failed, prefix.no_gain,
                    prefix.groups, prefix.grouped, prefix.rendered, len(prefix.failed))  # fmt: skip
    return Walk(
        _Joined(prefix.steps, tail.steps),
        _Joined(prefix.adopted, tail.adopted),
        _Joined(prefix.failed, tail.failed),
        prefix.no_gain + tail.no_gain,
        prefix.groups,
        prefix.grouped,
        prefix.rendered,
        len(prefix.failed),
    )


class _Joined(_Indexed[Step]):
    """Two sequences read as one, without copying them: the kept prefix is the whole campaign
    but for its last few attempts, and the sections read only its ends."""

    def __init__(self, first: Sequence[Step], second: Sequence[Step]) -> None:
        self._first, self._second = first, second

    def __len__(self) -> int:
        return len(self._first) + len(self._second)

    def _item(self, index: int) -> Step:
        first = len(self._first)
        return self._first[index] if index < first else self._second[index - first]
