"""The tools that set an op up (R1, R3): its folder and ledger, the manifest, the evidence,
the activation, the target sheet and its relaxations."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from mcp.types import CallToolResult as Result
from pydantic import Field

from ledger.mcp.arguments import (
    FromSpec,
    Impl,
    Key,
    MaxDiffs,
    Op,
    Outputs,
    Percent,
    Python,
    RunCommand,
    options,
)
from ledger.mcp.invoke import ToolGroup


class SetupSteps(ToolGroup):
    """The steps before and around the target sheet."""

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
