"""The read side as tools (status, resume, log, priors, audit, check, conflicts, check_op,
report, render), each op's MEMORY.md, status and SPEC.md as resources."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from mcp.server.mcpserver.exceptions import ResourceError
from mcp.types import CallToolResult, TextContent
from pydantic import Field

from ledger.domain.units import check_op_name
from ledger.errors import LedgerError
from ledger.log import safe_files
from ledger.mcp.arguments import Failure, Op, Stage, Verdict, command_line, options
from ledger.mcp.invoke import Invoker, ToolGroup

Result = CallToolResult


class ReadTools(ToolGroup):
    """The commands that read (and `report`/`render`, which write only projections)."""

    def status(self, op: Op) -> Result:
        """Where the campaign stands: activated, target sheet, stage, skills, pending attempt,
        best, points, stopped, and `allowed` (the steps allowed next)."""
        return self.invoker.call(command_line(["status"], [op]))

    def resume(self, op: Op) -> Result:
        """What an interrupted agent must reload and run next (call it first after any
        interruption)."""
        return self.invoker.call(command_line(["resume"], [op]))

    def log(
        self,
        op: Op,
        stage: Annotated[Stage | None, Field(description="Only this stage's attempts.")] = None,
        verdict: Annotated[
            Verdict | None, Field(description="Only attempts with this verdict.")
        ] = None,
        failure: Annotated[
            Failure | None, Field(description="Only attempts that failed this way.")
        ] = None,
        limit: Annotated[int | None, Field(description="Only the last N attempts.", ge=1)] = None,
        attempt: Annotated[
            str | None,
            Field(
                description="Show one attempt with every recorded field, texts whole (an id, a "
                "prefix of at least 4 characters, or `pending`)."
            ),
        ] = None,
        notes: Annotated[
            bool, Field(description="Show the notes recorded in the ledger, whole.")
        ] = False,
    ) -> Result:
        """The attempts, with their configs, times and verdicts (or one attempt, or the notes)."""
        argv = options(
            stage=stage, verdict=verdict, failure=failure, limit=limit, attempt=attempt,
            notes=notes,
        )  # fmt: skip
        return self.invoker.call(command_line(["log"], [op], argv))

    def priors(
        self,
        op: Op,
        point: Annotated[
            str | None, Field(description="Propose for this point (default: the open one).")
        ] = None,
        keys: Annotated[
            str | None, Field(description="Config keys to propose values for, comma-separated.")
        ] = None,
        count: Annotated[
            int | None, Field(description="How many candidates (default about 10).", ge=1)
        ] = None,
        from_source: Annotated[
            list[str] | None,
            Field(description="PyPTO kernel source folders or files to scan for literal configs."),
        ] = None,
        ledgers: Annotated[
            list[str] | None,
            Field(
                description="Also learn from the ledgers under these folders (an op folder, a "
                "root with custom/, or a folder of op folders); custom/ of the root is always "
                "read."
            ),
        ] = None,
        stage: Annotated[
            Literal["frontend", "swimlane", "incore"] | None,
            Field(description="Propose for this stage's keys (default: the current stage)."),
        ] = None,
        no_builtin: Annotated[
            bool, Field(description="Leave out the built-in typical values.")
        ] = False,
    ) -> Result:
        """Propose candidate configs, each with its provenance, from other ledgers, kernel sources
        and built-in knowledge (R7)."""
        argv = options(
            point=point, keys=keys, count=count, from_source=from_source, ledgers=ledgers,
            stage=stage, no_builtin=no_builtin,
        )  # fmt: skip
        return self.invoker.call(command_line(["priors"], [op], argv))

    def audit(
        self,
        op: Op,
        strict: Annotated[
            bool,
            Field(
                description="Also fail (exit 9) when a decision rests on values not measured "
                "by the op's declared verifier, or a guard is lowered."
            ),
        ] = False,
        remeasure: Annotated[
            int | None,
            Field(
                description="Also run SPEC.md's verifier again on N measured attempts (the "
                "best first) on their kept kernels; code 10 when one disagrees with the ledger.",
                ge=1,
            ),
        ] = None,
    ) -> Result:
        """Integrity, legality of every step, every verdict re-derived, provenance levels,
        MEMORY.md, kept kernels (reads the whole ledger); with `remeasure`, measures again."""
        argv = options(strict=strict, remeasure=remeasure)
        return self.invoker.call(command_line(["audit"], [op], argv))

    def kernel_diff(
        self,
        op: Op,
        a: Annotated[str, Field(description="The first attempt (an id, a prefix, or `best`).")],
        b: Annotated[str, Field(description="The second attempt (an id, a prefix, or `best`).")],
    ) -> Result:
        """The unified diff of the kernels two attempts ran, as the ledger kept them."""
        return self.invoker.call(command_line(["kernel", "diff"], [op, a, b]))

    def check(self, op: Op) -> Result:
        """Fail when MEMORY.md is stale or hand-edited, the ledger is not canonical, or a merge
        conflict is unresolved."""
        return self.invoker.call(command_line(["check"], [op]))

    def conflicts(self, op: Op) -> Result:
        """The protocol conflicts merged branches left (two pending attempts, two bests, two
        open points...), each with its id and the resolutions `resolve` accepts."""
        return self.invoker.call(command_line(["conflicts"], [op]))

    def check_op(
        self,
        op: Op,
        static: Annotated[
            bool, Field(description="Check the files only; do not run the layout check.")
        ] = False,
    ) -> Result:
        """Check custom/OP/ against the op-folder contract (SPEC.md manifest, impl, golden,
        layout check) before `init`; code 2 names what is broken."""
        return self.invoker.call(command_line(["check-op"], [op], options(static=static)))

    def report(self, op: Op) -> Result:
        """Write OP_tuning_report.md and its SVG chart, and record them."""
        return self.invoker.call(command_line(["report"], [op]))

    def render(self, op: Op) -> Result:
        """Re-render MEMORY.md's managed sections from the ledger."""
        return self.invoker.call(command_line(["render"], [op]))

    def tools(self) -> dict[str, Any]:
        """Each tool's name and function."""
        return {
            "status": self.status,
            "resume": self.resume,
            "log": self.log,
            "priors": self.priors,
            "audit": self.audit,
            "check": self.check,
            "kernel_diff": self.kernel_diff,
            "conflicts": self.conflicts,
            "check_op": self.check_op,
            "report": self.report,
            "render": self.render,
        }


