"""What this op's own measurements say about a candidate (issue 28 item 5): the ranking learns.

A candidate moves the best config some ways (ledger/priors/moves.py: a tile axis larger, a
scalar smaller). Two configs this ledger measured with the best's kernel speak for it when they
differ only in the keys the candidate changes and the second moves from the first only in ways
the candidate moves too: their medians say slower, faster or no gain (beyond the policy's
`noise_threshold`, as a one-sample verdict of R8 judges). A slower second config is a limit: it
speaks only for a candidate that goes at least as far each way, since a time rarely grows one
way along a whole axis (softmax from [1,4,1,64]: [1,32,1,64] slower, [1,16,1,64] faster). Of the
pairs left, those starting nearest the best decide (the changed keys' values first, then the
other keys). A config that failed to compile (or failed its accuracy or layout check) is a limit
too: a candidate that goes its ways and at least as far is predicted to fail as well.

The call: failed, or slower and nowhere faster, drops the candidate with the attempts cited;
faster ranks it first, then untested ones, then no gain, then mixed evidence. Pure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from attrs import field, frozen

from ledger.domain.configs import filled
from ledger.domain.keys import knob_defaults
from ledger.domain.state import State
from ledger.log import codec
from ledger.priors.diversity import config_distance
from ledger.priors.moves import Move, Reading, config_moves, moves_between, readings
from ledger.schema.vocabulary import ADOPTED
from stages.binding import best_impl_digest
from stages.policy import effective_policy

Outcome = Literal["faster", "no-gain", "slower", "failed"]
Call = Literal["faster", "untested", "no-gain", "mixed", "slower", "failed"]
# The order the calls rank in; "slower" and "failed" are dropped, never ranked.
RANK_OF_CALL: Mapping[str, int] = {"faster": 0, "untested": 1, "no-gain": 2, "mixed": 3}
DROPPED: frozenset[str] = frozenset({"slower", "failed"})
# Failures the config decides (a timeout, an OOM or a crash may be the machine's).
CONFIG_FAILURES = ("compile", "accuracy", "layout")
BASELINE = "baseline"
SHOWN_FINDINGS = 3  # findings spelt out in a reason
CITED_FINDINGS = 10  # findings kept and listed by --json (latest first); all are counted


@frozen
class MeasuredConfig:
    """One config this op measured (the baseline or an attempt): its median, or its failure."""

    attempt: str  # the attempt's id, or "baseline"
    config: dict[str, Any]  # with the manifest's defaults filled in
    median_us: float | None
    failure: str | None
    seq: int  # 0 for the baseline: later measurements win ties

    @property
    def label(self) -> str:
        """ "the baseline" or "attempt <id>"."""
        return "the baseline" if self.attempt == BASELINE else f"attempt {self.attempt}"


@frozen
class Finding:
    """A measured pair (or a failure) that speaks for a candidate, and what it says."""

    moves: tuple[Move, ...]  # how `end` moved from `start` (from the best, for a failure)
    start: MeasuredConfig
    end: MeasuredConfig
    outcome: Outcome
    ratio: float | None  # end's median / start's

    def text(self) -> str:
        """The pair in words: both configs' changed values, times and what they say."""
        keys = {m.key for m in self.moves}
        end = self.end
        if self.outcome == "failed":
            return f"{_values(end.config, keys)} failed ({end.failure}) in {end.label}"
        start = self.start
        assert self.ratio is not None
        said = {
            "slower": f"{self.ratio:.2f}x slower",
            "faster": f"{1 / self.ratio:.2f}x faster",
        }.get(self.outcome, f"no gain (x{self.ratio:.3f})")
        # One key changed: its name once, then both values ("vec_tile_shape [..] -> [..]").
        arrow = _values(end.config, keys, named=len(keys) > 1)
        return (
            f"{_values(start.config, keys)} ({start.label}, {start.median_us:.2f} µs) -> "
            f"{arrow} ({end.label}, {end.median_us:.2f} µs): {said}"
        )


@frozen
class Learned:
    """The call on one candidate and the findings behind it."""

    call: Call
    moves: tuple[Move, ...]  # how the candidate moves the best config
    findings: tuple[Finding, ...] = ()  # the latest CITED_FINDINGS of those that decided
    counts: dict[str, int] = field(factory=dict)  # every finding that decided, by outcome

    @property
    def dropped(self) -> bool:
        """True when the op's own measurements say the candidate is slower or fails."""
        return self.call in DROPPED

    def reason(self) -> str:
        """One line: the call and the findings that made it."""
        shown = "; ".join(f.text() for f in self.findings[:SHOWN_FINDINGS])
        more = sum(self.counts.values()) - min(len(self.findings), SHOWN_FINDINGS)
        if more > 0:
            shown += f"; {more} more"
        what = {
            "faster": "measured faster this way",
            "no-gain": "measured no gain this way",
            "mixed": "measured both faster and slower this way",
            "slower": "measured slower this way",
            "failed": "failed this way",
            "untested": "not measured this way yet",
        }[self.call]
        ways = ", ".join(m.text() for m in self.moves)
        return f"learned from this op: {ways}: {what}" + (f" ({shown})" if shown else "")


