"""One op's campaign driven to a stop through the ledger's API, and where its wall time went.

Each `step` takes the next step the protocol allows on the state replayed from the ledger, so
a campaign resumes wherever it was interrupted; tools/autopilot.py is its command.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import ledger
from ledger.domain.state import State
from ledger.errors import HandBack, RetryRefusal, RuleRefusal
from ledger.log import codec
from ledger.projections.verdict_result import attempt_result
from ledger.shell import measure as measuring
from ledger.shell import measure_plan as planning
from ledger.shell import report_files
from ledger.shell.api import OpLedger, StepResult
from ledger.shell.layout_check import adapter_package
from ledger.shell.manifest_file import read_manifest
from ledger.shell.measure import Cancel, Executor
from stages import commands as cmd
from stages.policy import effective_policy

from . import measure_ahead, search_space
from .dispatch import ONE_WORKER, Dispatch, Placement, dispatch
from .measure_ahead import MeasureAhead
from .progress import Progress
from .pypto import runner as pypto_runner
from .pypto import warm as warm_worker

BASE_SKILLS = ("pypto-op-perf-tune", "perf-analyzer")
CONFIG_STAGES = ("frontend", "swimlane", "incore")
BUDGET_POLICY_REASON = "the autopilot's budget option (R10: devices cost)"
# Recorded with the policy event, so a reviewer sees why the autopilot deviates from the default.
UTILIZATION_POLICY_REASON = (
    "as in the upstream tune skills, the utilization/bubble limit is judged in incore: in "
    "frontend and swimlane it counts busy time, not useful work (SPEC.md: vec tile "
    "[1,16,1,64] measures 25.17 us, [1,32,1,256] 6.37 us)"
)


class Timer:
    """Wall time spent in the ledger vs in PyPTO runs (the ledger's share, issue 8)."""

    def __init__(self) -> None:
        self.ledger_s = 0.0
        self.pypto_s = 0.0
        self.runs = 0
        self.started = time.monotonic()

    def ledger(self, fn: Callable[[], Any]) -> Any:
        """Run a ledger call and count its time."""
        t = time.monotonic()
        try:
            return fn()
        finally:
            self.ledger_s += time.monotonic() - t

    def summary(self) -> dict[str, Any]:
        """Totals for the closing summary."""
        wall = time.monotonic() - self.started
        return {
            "wall_s": round(wall, 2),
            "ledger_s": round(self.ledger_s, 2),
            "pypto_s": round(self.pypto_s, 2),
            "pypto_runs": self.runs,
            "ledger_share": round(self.ledger_s / wall, 4) if wall else 0.0,
        }


class Autopilot:
    """One op's campaign driven to a stop, one ledger command at a time."""

    def __init__(
        self,
        root: Path,
        op: str,
        python: str,
        max_attempts: int,
        progress: Progress,
        placement: Placement = ONE_WORKER,
        warm: bool = False,
        budgets: Mapping[str, float] | None = None,
    ) -> None:
        self.root = root
        # R10 budgets to set as the op's policy (stages/budget.py): tightened by the autopilot,
        # never loosened (only a person does, `policy --person`).
        self.budgets = dict(budgets or {})
        self.op = op
        self.ledger = OpLedger(root, op)
        self.python = python
        self.max_attempts = max_attempts
        self.progress = progress
        self.say = progress.say
        self.timer = Timer()
        self.space = search_space.load(root / "custom" / op)
        # The live line's phase file, outside the op folder (it holds only what people commit).
        self.phase_file = Path(tempfile.mkdtemp(prefix="tune-ledger-phase-")) / "pypto-phase"
        # Where the verifier runs: processes here, this host's NPUs, or a Ray cluster's
        # (tools/dispatch.py); the PyPTO adapter holds an NPU's lock itself while it measures.
        self.dispatch: Dispatch = dispatch(
            placement,
            verifier_locks=self.verifier_is_adapter(),
            pythonpath=self.import_folders(),
            cores=os.cpu_count() or 1,
        )
        # A process that imported pypto and torch once; the adapter runs each of its children
        # in a fork of it (tools/pypto/warm.py), whoever starts the adapter: `tune-ledger
        # measure` or a measure-ahead worker. Only for a verifier that is the adapter, and only
        # on this host (a Ray task runs on another).
        self.warm: warm_worker.Worker | None = None
        if warm and placement.executor == "local":
            self.warm = self.start_warm_worker()
        # One worker: each config is run when the ledger measures it, as before measure-ahead.
        workers = self.dispatch.workers
        self.ahead = (
            MeasureAhead([functools.partial(self.measure_ahead, executor=e) for e in workers])
            if len(workers) > 1
            else None
        )

    def close(self) -> None:
        """Stop the measure-ahead workers (their runs in flight are killed, not cached), then
        the warm worker."""
        if self.ahead is not None:
            self.ahead.close()
        if self.warm is not None:
            self.warm.close()
        shutil.rmtree(self.phase_file.parent, ignore_errors=True)

    def verifier_is_adapter(self) -> bool:
        """Whether SPEC.md's verifier is the PyPTO adapter (it can use the warm worker, and
        holds an NPU's lock itself while it measures)."""
        manifest = read_manifest(self.ledger.dir)
        verifier = manifest.verifier if manifest is not None else None
        return verifier is not None and f"{warm_worker.__package__}.run" in verifier.argv

    def start_warm_worker(self) -> warm_worker.Worker | None:
        """The warm worker for this campaign's verifier runs, when SPEC.md's verifier is the
        PyPTO adapter (another verifier would never use it)."""
        if not self.verifier_is_adapter():
            return None
        base = pypto_runner.child_environment(self.environment(), output_dir=None, home=None)
        return warm_worker.start(self.python, base)

    # --- plumbing -------------------------------------------------------------------------

    def state(self) -> State:
        """The state replayed from the ledger now."""
        if not self.ledger.exists():
            return State()
        loaded: State = self.timer.ledger(lambda: self.ledger.load().state)
        return loaded

    def run(self, command: Any) -> Any:
        """Execute one ledger command through the API."""
        return self.timer.ledger(
            lambda: self.ledger.execute(command, command_line=f"autopilot {type(command).__name__}")
        )

    def import_folders(self) -> list[str]:
        """The folders the packages this process runs (the ledger, the adapter) import from."""
        package = adapter_package()
        folders = [str(Path(ledger.__file__).resolve().parents[1])]
        return folders + ([str(package[1])] if package else [])

    def environment(self) -> dict[str, str]:
        """This environment, with the packages this process runs (the ledger, the adapter)
        importable by the processes it starts, whatever folder they run in."""
        existing = os.environ.get("PYTHONPATH")
        folders = [*self.import_folders(), *([existing] if existing else [])]
        return {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(folders),
            **(self.warm.environment() if self.warm is not None else {}),
        }

    def workflow(self, phase: str, call: Callable[[dict[str, str]], StepResult]) -> StepResult:
        """Run one of the API's workflows that run the verifier or the layout check
        (ledger/shell/workflows.py) in this process, showing the PyPTO run on the live line;
        the runs' own time counts as PyPTO's, the rest as the ledger's."""
        phase_file = self.phase_file
        env = {**self.environment(), "TUNE_LEDGER_PROGRESS_FILE": str(phase_file)}
        started = time.monotonic()
        ran = 0.0
        try:
            with self.progress.running(phase, phase_file):
                outcome = call(env)
            ran = _run_seconds(outcome)
        finally:
            total = time.monotonic() - started
            self.timer.pypto_s += ran
            self.timer.ledger_s += total - ran
            self.timer.runs += 1
        return outcome

    def measure_ahead(
        self, config: dict[str, Any], on_start: Callable[[Cancel], None], executor: Executor
    ) -> None:
        """A worker's run of `config` by `executor` into the measurement cache
        (tools/measure_ahead.py)."""
        manifest = read_manifest(self.ledger.dir)
        plan = planning.plan_config(
            manifest, config, "measure-ahead", None, root=self.root, op=self.op, python=self.python
        )
        measuring.run(
            plan,
            manifest,
            op=self.op,
            python=self.python,
            env=self.environment(),
            on_start=on_start,
            executor=executor,
        )

    # --- the protocol, step by step -----------------------------------------------------------

    def step(self) -> bool:
        """Take the next step the protocol allows; False when the campaign has stopped."""
        state = self.state()
        if state.op is None:
            self.run(cmd.Init(op=self.op))
            self.say(f"initialized {self.op}")
            return True
        if state.stopped:
            return False
        if not state.activated:
            self.activate(state)
            return True
        if state.target is None:
            self.write_target_sheet(state)
            return True
        if effective_policy(state)["utilization_stop_stages"] != ["incore"]:
            self.run(
                cmd.SetPolicy(
                    key="utilization_stop_stages",
                    value=["incore"],
                    reason=UTILIZATION_POLICY_REASON,
                )
            )
            self.say("policy: the utilization stop applies in incore only")
            return True
        if self.set_budget(state):
            return True
        for skill in BASE_SKILLS:
            if skill not in state.skills:
                self.run(cmd.LoadSkill(name=skill))
                self.say(f"loaded skill {skill}")
                return True
        if state.pending is not None:
            self.verify(state, state.pending)
            return True
        return self.advance(state)

    def activate(self, state: State) -> None:
        """Record real accuracy evidence and the layout check, then activate (R1)."""
        digest = codec.digest((self.ledger.dir / f"{self.op}_impl.py").read_bytes())
        # Evidence counts only for the current implementation (R1). Failing evidence for it
        # is not measured again (the run is deterministic): activation hands back, and once
        # someone fixes the kernel its digest changes and fresh evidence is recorded.
        compare_ok = state.compare is not None and state.compare.impl_digest == digest
        layout_ok = state.layout is not None and state.layout.impl_digest == digest
        if not compare_ok:
            self.workflow(
                "activation: E2E compare",
                lambda env: self.ledger.evidence_from_spec(
                    "compare", python=self.python, env=env, executor=self.dispatch.ledger
                ),
            )
            self.say("recorded E2E tensor compare (the manifest's verifier, pass-verify vs golden)")
            return
        if not layout_ok:
            outcome = self.workflow(
                "activation: layout check",
                lambda env: self.ledger.evidence_from_spec("layout", python=self.python, env=env),
            )
            self.say(f"recorded layout check: exit {outcome.events[-1].data['exit_code']}")
            return
        try:
            self.run(cmd.Activate(impl_digest=digest))
        except HandBack:
            self.say("activation failed: handing back to the orchestrator")
            raise
        self.say("activation passed")

    def write_target_sheet(self, state: State) -> None:
        """The target sheet from SPEC.md: the ledger measures the baseline itself (R3)."""
        outcome = self.workflow(
            "target sheet: baseline",
            lambda env: self.ledger.target_from_spec(
                python=self.python,
                cube_m=self.space.spec.cube_m,
                env=env,
                executor=self.dispatch.ledger,
            ),
        )
        sheet = next(e.data for e in outcome.events if e.type == "target.set")
        self.say(
            f"target sheet: baseline {sheet['baseline_us']:.2f} µs, target "
            f"{sheet['target_us']:.2f} µs (from SPEC.md, measured by the ledger)"
        )

    def verify(self, state: State, attempt_id: str) -> None:
        """`measure`: the ledger runs the verifier and gives the verdict (R8, R11)."""
        attempt = state.attempts[attempt_id]
        change = search_space.describe(attempt)
        label = f"#{attempt.seq} {state.stage} {state.open_point}: {change}"
        if self.ahead is not None:
            # The pending config first, then the guesses; the ledger measures it once its
            # worker is done, and finds the run in the cache.
            guesses = measure_ahead.upcoming(self.space, state, self.root, self.op)
            self.ahead.plan(attempt.config, guesses)
            phase_file = self.phase_file
            started = time.monotonic()
            with self.progress.running(f"{label} (measure-ahead)", phase_file):
                self.ahead.wait(attempt.config)
            self.timer.pypto_s += time.monotonic() - started
        outcome = self.workflow(
            label,
            lambda env: self.ledger.measure(
                attempt_id, python=self.python, env=env, executor=self.dispatch.ledger
            ),
        )
        result = attempt_result(outcome.events)
        best = self.state().best
        self.progress.attempt(
            label,
            str(result.get("verdict") or "failed"),
            result.get("failure"),
            result.get("time_us"),
            best.time_us if best else None,
        )

    def advance(self, state: State) -> bool:
        """Move the search on: next candidate or mutation, close points, change stages."""
        stage = state.stage
        if stage is None or stage in state.exited:
            return self.next_stage(state)
        if stage not in CONFIG_STAGES:
            return self.finish(state, "the autopilot tunes configuration stages only")
        if len(state.attempts) >= self.max_attempts:
            return self.finish(state, f"attempt budget of {self.max_attempts} used up")
        if state.open_point is None:
            return self.next_point(state, stage)
        return self.search(state, stage, state.open_point)

    def next_stage(self, state: State) -> bool:
        """Unload the finished stage's skill, then enter the next stage and load its skill."""
        done = [s for s in CONFIG_STAGES if s in state.exited]
        for skill in state.skills:
            if skill.startswith("tune-"):
                self.run(cmd.UnloadSkill(name=skill))
                self.say(f"unloaded {skill}")
                return True
        if len(done) == len(CONFIG_STAGES):
            if not state.report_after_incore:
                written = self.timer.ledger(lambda: report_files.write_report(self.ledger))
                self.say(f"report written: {written['path']}")
                return True
            return self.finish(
                state, "configuration stages done; the algorithm stage is left to the agent"
            )
        stage = CONFIG_STAGES[len(done)]
        self.run(cmd.EnterStage(stage=stage))
        self.run(cmd.LoadSkill(name=f"tune-{stage}"))
        self.say(f"stage {stage}: entered, tune-{stage} loaded")
        return True

    def next_point(self, state: State, stage: str) -> bool:
        """Open the stage's next point, or exit the stage when all are closed (R4, R7)."""
        for name in self.space.points(stage):
            if name not in state.points:
                self.run(cmd.OpenPoint(name=name))
                self.say(f" point {name} opened")
                return True
        reason = "every optimization point of the stage is closed"
        self.run(cmd.ExitStage(stage=stage, reason=reason))
        self.say(f"stage {stage}: exited")
        return True

    def search(self, state: State, stage: str, point: str) -> bool:
        """One step of constrained search in the open point: a candidate, else a mutation."""
        progress = state.points[point]
        if progress.mutations == 0:
            for config, prior in self.space.candidates(state, self.root, self.op, point):
                if self.start(cmd.ProposeCandidate(config=config, prior=prior)):
                    return True
        for param, value in self.space.mutations(state, point):
            if self.start(cmd.TryMutation(param=param, value=value)):
                return True
        relaxation = self.space.relaxation(state, point)
        if relaxation is not None:
            self.run(relaxation)
            self.say(
                f" relaxed the {relaxation.what} tile limit to {relaxation.limit}: "
                f"{relaxation.basis}"
            )
            return True
        self.run(cmd.ClosePoint(name=point, reason="no untried single-parameter mutation left"))
        self.say(f" point {point} closed: nothing left to try")
        return True

    def start(self, command: Any) -> bool:
        """Start an attempt; False when the ledger refuses it as a retry or beyond a limit."""
        try:
            self.run(command)
        except (RetryRefusal, RuleRefusal) as e:
            if e.rule in ("R9", "R3", "R6"):
                return False
            raise
        return True

    def set_budget(self, state: State) -> bool:
        """Record the next budget asked for that is tighter than the op's (R10); True when one
        was recorded. A looser one is left to a person, said once."""
        policy = effective_policy(state)
        for key, value in sorted(self.budgets.items()):
            current = policy.get(key)
            if current == value:
                continue
            if current is not None and value > current:
                self.say(
                    f"policy: {key} stays {current:g}: only a person loosens a budget "
                    f"(tune-ledger policy {self.op} --{key.replace('_', '-')} {value:g} "
                    "--person NAME --reason TEXT)"
                )
                self.budgets.pop(key)
                return False
            self.run(cmd.SetPolicy(key=key, value=value, reason=BUDGET_POLICY_REASON))
            self.say(f"policy: {key} = {value:g} (R10 budget)")
            return True
        return False

    def finish(self, state: State, reason: str) -> bool:
        """Stop the campaign (R10: the user's stop, here the autopilot's operator)."""
        self.run(cmd.Stop(reason=reason))
        self.say(f"stopped: {reason}")
        return False


def _run_seconds(outcome: StepResult) -> float:
    """How long the runs the outcome records took now (a run read from the measurement cache
    took none): the PyPTO side of a workflow's time."""
    seconds = 0.0
    for event in outcome.events:
        origin = event.data.get("origin")
        if isinstance(origin, dict) and origin.get("cached") is None:
            seconds += float(origin.get("duration_s") or 0.0)
    return seconds