class OpResources:
    """Each op's MEMORY.md, status and SPEC.md, read by the op's name."""

    def __init__(self, invoker: Invoker) -> None:
        self.invoker = invoker

    def _file(self, op: str, name: str) -> str:
        """The file's text: a regular file inside the root, bounded, through no link when the
        ledger writes it (MEMORY.md; ledger/log/safe_files.py); a resource error naming the
        file otherwise."""
        root = Path(self.invoker.root)
        path = root / "custom" / check_op_name(op) / name
        follow = name != "MEMORY.md"
        try:
            return safe_files.read_text(path, limit=safe_files.TEXT_BYTES, root=root, follow=follow)
        except FileNotFoundError:
            raise FileNotFoundError(f"{path} does not exist") from None
        except LedgerError as e:
            raise ResourceError(f"{e.message} (next: {e.hint})") from None

    def memory(self, op: str) -> str:
        """The op's MEMORY.md: the agent's memory and the reviewer's view."""
        return self._file(op, "MEMORY.md")

    def spec(self, op: str) -> str:
        """The op's SPEC.md, written by people: shapes, budget, verifier."""
        return self._file(op, "SPEC.md")

    def status(self, op: str) -> str:
        """The op's status object, as the `status` tool returns it."""
        result = self.invoker.call(command_line(["status"], [op]))
        text = result.content[0]
        if result.is_error or not isinstance(text, TextContent):
            raise ResourceError(getattr(text, "text", "status failed"))
        return text.text