@frozen
class Seen:
    """A measured config read along the keys a candidate changes."""

    entry: MeasuredConfig
    readings: dict[str, Reading]  # the changed keys' values
    context: str  # the other keys' values: pairs compared along the changed keys share it
    distance: tuple[float, float]  # from the best: along the changed keys, then the others


@frozen
class OpMeasurements:
    """The configs this op measured with the best's kernel, and how to judge them."""

    best: MeasuredConfig | None
    measured: tuple[MeasuredConfig, ...]
    kinds: dict[str, str]  # the manifest's knob kinds, by key
    defaults: dict[str, Any]
    noise: float
    other_kernel: int  # measured configs left out: they ran another kernel than the best's


class Judge:
    """Judges candidates by one state's measurements (a plain class: it keeps the measured
    configs read along each set of changed keys, since a point's candidates share them)."""

    def __init__(self, measurements: OpMeasurements) -> None:
        self.measurements = measurements
        self.best = measurements.best
        self._along: dict[frozenset[str], tuple[Seen, ...]] = {}

    def judge(self, config: Mapping[str, Any]) -> Learned:
        """What the measurements say about moving the best config to `config`."""
        if self.best is None:
            return Learned("untested", ())
        kinds = self.measurements.kinds
        target = filled(config, self.measurements.defaults)
        keys = set(self.best.config) | set(target)
        moves = config_moves(self.best.config, target, keys, kinds)
        if not moves:
            return Learned("untested", ())
        seen = self.along(frozenset(m.key for m in moves))
        findings = self._failures(moves, seen) or self._nearest_pairs(moves, seen)
        counts: dict[str, int] = dict(Counter(finding.outcome for finding in findings))
        call: Call = "untested"
        if "failed" in counts:
            call = "failed"
        elif "slower" in counts:
            call = "mixed" if "faster" in counts else "slower"
        elif "faster" in counts:
            call = "faster"
        elif findings:
            call = "no-gain"
        return Learned(call, moves, tuple(findings[:CITED_FINDINGS]), counts)

    def along(self, keys: frozenset[str]) -> tuple[Seen, ...]:
        """The measured configs read along `keys`, nearest the best first (then latest)."""
        if keys not in self._along:
            assert self.best is not None
            best, moved = self.best.config, sorted(keys)
            others = sorted(set(best) - keys)
            seen = [
                Seen(
                    entry,
                    readings(entry.config, keys, self.measurements.kinds),
                    codec.canonical_json({k: v for k, v in entry.config.items() if k not in keys}),
                    (
                        round(config_distance(entry.config, best, moved), 9),
                        round(config_distance(entry.config, best, others), 9) if others else 0.0,
                    ),
                )
                for entry in self.measurements.measured
            ]
            self._along[keys] = tuple(sorted(seen, key=lambda s: (s.distance, -s.entry.seq)))
        return self._along[keys]

    def _failures(self, moves: Sequence[Move], seen: Sequence[Seen]) -> list[Finding]:
        """Failed configs the candidate reaches: every way they moved from the best, the
        candidate moves too, at least as far."""
        assert self.best is not None
        keys = {m.key for m in moves}
        best = readings(self.best.config, keys, self.measurements.kinds)
        found = []
        for failed in sorted((s for s in seen if s.entry.failure), key=lambda s: -s.entry.seq):
            theirs = moves_between(best, failed.readings)
            if theirs and _reached(moves, theirs):
                found.append(Finding(theirs, self.best, failed.entry, "failed", None))
        return found

    def _nearest_pairs(self, moves: Sequence[Move], seen: Sequence[Seen]) -> list[Finding]:
        """The measured pairs that move only the candidate's ways (a slower one: no farther
        than the candidate goes), starting nearest the best."""
        ways = {m.way for m in moves}
        timed = [s for s in seen if s.entry.failure is None and s.entry.median_us]
        lanes = {id(s): _lane(s, moves) for s in timed}
        # Only configs in one lane can pair: the same everywhere the candidate keeps.
        groups: dict[tuple[Any, ...], list[Seen]] = {}
        for item in sorted(timed, key=lambda s: -s.entry.seq):  # latest first
            groups.setdefault(lanes[id(item)][0], []).append(item)
        found: list[Finding] = []
        nearest: tuple[float, float] | None = None
        for start in timed:
            if nearest is not None and start.distance != nearest:
                break
            lane, reach = lanes[id(start)]
            for end in groups[lane]:
                further = lanes[id(end)][1]
                if end is start or any(e < s for e, s in zip(further, reach, strict=True)):
                    continue  # goes some way back against the candidate's
                theirs = moves_between(start.readings, end.readings)
                if not theirs or not all(t.way in ways for t in theirs):
                    continue
                pair = self._pair(start.entry, end.entry, theirs)
                # A slower end is a limit, as a failure is: short of it, the time may still
                # fall (softmax: axis 1 from 4 to 32 slower, to 16 faster).
                if pair.outcome == "slower" and not _reached(moves, theirs):
                    continue
                found.append(pair)
                nearest = start.distance
        return found

    def _pair(self, start: MeasuredConfig, end: MeasuredConfig, moves: tuple[Move, ...]) -> Finding:
        assert start.median_us and end.median_us is not None
        ratio = end.median_us / start.median_us
        outcome: Outcome = "no-gain"
        noise = self.measurements.noise
        if ratio > 1.0 + noise:
            outcome = "slower"
        elif ratio < 1.0 - noise:
            outcome = "faster"
        return Finding(moves, start, end, outcome, ratio)


