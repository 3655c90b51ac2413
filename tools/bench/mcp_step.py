"""One step of an agent through the MCP server against the same step as CLI processes.

A step is `try` (one change of the best) and `measure` (the ledger runs the op's verifier on
it and records the verdict), on a 1k-event synthetic campaign whose SPEC.md declares a
stand-in verifier: a small Python script that reports a fixed, slower time for the config
and kernel it is given, so every step is a rollback. The verifier's own time is what the
ledger recorded for the run (`duration_s` in the measurement's origin); it is taken out of
both sides, which leaves the ledger's own time per step.

Guardrail: a warm server's step ≤ 1/10 of the same two CLI processes. The server is warmed
by one untimed step; the steps then alternate, one through the server, one by processes.
"""

from __future__ import annotations

import json
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from tools.bench.campaign import run_seconds
from tools.bench.commands import cli
from tools.bench.ledgers import OP, copy_of, ledger_file
from tools.bench.timing import PROCESS_ENV, Guardrail, process

VERIFIER = """
    import hashlib, json, pathlib, sys
    op_dir, config = pathlib.Path(sys.argv[1]), json.loads(sys.argv[2])
    kernel = hashlib.sha256((op_dir / "bench_impl.py").read_bytes()).hexdigest()
    print(json.dumps({
        "config": config, "impl_digest": kernel,
        "tool": "bench-stand-in", "tool_version": "1", "times_us": [1000.0], "layout_exit": 0,
        "outputs": [{"name": "y", "all_close": True, "max_diff": 0.0}]}))
"""
LIMIT = 0.1


def with_stand_in_verifier(root: Path) -> None:
    """Declare the stand-in verifier in the bench op's SPEC.md."""
    script = root / "stand_in_verifier.py"
    script.write_text(textwrap.dedent(VERIFIER), "utf-8")
    command = [sys.executable, str(script), "{op_dir}", "{config}"]
    spec = f"---\nverifier: {{command: {json.dumps(command)}, timeout_s: 60}}\n---\n# {OP}\n"
    (root / "custom" / OP / "SPEC.md").write_text(spec, "utf-8")


def verifier_seconds(root: Path, steps: int) -> list[float]:
    """The verifier's own time of the last `steps` measurements, as the ledger recorded it."""
    found = run_seconds(ledger_file(root))
    if len(found) < steps:
        raise RuntimeError(f"the ledger recorded {len(found)} timed runs, not {steps}")
    return found[-steps:]


async def _server_steps(root: Path, repeats: int, env: dict[str, str]) -> dict[str, list[float]]:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    command = cli(root)
    params = StdioServerParameters(
        command=command[0], args=[*command[1:-1], "mcp"], env=env, cwd=str(root)
    )
    server: list[float] = []
    cli_steps: list[float] = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()

        async def call(name: str, arguments: dict[str, Any]) -> None:
            result = await client.call_tool(name, {"op": OP, **arguments})
            if result.is_error:
                raise RuntimeError(f"{name}: {result.content}")

        for number in range(repeats + 1):
            started = time.perf_counter()
            await call("try", {"change": f"stitch_function_max_num={10**8 + 2 * number}"})
            await call("measure", {"attempt": "pending"})
            took = time.perf_counter() - started
            change = f"stitch_function_max_num={10**8 + 2 * number + 1}"
            pair = process([*command, "try", OP, "--set", change], env=env)
            pair += process([*command, "measure", OP, "pending"], env=env)
            if number:  # the first step warms the server and writes compiled modules
                server.append(took)
                cli_steps.append(pair)
    return {"server": server, "cli": cli_steps}


def bench_mcp_step(scratch: Path, events: int, repeats: int) -> Guardrail:
    """Warm server steps against CLI steps, each less the verifier's own time."""
    import anyio

    root = copy_of(events, scratch)
    with_stand_in_verifier(root)
    # The measurement cache as a user has it, in a folder of its own (every config is new).
    env = {**PROCESS_ENV, "TUNE_LEDGER_MEASURE_CACHE": str(root / "measure-cache")}
    steps = anyio.run(_server_steps, root, repeats, env)
    verifier = verifier_seconds(root, 2 * repeats)  # server and CLI steps, in turn
    server = [s - v for s, v in zip(steps["server"], verifier[0::2], strict=True)]
    cli_steps = [s - v for s, v in zip(steps["cli"], verifier[1::2], strict=True)]
    return Guardrail(
        name="mcp_step",
        what=f"a warm MCP step (try + measure) at {events} events against the two CLI processes",
        value_is="try + measure through `tune-ledger mcp` (the SDK's client over stdio), less "
        "the verifier's own time",
        reference_is="tune-ledger try + tune-ledger measure as processes, less the verifier's "
        "own time",
        value=server,
        reference=cli_steps,
        limit=LIMIT,
        extra={"verifier_s": round(sum(verifier) / len(verifier), 4)},
    )
