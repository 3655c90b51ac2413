"""The tools of one attempt: start it (a candidate, a mutation or an algorithm change), measure
it, record its result, failure or abandon (R5-R9), and put a kept kernel back."""

from __future__ import annotations

from typing import Annotated

from mcp.types import CallToolResult as Result
from pydantic import Field

from ledger.mcp.arguments import (
    Attempt,
    Config,
    Failure,
    Impl,
    Key,
    MaxDiffs,
    Op,
    Outputs,
    OverrideRetry,
    Percent,
    Python,
    Reason,
    RunCommand,
    options,
)
from ledger.mcp.invoke import ToolGroup


class AttemptSteps(ToolGroup):
    """The steps of an attempt, from its start to its verdict."""

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
        return self._run(None, ["kernel", "restore"], [op], options(attempt=attempt))