def _lane(item: Seen, moves: Sequence[Move]) -> tuple[tuple[Any, ...], tuple[float, ...]]:
    """Where a measured config lies for the candidate's `moves`: its lane (the other keys, and
    each changed key's positions the candidate keeps) and how far it is along the candidate's
    ways (each moved position, negated where the candidate goes smaller; 1 where a value the
    candidate sets is set). A pair can move only the candidate's ways when both share a lane and
    the second is no less far on any of them: a quick test before the exact one."""
    lane: list[Any] = [item.context]
    reach: list[float] = []
    for key, reading in item.readings.items():
        mine = [m for m in moves if m.key == key]
        if any(m.direction == "changed" for m in mine):
            reach.append(1.0 if reading.text == mine[0].value else 0.0)
            continue
        wheres = {m.where: m.direction for m in mine}
        positions = reading.positions
        if positions is None or not wheres.keys() <= positions.keys():
            lane.append(reading.text)  # pairs only with the very same value of this key
            continue
        lane.append(tuple(sorted((w, v) for w, v in positions.items() if w not in wheres)))
        reach.extend(
            positions[w] if direction == "larger" else -positions[w]
            for w, direction in sorted(wheres.items())
        )
    return tuple(lane), tuple(reach)


def _reached(moves: Sequence[Move], theirs: Sequence[Move]) -> bool:
    """True when `moves` go every way `theirs` go, and at least as far."""
    return all(any(m.reaches(t) for m in moves) for t in theirs)


def _values(config: Mapping[str, Any], keys: set[str], *, named: bool = True) -> str:
    """The values of `keys` in `config`, each after its key's name (or bare)."""
    return ", ".join(
        f"{k} {codec.canonical_json(config.get(k))}"
        if named
        else codec.canonical_json(config.get(k))
        for k in sorted(keys)
    )


def op_measurements(state: State) -> OpMeasurements:
    """The configs this op measured with the best's kernel, in the order they were measured."""
    manifest = state.manifest
    defaults = knob_defaults(state)
    kinds = {
        name: str(spec.get("kind", "json"))
        for name, spec in (manifest.knobs.items() if manifest is not None else ())
    }
    noise = float(effective_policy(state)["noise_threshold"])
    kernel = best_impl_digest(state)
    by_config: dict[str, MeasuredConfig] = {}
    other_kernel = 0
    baseline = state.baseline_best
    if baseline is not None and state.activation_digest == kernel:
        entry = MeasuredConfig(
            BASELINE, filled(baseline.config, defaults), baseline.time_us, None, 0
        )
        by_config[codec.canonical_json(entry.config)] = entry
    # Each attempt runs the kernel of the best when it starts, or its own (an algorithm change).
    running = state.activation_digest
    for attempt in state.attempts.values():
        ran = attempt.impl_digest or running
        if attempt.status == "verified" and attempt.verdict in ADOPTED:
            running = ran
        failure = attempt.failure if attempt.failure in CONFIG_FAILURES else None
        measurement = attempt.measurement
        if attempt.status not in ("verified", "failed") or (
            failure is None and (attempt.failure is not None or measurement is None)
        ):
            continue  # pending, abandoned, or failed for a reason the machine may decide
        if ran != kernel:
            other_kernel += 1
            continue
        config = filled(attempt.config, defaults)
        # A config measured again (a re-measure) is known by its latest measurement.
        by_config[codec.canonical_json(config)] = MeasuredConfig(
            attempt.id,
            config,
            measurement.median_us if measurement is not None and failure is None else None,
            failure,
            attempt.seq,
        )
    best = state.best
    entry_of_best = None
    if best is not None:
        entry_of_best = by_config.get(codec.canonical_json(filled(best.config, defaults)))
        if entry_of_best is None or entry_of_best.median_us is None:
            entry_of_best = MeasuredConfig(
                best.attempt or BASELINE, filled(best.config, defaults), best.time_us, None, 0
            )
    return OpMeasurements(
        best=entry_of_best,
        measured=tuple(sorted(by_config.values(), key=lambda m: m.seq)),
        kinds=kinds,
        defaults=defaults,
        noise=noise,
        other_kernel=other_kernel,
    )
