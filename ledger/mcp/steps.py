"""One tool per protocol step (DESIGN §3): each runs the CLI command of the same name with
`--json` and returns its JSON object; a refusal is a tool error carrying the CLI's error
object (rule, error, blocking, next, allowed, code)."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from mcp.types import CallToolResult
from pydantic import Field

from ledger.mcp.arguments import (
    Attempt,
    Config,
    Failure,
    Impl,
    MaxDiffs,
    Op,
    Outputs,
    OverrideRetry,
    Percent,
    Reason,
    RunCommand,
    Stage,
    command_line,
    options,
)
from ledger.mcp.invoke import Invoker

Key = Annotated[
    str | None,
    Field(
        description="Idempotency key: a call retried with the same key (after a timeout or a "
        "crash) returns the original result without appending again; never reuse it for "
        "another call."
    ),
]
Python = Annotated[
    str | None,
    Field(
        description="The interpreter the verifier template's {python} stands for (default: the "
        "server's own)."
    ),
]
FromSpec = Annotated[
    bool,
    Field(
        description="Let the ledger run the check from the op folder on SPEC.md's baseline "
        "config (the verifier for the compare, layout_check.py for the layout): measured, "
        "the preferred source for an op with a manifest."
    ),
]
Result = CallToolResult
# The skills of R2 (ledger.schema.events.SKILLS; tests/test_mcp_arguments.py compares them).
Skill = Literal[
    "pypto-op-perf-tune", "perf-analyzer", "tune-frontend", "tune-swimlane", "tune-incore"
]


class StepTools:
    """The state-changing steps, as tools over one Invoker."""

    def __init__(self, invoker: Invoker) -> None:
        self.invoker = invoker

    def _run(
        self, key: str | None, words: list[str], values: list[str], argv: list[str] | None = None
    ) -> Result:
        return self.invoker.call(command_line(words, values, argv, idempotency_key=key))

    def init(self, op: Op, idempotency_key: Key = None) -> Result:
        """Create custom/OP/events.jsonl and MEMORY.md for a new op (the folder must hold
        OP_impl.py's future home)."""
        return self._run(idempotency_key, ["init"], [op])

    def evidence_compare(
        self,
        op: Op,
        output: Outputs | None = None,
        max_diff: MaxDiffs | None = None,
        from_json: Annotated[
            str | None, Field(description="A JSON file with outputs [{name, all_close, max_diff}].")
        ] = None,
        run: RunCommand = None,
        from_spec: FromSpec = False,
        python: Python = None,
        impl: Impl = None,
        idempotency_key: Key = None,
    ) -> Result:
        """Record the E2E tensor compare against the golden (R1): give `from_spec` (an op with
        a manifest), `run`, `from_json` or `output`."""
        argv = options(
            output=output,
            max_diff=max_diff,
            from_json=from_json,
            run=run,
            from_spec=from_spec,
            python=python,
            impl=impl,
        )
        return self._run(idempotency_key, ["evidence", "compare"], [op], argv)

    def evidence_layout(
        self,
        op: Op,
        exit_code: Annotated[
            int | None, Field(description="The layout check's exit code (0 passes).")
        ] = None,
        run: RunCommand = None,
        from_spec: FromSpec = False,
        python: Python = None,
        impl: Impl = None,
        idempotency_key: Key = None,
    ) -> Result:
        """Record the op's layout check (R1): `from_spec` (an op with a manifest), run it with
        `run`, or its exit code."""
        argv = options(exit_code=exit_code, run=run, from_spec=from_spec, python=python, impl=impl)
        return self._run(idempotency_key, ["evidence", "layout"], [op], argv)

    def activate(self, op: Op, impl: Impl = None, idempotency_key: Key = None) -> Result:
        """Open tuning when both pieces of evidence pass for the current implementation (R1); a
        failure hands back (code 5)."""
        return self._run(idempotency_key, ["activate"], [op], options(impl=impl))

    def target(
        self,
        op: Op,
        baseline: Annotated[
            str | float | None,
            Field(description="The measured baseline time (`78.73us`; bare = ms)."),
        ] = None,
        shape: Annotated[
            str | None,
            Field(description="The SPEC's P0 shape measured: `32x32x1x256` or `[32, 32, 1, 256]`."),
        ] = None,
        target: Annotated[
            str | float | None, Field(description="The target time (`30us`; bare = ms).")
        ] = None,
        target_source: Annotated[
            Literal["spec", "upstream", "torch-eager"] | None,
            Field(
                description="Where the target comes from (precedence: spec, upstream, torch-eager)."
            ),
        ] = None,
        source_ref: Annotated[
            str | None, Field(description="The SPEC line or kernel the target cites.")
        ] = None,
        config: Annotated[
            dict[str, Any] | None,
            Field(
                description="The config (JSON object) the baseline was measured with: the first "
                "best. Default {}."
            ),
        ] = None,
        tool: Annotated[
            str | None, Field(description="The tool that measured the baseline.")
        ] = None,
        util: Percent = None,
        bubble: Percent = None,
        run: RunCommand = None,
        from_json: Annotated[
            str | None, Field(description="A measurement JSON file for the baseline.")
        ] = None,
        from_spec: Annotated[
            bool,
            Field(
                description="Take shape, target and baseline config from SPEC.md's manifest and "
                "measure the baseline with its verifier."
            ),
        ] = False,
        metric: Annotated[
            str | None,
            Field(description="Which execution time is compared (default `time`)."),
        ] = None,
        cube_m: Annotated[
            int | None,
            Field(description="M of the cube problem: selects the cube tile table's row.", ge=1),
        ] = None,
        python: Python = None,
        idempotency_key: Key = None,
    ) -> Result:
        """Write the Performance target sheet (R3): baseline, P0 shape, target and its source."""
        argv = options(
            baseline=baseline, shape=shape, target=target, target_source=target_source,
            source_ref=source_ref, config=config, tool=tool, util=util, bubble=bubble, run=run,
            from_json=from_json, from_spec=from_spec, metric=metric, cube_m=cube_m, python=python,
        )  # fmt: skip
        return self._run(idempotency_key, ["target"], [op], argv)

    def relax(
        self,
        op: Op,
        what: Annotated[
            Literal["vec", "cube"],
            Field(description="Which tile-shape limit: vec (per axis) or cube (the shape table)."),
        ],
        limit: Annotated[
            int | list[Any],
            Field(
                description="The new limit: an integer for vec (per axis), the cube tile list "
                "for cube (e.g. [[128, 128, 128]])."
            ),
        ],
        basis: Annotated[
            str,
            Field(
                description="The measured data that justifies it (e.g. the gain of the previous "
                "growth)."
            ),
        ],
        evidence: Annotated[
            list[str] | None,
            Field(
                description="The measured attempts of this op the relaxation rests on (attempt "
                "ids; at least one, or R3 refuses: measure one with `measure` first). Their "
                "times and profile metrics are shown beside the basis on the target sheet."
            ),
        ] = None,
        idempotency_key: Key = None,
    ) -> Result:
        """Relax a tile-shape limit on measured evidence: the attempts of this op whose
        profiling data justifies it (R3). Relaxing without evidence is a person's decision."""
        value = json.dumps(limit) if isinstance(limit, list) else limit
        argv = options(what=what, limit=value, basis=basis, evidence=evidence)
        return self._run(idempotency_key, ["relax"], [op], argv)

    def skill_load(
        self,
        op: Op,
        name: Annotated[
            Skill,
            Field(description="The skill: a base skill, or a stage's tune skill (inside it)."),
        ],
        idempotency_key: Key = None,
    ) -> Result:
        """Load a skill within the budget (R2): tune skills only inside their stage."""
        return self._run(idempotency_key, ["skill", "load"], [op, name])

    def skill_unload(
        self,
        op: Op,
        name: Annotated[Skill, Field(description="A loaded skill.")],
        idempotency_key: Key = None,
    ) -> Result:
        """Unload a skill, freeing its place in the budget (R2)."""
        return self._run(idempotency_key, ["skill", "unload"], [op, name])

    def stage_enter(
        self,
        op: Op,
        name: Annotated[Stage, Field(description="The next stage of the pipeline.")],
        idempotency_key: Key = None,
    ) -> Result:
        """Enter the next stage: frontend -> swimlane -> incore -> algorithm (R4)."""
        return self._run(idempotency_key, ["stage", "enter"], [op, name])

    def stage_exit(
        self,
        op: Op,
        name: Annotated[Stage, Field(description="The current stage.")],
        reason: Annotated[str | None, Field(description="Why the stage ends.")] = None,
        user_stop: Annotated[
            bool, Field(description="Exit because the user said stop (R4).")
        ] = False,
        hand_back: Annotated[
            bool,
            Field(description="Leave the algorithm stage by handing the result back (R4)."),
        ] = False,
        idempotency_key: Key = None,
    ) -> Result:
        """Leave the current stage once its points are closed (R4, R7)."""
        argv = options(reason=reason, user_stop=user_stop, hand_back=hand_back)
        return self._run(idempotency_key, ["stage", "exit"], [op, name], argv)

    def point_open(
        self,
        op: Op,
        name: Annotated[str, Field(description="The optimization point, e.g. vec_tile_shape.")],
        knob: Annotated[
            list[str] | None,
            Field(
                description="The op manifest's knobs this point tunes (default: the knob NAME); "
                "a change of another knob is refused (R7)."
            ),
        ] = None,
        idempotency_key: Key = None,
    ) -> Result:
        """Open an optimization point of the current stage (R7)."""
        return self._run(idempotency_key, ["point", "open"], [op, name], options(knob=knob))

    def point_close(
        self,
        op: Op,
        name: Annotated[str, Field(description="An open point.")],
        reason: Reason,
        not_applicable: Annotated[
            bool, Field(description="The point does not apply to this op.")
        ] = False,
        idempotency_key: Key = None,
    ) -> Result:
        """Close an optimization point as done (or not applicable) with a reason (R7)."""
        argv = options(reason=reason, not_applicable=not_applicable)
        return self._run(idempotency_key, ["point", "close"], [op, name], argv)

    def candidate(
        self,
        op: Op,
        config: Config,
        prior: Annotated[
            str,
            Field(
                description="Where the candidate comes from: a kernel file:line, another op's "
                "ledger, a `priors` proposal."
            ),
        ],
        override_retry: OverrideRetry = None,
        idempotency_key: Key = None,
    ) -> Result:
        """Start a candidate config from a prior (R7); returns the attempt id, then measure and
        verify it."""
        argv = options(config=config, prior=prior, override_retry=override_retry)
        return self._run(idempotency_key, ["candidate"], [op], argv)

    def try_(
        self,
        op: Op,
        change: Annotated[
            str | None,
            Field(
                description="One parameter change of the best config (the CLI's --set): "
                "`PARAM=JSON`, e.g. `vec_tile_shape=[1,16,1,64]`."
            ),
        ] = None,
        algorithm: Annotated[
            str | None, Field(description="An algorithm change, described (algorithm stage only).")
        ] = None,
        impl: Impl = None,
        override_retry: OverrideRetry = None,
        idempotency_key: Key = None,
    ) -> Result:
        """Start one single-parameter mutation of the best (R5, R6) or an algorithm change; returns
        the attempt id."""
        argv = options(set_=change, algorithm=algorithm, impl=impl, override_retry=override_retry)
        return self._run(idempotency_key, ["try"], [op], argv)

    def measure(
        self,
        op: Op,
        attempt: Attempt = "pending",  # as the CLI's `measure OP [ATTEMPT]`
        dry_run: Annotated[
            bool, Field(description="Only print the verifier command; run and write nothing.")
        ] = False,
        python: Python = None,
        idempotency_key: Key = None,
    ) -> Result:
        """Run SPEC.md's verifier on the attempt's config and record its verdict (R8, R11
        measured)."""
        argv = options(dry_run=dry_run, python=python)
        return self._run(idempotency_key, ["measure"], [op, attempt], argv)

    def verify(
        self,
        op: Op,
        attempt: Attempt,
        output: Outputs | None = None,
        max_diff: MaxDiffs | None = None,
        layout_exit: Annotated[
            int | None, Field(description="The layout check's exit code.")
        ] = None,
        time: Annotated[
            list[str | float] | str | float | None,
            Field(
                description="The measured time, or a list of one per sample (`25.17us`, "
                "`0.03ms`; a bare number = ms)."
            ),
        ] = None,
        util: Percent = None,
        bubble: Percent = None,
        perf_dir: Annotated[
            str | None, Field(description="A PyPTO output folder, or one holding measurement.json.")
        ] = None,
        from_json: Annotated[str | None, Field(description="A measurement JSON file.")] = None,
        run: RunCommand = None,
        timeout: Annotated[
            float | None,
            Field(
                description="Seconds allowed to `run`; past it the attempt fails with timeout.",
                gt=0,
            ),
        ] = None,
        idempotency_key: Key = None,
    ) -> Result:
        """Record the verifier's result for the attempt; the ledger gives the verdict (R8): adopt,
        no-gain, rollback or target-reached."""
        argv = options(
            output=output, max_diff=max_diff, layout_exit=layout_exit, time=time, util=util,
            bubble=bubble, perf_dir=perf_dir, from_json=from_json, run=run, timeout=timeout,
        )  # fmt: skip
        return self._run(idempotency_key, ["verify"], [op, attempt], argv)

    def fail(
        self,
        op: Op,
        attempt: Attempt,
        category: Annotated[Failure, Field(description="What kind of failure.")],
        detail: Annotated[
            str | None, Field(description="What failed: the error message or a log excerpt.")
        ] = None,
        idempotency_key: Key = None,
    ) -> Result:
        """Record a failed attempt (verdict rollback); its config is never tried again (R9)."""
        argv = options(category=category, detail=detail)
        return self._run(idempotency_key, ["fail"], [op, attempt], argv)

    def abandon(
        self, op: Op, attempt: Attempt, reason: Reason, idempotency_key: Key = None
    ) -> Result:
        """Give up a pending attempt (after a crash), so another can start."""
        return self._run(idempotency_key, ["abandon"], [op, attempt], options(reason=reason))

    def stop(self, op: Op, reason: Reason, idempotency_key: Key = None) -> Result:
        """The user stops the campaign (R10); later steps are refused with code 6."""
        return self._run(idempotency_key, ["stop"], [op], options(reason=reason))

    def note(
        self,
        op: Op,
        text: Annotated[str, Field(description="Free text to record.")],
        idempotency_key: Key = None,
    ) -> Result:
        """Record free text in the ledger."""
        return self._run(idempotency_key, ["note"], [op], options(text=text))

    def policy(
        self,
        op: Op,
        key: Annotated[
            str,
            Field(
                description="A policy knob, e.g. noise_threshold, patience.frontend, util_stop_pct."
            ),
        ],
        value: Annotated[
            str | float | bool | list[Any],
            Field(
                description='Its new value, e.g. `0.02` or `["incore"]` (a string is read as JSON).'
            ),
        ],
        reason: Annotated[str | None, Field(description="Why the policy changes.")] = None,
        idempotency_key: Key = None,
    ) -> Result:
        """Change a policy threshold of this op (recorded; later decisions apply it), or set or
        tighten a budget (max_evaluations, max_device_seconds, max_wall_seconds). Lowering a
        guard (require_measured false, a larger noise_threshold, a lower
        bootstrap_confidence, a larger budget or one off) is a person's decision: refused
        (code 3) with the CLI command a person runs."""
        text = value if isinstance(value, str) else json.dumps(value)
        return self._run(idempotency_key, ["policy"], [op, key, text], options(reason=reason))

    def resume_campaign(self, op: Op, reason: Reason, idempotency_key: Key = None) -> Result:
        """Lifting a utilization or budget stop (R10) is a person's decision: always refused
        (code 3) with the CLI command a person runs (`--person NAME --reason TEXT`). Ask the
        user; never on your own."""
        return self._run(idempotency_key, ["resume-campaign"], [op], options(reason=reason))

    def handback(
        self,
        op: Op,
        summary: Annotated[
            str | None, Field(description="What the orchestrator should know about the result.")
        ] = None,
        idempotency_key: Key = None,
    ) -> Result:
        """Hand a stopped campaign's result back to the orchestrator with its report (R10):
        the last step; write the `report` first."""
        return self._run(idempotency_key, ["handback"], [op], options(summary=summary))

    def manifest(self, op: Op, idempotency_key: Key = None) -> Result:
        """Validate SPEC.md's manifest (errors name file:line), record it when it changed, and
        return it: knobs with their stages and defaults, shapes, target, verifier."""
        return self._run(idempotency_key, ["manifest"], [op])

    def new_op(
        self,
        op: Op,
        adapter_package: Annotated[
            str | None,
            Field(description="The package holding the PyPTO adapter (default: the one here)."),
        ] = None,
        idempotency_key: Key = None,
    ) -> Result:
        """Scaffold custom/OP/ (SPEC.md with its manifest, the impl, a golden, a layout check)
        with a kernel that runs; then replace the kernel's body, `check_op` and `init`."""
        argv = options(adapter_package=adapter_package)
        return self._run(idempotency_key, ["new-op"], [op], argv)

    def resolve(
        self,
        op: Op,
        conflict: Annotated[
            str,
            Field(description="The conflict: its id, or its number, as `conflicts` lists them."),
        ],
        resolution: Annotated[
            str,
            Field(
                description="`abandon:ATTEMPT`, `best:ATTEMPT`, `faster`, `remeasure`, "
                "`close:POINT`, `limit:RELAXATION`, `stricter` or `keep`; `conflicts` lists "
                "what each conflict accepts."
            ),
        ],
        reason: Reason,
        idempotency_key: Key = None,
    ) -> Result:
        """Resolve a protocol conflict that merged branches left, with a recorded event."""
        argv = options(conflict=conflict, resolution=resolution, reason=reason)
        return self._run(idempotency_key, ["resolve"], [op], argv)

    def kernel_restore(
        self,
        op: Op,
        attempt: Annotated[
            str | None,
            Field(
                description="The attempt whose kept kernel to restore (an id or a prefix of at "
                "least 4 characters; default: the best's kernel)."
            ),
        ] = None,
    ) -> Result:
        """Write a kernel the ledger kept (custom/OP/kernels/) back to OP_impl.py: the best's
        by default, e.g. after an algorithm attempt was rolled back; appends nothing."""
        return self.invoker.call(
            command_line(["kernel", "restore"], [op], options(attempt=attempt))
        )

    def tools(self) -> dict[str, Any]:
        """Each tool's name and function, in protocol order."""
        return {
            "init": self.init,
            "evidence_compare": self.evidence_compare,
            "evidence_layout": self.evidence_layout,
            "activate": self.activate,
            "target": self.target,
            "relax": self.relax,
            "skill_load": self.skill_load,
            "skill_unload": self.skill_unload,
            "stage_enter": self.stage_enter,
            "stage_exit": self.stage_exit,
            "point_open": self.point_open,
            "point_close": self.point_close,
            "candidate": self.candidate,
            "try": self.try_,
            "measure": self.measure,
            "verify": self.verify,
            "fail": self.fail,
            "abandon": self.abandon,
            "stop": self.stop,
            "resume_campaign": self.resume_campaign,
            "handback": self.handback,
            "note": self.note,
            "policy": self.policy,
            "manifest": self.manifest,
            "new_op": self.new_op,
            "resolve": self.resolve,
            "kernel_restore": self.kernel_restore,
        }
