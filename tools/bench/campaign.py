"""A seeded synthetic campaign: the commands an agent would give, and the model of their times.

SYNTHETIC BENCH DATA. Every measurement is drawn from a seeded pseudo-random model (below),
not measured on any kernel; the provenance of every event says so (`host="bench-synthetic"`,
an `Origin.tool` of `bench-synthetic`). The script only proposes commands: `generate.Driver`
has each one decided by `stages.decide` and landed, and sends the events back.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Generator
from typing import Any

from ledger import __version__
from ledger.domain.replay import config_key
from ledger.domain.state import State
from ledger.log.record import Event
from ledger.schema.events import Origin, OutputCheck
from stages import commands as cmd

OP = "bench"
SYNTHETIC = "synthetic bench data (tools/bench/generate.py): not a measurement"
SYNTHETIC_HOST = "bench-synthetic"
IMPL_DIGEST = "sha256:" + hashlib.sha256(b"bench-synthetic impl").hexdigest()

# The time model (µs): attempts scatter around the best, pulled towards a floor that falls
# slowly as the campaign goes on, so that adopts keep happening at every size while the
# target (below the floor) is never met and the campaign never stops by itself.
BASELINE_US = 100.0
TARGET_US = 10.0
FLOOR_START_US, FLOOR_END_US = 40.0, 20.0

BASE_CONFIG: dict[str, Any] = {
    "vec_tile_shape": [1, 32, 1, 64],
    "unroll_list": [4, 2, 1],
    "stitch_function_max_num": 16,
    "mg_copy_cycles": 1024,
    "l0c_reuse_depth": 2,
    "vec_nbuffer_setting": {"-1": 2},
}
_VEC_AXES = (8, 16, 24, 32, 40, 48, 56, 64)
_UNROLLS = (32, 16, 8, 4, 2, 1)
_PRIORS = (
    "production kernel softmax_fwd",
    "production kernel layernorm",
    "ledger of op rmsnorm",
    "ledger of op gelu_tanh",
    "upstream kernel flash_attn_v2",
    "pypto sample add_rms",
)
_WORDS = (
    "fuse",
    "split",
    "reorder",
    "the",
    "reduction",
    "loop",
    "into",
    "two",
    "passes",
    "cache",
    "row",
    "max",
    "in",
    "l1",
    "use",
    "online",
    "softmax",
    "merge",
    "exp",
    "and",
    "sum",
    "tile",
    "by",
    "rows",
    "vectorize",
    "tail",
    "handling",
    "hoist",
    "scale",
    "out",
    "of",
    "inner",
    "double",
    "buffer",
    "input",
    "transpose",
    "before",
    "matmul",
    "prefetch",
    "next",
    "block",
    "skip",
    "masked",
    "lanes",
    "unroll",
    "k",
    "dimension",
)
_FAILURES = ("compile", "timeout", "oom", "runtime")
_FAILURE_DETAIL = {
    "compile": "pypto compile error: tile exceeds UB capacity (synthetic)",
    "timeout": "simulation exceeded 600 s (synthetic)",
    "oom": "simulator out of memory (synthetic)",
    "runtime": "kernel aborted with code 139 (synthetic)",
}
# Shares of the planned events spent in each config stage; the algorithm stage gets the rest,
# capped (its R9 check compares each idea with every failed one, as a real agent's few do).
_STAGE_SHARES = {"frontend": 0.40, "swimlane": 0.32, "incore": 0.28}
_ALGORITHM_EVENTS = (0.05, 600)
_PREFIX = {"frontend": "F", "swimlane": "S", "incore": "I"}
# Events per attempt in these campaigns (start, measure, verdict, and a share of the point
# and failure events): plans a campaign given in attempts.
ATTEMPT_EVENTS = 3
# A campaign script: yields commands; the driver sends back each one's landed events (None: R9
# refused it as a retry, draw another).
Script = Generator[cmd.Command, tuple[Event, ...] | None, None]


def _origin(rng: random.Random) -> Origin:
    return Origin(
        level="reported",
        tool=SYNTHETIC_HOST,
        tool_version=__version__,
        command=SYNTHETIC,
        output_digest="sha256:" + f"{rng.getrandbits(256):064x}",
    )


class Campaign:
    """A seeded campaign script: it yields commands and reads the state they produced."""

    def __init__(self, seed: int, planned_events: int, op: str = OP) -> None:
        self.rng = random.Random(seed)
        self.op = op
        self.seed = seed
        self.planned = max(planned_events, 200)
        self.state = State()
        self.attempts = 0
        self.stuck = False

    # --- the time model ---------------------------------------------------------------------

    def _floor(self) -> float:
        progress = min(1.0, self.state.event_count / self.planned)
        return FLOOR_START_US + (FLOOR_END_US - FLOOR_START_US) * progress

    def _times(self, candidate: bool) -> tuple[float, ...]:
        rng = self.rng
        best = self.state.best.time_us if self.state.best else BASELINE_US
        floor = self._floor()
        spread = rng.lognormvariate(0.25 if candidate else 0.1, 0.3)
        # Never below the floor (> target): the campaign never reaches its target.
        true_us = floor + max(best - floor, 0.02 * floor) * spread
        if rng.random() < 0.15:  # repeated samples: the bootstrap path of R8
            return tuple(round(true_us * rng.gauss(1.0, 0.01), 3) for _ in range(5))
        return (round(true_us, 3),)

    # --- configs --------------------------------------------------------------------------

    def _value(self, param: str) -> Any:
        rng = self.rng
        if param == "vec_tile_shape":
            return [1, rng.choice(_VEC_AXES), 1, rng.choice(_VEC_AXES)]
        if param == "unroll_list":
            chosen = [u for u in _UNROLLS if rng.random() < 0.5]
            return chosen or [1]
        if param == "stitch_function_max_num":
            return rng.randint(1, 4096)
        if param == "mg_copy_cycles":
            return 64 * rng.randint(1, 256)
        if param == "l0c_reuse_depth":
            return rng.randint(1, 64)
        return {"-1": rng.randint(1, 8)}

    def _config(self) -> dict[str, Any]:
        return {param: self._value(param) for param in BASE_CONFIG}

    def _mutation(self) -> cmd.TryMutation | None:
        """One parameter of the best config set to a value not measured yet (R6, R9); None
        when sixty draws found none (the point is as good as exhausted)."""
        best = self.state.best.config if self.state.best else BASE_CONFIG
        measured = self.state.measured_configs
        for _ in range(60):  # skip values R9 would refuse: deciding a refusal costs more
            param = self.rng.choice(list(BASE_CONFIG))
            value = self._value(param)
            if value != best.get(param) and config_key({**best, param: value}) not in measured:
                return cmd.TryMutation(param=param, value=value)
        return None

    def _idea(self) -> str:
        return " ".join(self.rng.sample(_WORDS, self.rng.randint(6, 10)))

    # --- the script -------------------------------------------------------------------------

    def script(self) -> Script:
        """The commands of the whole campaign; `send` the events of each (None: refused R9)."""
        rng = self.rng
        yield cmd.Init(op=self.op)
        outputs = (
            OutputCheck(name="y", all_close=True, max_diff=3.1e-06),
            OutputCheck(name="lse", all_close=True, max_diff=0.0),
        )
        yield cmd.RecordCompare(
            outputs=outputs,
            impl_path=f"custom/{self.op}/{self.op}_impl.py",
            impl_digest=IMPL_DIGEST,
            origin=_origin(rng),
        )
        yield cmd.RecordLayout(
            exit_code=0,
            impl_path=f"custom/{self.op}/{self.op}_impl.py",
            impl_digest=IMPL_DIGEST,
            origin=_origin(rng),
        )
        yield cmd.Activate(impl_digest=IMPL_DIGEST)
        yield cmd.LoadSkill(name="pypto-op-perf-tune")
        yield cmd.LoadSkill(name="perf-analyzer")
        yield cmd.SetTarget(
            baseline_us=BASELINE_US,
            shape="32x1x4096",
            target_us=TARGET_US,
            target_source="spec",
            source_ref="SPEC.md perf_target (synthetic)",
            config=dict(BASE_CONFIG),
            origin=_origin(rng),
            baseline_samples_us=(99.2, 100.0, 100.4, 99.8, 100.9),
            util_pct=41.5,
            bubble_pct=33.0,
        )
        algorithm_events = min(int(self.planned * _ALGORITHM_EVENTS[0]), _ALGORITHM_EVENTS[1])
        config_events = self.planned - algorithm_events - self.state.event_count
        end = self.state.event_count
        for stage, share in _STAGE_SHARES.items():
            end += int(config_events * share)
            yield from self._stage(stage, end)
        yield cmd.RecordReport(
            path=f"custom/{self.op}/{self.op}_tuning_report.md",
            digest="sha256:" + f"{rng.getrandbits(256):064x}",
        )
        yield cmd.EnterStage(stage="algorithm")
        while True:  # runs on past the plan for as long as the caller drives it
            yield from self._attempt(
                lambda: cmd.TryAlgorithm(
                    description=self._idea(),
                    impl_digest="sha256:" + f"{self.rng.getrandbits(256):064x}",
                )
            )

    def _stage(self, stage: str, end: int) -> Script:
        rng = self.rng
        yield cmd.EnterStage(stage=stage)
        yield cmd.LoadSkill(name=f"tune-{stage}")
        number = 0
        while self.state.event_count < end or number == 0:
            number += 1
            name = f"{_PREFIX[stage]}-{number}"
            yield cmd.OpenPoint(name=name)
            if rng.random() < 0.05:
                yield cmd.ClosePoint(
                    name=name,
                    reason="not applicable to this kernel (synthetic)",
                    not_applicable=True,
                )
                continue
            for _ in range(rng.randint(8, 12)):
                yield from self._attempt(
                    lambda: cmd.ProposeCandidate(config=self._config(), prior=rng.choice(_PRIORS))
                )
            self.stuck = False
            while (
                self.state.points[name].is_open and self.state.event_count < end and not self.stuck
            ):
                yield from self._attempt(self._mutation)
            if self.state.points[name].is_open:
                yield cmd.ClosePoint(name=name, reason="moving on (synthetic)")
            if rng.random() < 0.02:
                yield cmd.AddNote(text=f"point {name}: {self._idea()} (synthetic note)")
        yield cmd.ExitStage(stage=stage)
        yield cmd.UnloadSkill(name=f"tune-{stage}")

    def _attempt(self, make: Callable[[], cmd.Command | None]) -> Script:
        """Start an attempt (drawing again while R9 refuses it), then verify, fail or abandon."""
        rng = self.rng
        for _ in range(50):
            command = make()
            if command is None:
                self.stuck = True  # every neighbour measured: the caller closes the point
                return
            events = yield command
            if events is not None:
                break
        else:
            self.stuck = True  # every neighbour measured: the caller closes the point
            return
        self.attempts += 1
        attempt = self.state.pending
        assert attempt is not None
        draw = rng.random()
        if draw < 0.06:
            category = rng.choice(_FAILURES)
            yield cmd.Fail(
                attempt=attempt,
                category=category,
                detail=_FAILURE_DETAIL[category],
                origin=_origin(rng),
            )
            return
        if draw < 0.065:
            yield cmd.Abandon(
                attempt=attempt, reason="session restarted before the verifier finished (synthetic)"
            )
            return
        candidate = isinstance(command, cmd.ProposeCandidate)
        accurate = draw >= 0.08
        outputs = (
            OutputCheck(
                name="y",
                all_close=accurate,
                max_diff=round(rng.uniform(0, 2e-5 if accurate else 0.5), 9),
            ),
            OutputCheck(name="lse", all_close=True, max_diff=0.0),
        )
        yield cmd.Verify(
            attempt=attempt,
            outputs=outputs,
            layout_exit=0,
            times_us=self._times(candidate),
            origin=_origin(rng),
            util_pct=round(rng.uniform(30, 78), 2),
            bubble_pct=round(rng.uniform(12, 45), 2),
            metrics={"cycles": float(rng.randint(10**5, 10**6))},
        )
