"""The ledger's share of a real campaign's wall time: real PyPTO runs (the simulator) on the
bundled softmax op, each campaign in a new root with an empty measurement cache.

- The autopilot (`python -m tools.autopilot`, the warm worker, one run at a time): its closing
  line says how long the campaign took and how much of it was spent in the ledger's API.
  Guardrail: ≤ 1%.
- An agent-like session over MCP: the SDK's client drives `tune-ledger mcp` as an agent does
  (evidence, activation, target sheet, stage and point, then `try` + `measure` of one tile
  shape after another, reading `status` and `log` between steps). The ledger's time is every
  call's round trip less the runs the ledger made for it (the verifier, the layout check),
  whose own times the ledger records (`duration_s` in their origin). Guardrail: ≤ 2%. An
  agent also thinks between calls; that time is left out, which makes the share larger.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ledger.log.file_store import FileStore
from tools.bench.commands import cli
from tools.bench.timing import PROCESS_ENV, Guardrail

REPO = Path(__file__).resolve().parents[2]
OP = "softmax"
# The tile shapes the agent-like session tries, one change of the best after another.
TILES = ([1, 8, 1, 64], [1, 16, 1, 64], [1, 32, 1, 64], [1, 8, 1, 32], [1, 16, 1, 32],
         [1, 32, 1, 32], [1, 4, 1, 32], [1, 2, 1, 64], [1, 32, 1, 16], [1, 16, 1, 16])  # fmt: skip


def _new_root(scratch: Path, name: str) -> tuple[Path, dict[str, str]]:
    """A root with the bundled op copied in, and the environment of the processes run there:
    this checkout importable (the op's verifier is `tools.pypto.run`), an empty cache."""
    root = scratch / name
    ignore = shutil.ignore_patterns("events.jsonl*", "MEMORY.md", "*report*", ".tune-*", "__py*")
    shutil.copytree(REPO / "custom" / OP, root / "custom" / OP, ignore=ignore)
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    cache = str(scratch / f"{name}-measure-cache")
    return root, {**PROCESS_ENV, "PYTHONPATH": path, "TUNE_LEDGER_MEASURE_CACHE": cache}


def autopilot(scratch: Path, attempts: int, log: Callable[[str], None]) -> Guardrail:
    """An autopilot campaign of at most `attempts` attempts: ledger time against wall time."""
    root, env = _new_root(scratch, "autopilot")
    argv = [sys.executable, "-m", "tools.autopilot", "--root", str(root), "--op", OP]
    argv += ["--max-attempts", str(attempts), "--workers", "1", "--warm"]
    log(f"autopilot campaign, {OP}, at most {attempts} attempts (real PyPTO runs)")
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    closing = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode not in (0, 1) or not closing:  # 1: stopped by the attempt budget
        raise RuntimeError(f"the autopilot exited {done.returncode}: {done.stderr[-2000:]}")
    timing = closing[-1]["timing"]
    return Guardrail(
        name="campaign_autopilot",
        what=f"the ledger's share of an autopilot campaign's wall time ({OP})",
        value_is="time in the ledger's API (the autopilot's own count, `ledger_s`)",
        reference_is="the campaign's wall time (`wall_s`)",
        value=[timing["ledger_s"]],
        reference=[timing["wall_s"]],
        limit=0.01,
        extra={"attempts": closing[-1]["attempts"], "timing": timing},
    )


async def _agent_session(root: Path, env: dict[str, str], tries: int) -> tuple[float, float]:
    """The session's wall time and the sum of its calls' round trips."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    command = cli(root)
    params = StdioServerParameters(
        command=command[0], args=[*command[1:-1], "mcp"], env=env, cwd=str(root)
    )
    in_calls = 0.0
    started = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()

        async def call(tool: str, **arguments: Any) -> Any:
            nonlocal in_calls
            began = time.perf_counter()
            result = await client.call_tool(tool, {"op": OP, **arguments})
            in_calls += time.perf_counter() - began
            if result.is_error:
                raise RuntimeError(f"{tool} {arguments}: {result.content}")
            return result.structured_content

        await call("init")
        await call("evidence_compare", from_spec=True)
        await call("evidence_layout", from_spec=True)
        await call("activate")
        for skill in ("pypto-op-perf-tune", "perf-analyzer"):
            await call("skill_load", name=skill)
        await call("target", from_spec=True)
        await call("stage_enter", name="frontend")
        await call("skill_load", name="tune-frontend")
        await call("point_open", name="vec_tile_shape")
        for tile in TILES[:tries]:
            await call("status")
            await call("try", change=f"vec_tile_shape={json.dumps(tile)}")
            await call("measure", attempt="pending")
            await call("log", limit=3)
    return time.perf_counter() - started, in_calls


def run_seconds(ledger: Path) -> list[float]:
    """The own time of every run the ledger made, as it recorded them; a result read from the
    measurement cache (the baseline after the compare ran the same config) ran earlier."""
    origins = [event.data.get("origin") for event in FileStore(ledger).read().events]
    return [
        float(origin["duration_s"])
        for origin in origins
        if isinstance(origin, dict) and origin.get("duration_s") and not origin.get("cached")
    ]


def agent_over_mcp(scratch: Path, tries: int, log: Callable[[str], None]) -> Guardrail:
    """An agent-like MCP session of `tries` measured attempts: ledger time against wall time."""
    import anyio

    root, env = _new_root(scratch, "agent")
    log(f"agent-like MCP session, {OP}, {tries} attempts measured (real PyPTO runs)")
    wall, in_calls = anyio.run(_agent_session, root, env, tries)
    runs = run_seconds(root / "custom" / OP / "events.jsonl")
    return Guardrail(
        name="campaign_agent_mcp",
        what=f"the ledger's share of an agent-like MCP session's wall time ({OP})",
        value_is="every call's round trip less the runs the ledger made for it",
        reference_is="the session's wall time, from the server's start to its end",
        value=[in_calls - sum(runs)],
        reference=[wall],
        limit=0.02,
        extra={"runs": len(runs), "runs_s": round(sum(runs), 2), "calls_s": round(in_calls, 2)},
    )
