"""Running one `tune-ledger --json` command in the server's process, on warm OpLedgers.

Each tool is the CLI command of the same step, run through `ledger.cli.main` as the console
script runs it: the same parsing, gates, messages, JSON objects and exit codes, so the server
cannot drift from the CLI. What the server adds is memory: the OpLedger of each op is kept
between calls (`ledger.cli.base.open_ledgers`), so a call folds only what was appended since
the last one instead of replaying the whole ledger.
"""

from __future__ import annotations

import contextlib
import io
import json
import threading
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

from mcp.types import CallToolResult, TextContent

from ledger.cli import main
from ledger.cli.base import KeptLedgers, open_ledgers
from ledger.domain import hints
from ledger.mcp.arguments import command_line


class Invoker:
    """Runs CLI commands with `--root ROOT --json`, one at a time, on kept OpLedgers."""

    def __init__(self, root: Path) -> None:
        # Absolute: each command runs inside the root (`run_raw`), so that a relative path a
        # tool is given (impl, from_json, perf_dir…) means the same file `status` names.
        self.root = root.absolute()
        self.ledgers = KeptLedgers()
        # One command at a time: the commands print through the process's sys.stdout, which
        # is redirected for each, and one writer per op keeps the kept states simple. Re-entrant:
        # the server takes it to run a quick step on its own thread (`ledger/mcp/server.py`).
        self.lock = threading.RLock()

    def _run_text(self, argv: list[str]) -> tuple[int, dict[str, Any], str]:
        """The command's exit code, its JSON object (the CLI's error object when it refused)
        and the object as the CLI printed it (sorted keys, no spaces)."""
        code, printed = self.run_raw(["--root", str(self.root), "--json", *argv])
        data, text = _one_object(printed, code)
        # In the caller's terms (ledger/domain/hints.py): the CLI printed its hints for MCP
        # already; what it printed from a view rendered beforehand is rendered here.
        rendered = hints.render(data, "mcp")
        if rendered != data:
            data, text = rendered, ""
        if code != 0 and "code" not in data:
            data["code"] = code
            text = ""
        return code, data, text or compact(data)

    def call(self, argv: list[str]) -> CallToolResult:
        """The command as a tool's result: its JSON object, or, when it exits non-zero, a tool
        error whose text is exactly the CLI's JSON error object (rule, blocking, next...)."""
        code, data, text = self._run_text(argv)
        return CallToolResult(
            content=[TextContent(type="text", text=text)],
            structured_content=data,
            is_error=code != 0,
        )

    def run_raw(self, argv: list[str]) -> tuple[int, str]:
        """Run `tune-ledger ARGV` in this process; its exit code and what it printed."""
        out, err = io.StringIO(), io.StringIO()
        with self.lock, redirect_stdout(out), redirect_stderr(err), _inside(self.root):
            token = open_ledgers.set(self.ledgers)
            caller = hints.CALLER.set("mcp")  # hints name tools and arguments (issue 28.1)
            try:
                main(argv)
                code = 0
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            finally:
                hints.CALLER.reset(caller)
                open_ledgers.reset(token)
        return code, out.getvalue()


class ToolGroup:
    """Tools that each run one CLI command over a shared Invoker."""

    def __init__(self, invoker: Invoker) -> None:
        self.invoker = invoker

    def _run(
        self, key: str | None, words: list[str], values: list[str], argv: list[str] | None = None
    ) -> CallToolResult:
        return self.invoker.call(command_line(words, values, argv, idempotency_key=key))


@contextlib.contextmanager
def _inside(root: Path) -> Iterator[None]:
    """Run in the root (paths relative to it, issue 28.3), back where the server was after.
    The working folder is the process's: the invoker's lock keeps one command at a time, and
    nothing else in the server resolves a relative path."""
    if not root.is_dir():  # no such root: the command refuses it by its --root, as the CLI does
        yield
        return
    with contextlib.chdir(root):
        yield


def compact(data: dict[str, Any]) -> str:
    """JSON as the CLI prints it: sorted keys, no spaces, UTF-8 text."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _one_object(printed: str, code: int) -> tuple[dict[str, Any], str]:
    """The one JSON object a `--json` command prints (an error object if it printed none), and
    the line it printed ('' for none)."""
    lines = [line for line in printed.splitlines() if line.strip()]
    try:
        value = json.loads(lines[-1]) if lines else None
    except ValueError:
        value = None
    if isinstance(value, dict):
        # The CLI's very text (canonical JSON: ledger.cli.base.Ctx.emit), handed on instead
        # of encoded a second time.
        return value, lines[-1]
    return {
        "error": f"the command printed no JSON object (exit {code})",
        "kind": "LedgerError",
        "code": code or 1,
        "next": "report it as a bug with the tool's arguments",
    }, ""
