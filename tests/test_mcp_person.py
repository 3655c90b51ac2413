"""A person's decision asked of the MCP server (issue 27, item 3), through the SDK's own
client over stdio: `policy` lowering a guard, `resume_campaign` and `relax` without
evidence are tool errors whose text is the JSON error (code 3, the guard's rule) with the
exact CLI command a person runs, and nothing is written; `relax` takes `evidence`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_harness import OP, Cli, frontend, snapshot
from test_mcp_server import serve

pytest.importorskip("mcp")
from mcp import ClientSession

pytestmark = pytest.mark.slow  # starts a server process


def _utilization_stopped(cli: Cli) -> None:
    """An op in frontend stopped by the utilization stop (R10)."""
    frontend(cli)
    cli.ok("policy", OP, "utilization_stop_stages", '["frontend"]', "--reason", "test")
    attempt = cli.ok("try", OP, "--set", "stitch=64")["attempt"]
    cli.ok("verify", OP, str(attempt), "--output", "y=true", "--layout-exit", "0",
           "--time", "90us", "--util", "85", "--bubble", "4")  # fmt: skip
    assert cli.ok("status", OP)["stopped"] == "utilization"


def test_the_server_refuses_a_persons_decisions_naming_the_cli_command(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    _utilization_stopped(cli)
    before = snapshot(tmp_path)
    answers: dict[str, tuple[bool, dict[str, Any]]] = {}
    calls = {
        "policy": {"op": OP, "key": "require_measured", "value": "false", "reason": "agent"},
        "noise": {"op": OP, "key": "noise_threshold", "value": "0.2", "reason": "agent"},
        "resume_campaign": {"op": OP, "reason": "the agent wants to go on"},
        "relax": {"op": OP, "what": "vec", "limit": "128", "basis": "free text"},
        "relax_unknown": {
            "op": OP, "what": "vec", "limit": "128", "basis": "b", "evidence": ["beef"],
        },
    }  # fmt: skip

    async def body(client: ClientSession) -> None:
        for name, arguments in calls.items():
            tool = {"noise": "policy", "relax_unknown": "relax"}.get(name, name)
            result = await client.call_tool(tool, arguments)
            answers[name] = (result.is_error, json.loads(result.content[0].text))

    serve(tmp_path, body)
    assert snapshot(tmp_path) == before  # nothing written by any of them
    expected = {
        "policy": ("R11", f"tune-ledger policy {OP} require_measured false"),
        "noise": ("R8", f"tune-ledger policy {OP} noise_threshold 0.2"),
        "resume_campaign": ("R10", f"tune-ledger resume-campaign {OP}"),
    }
    for name, (rule, command) in expected.items():
        is_error, error = answers[name]
        assert is_error and error["code"] == 3 and error["rule"] == rule, (name, error)
        assert "a person's decision" in error["error"]
        assert error["next"].endswith(f"they run: {command} --person NAME --reason TEXT")
    # Stopped: relax meets the stop first (code 6); the evidence check is the CLI's too.
    is_error, relax = answers["relax"]
    assert is_error and relax["code"] in (3, 6)
    is_error, unknown = answers["relax_unknown"]
    assert is_error and unknown["code"] == 2 and "--evidence beef" in unknown["error"]


def test_relax_over_mcp_without_evidence_is_refused_as_r3(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    frontend(cli)
    answers: list[tuple[bool, dict[str, Any]]] = []

    async def body(client: ClientSession) -> None:
        arguments = {"op": OP, "what": "vec", "limit": "1024", "basis": "a run elsewhere"}
        result = await client.call_tool("relax", arguments)
        answers.append((result.is_error, json.loads(result.content[0].text)))

    serve(tmp_path, body)
    ((is_error, error),) = answers
    assert is_error and error["code"] == 3 and error["rule"] == "R3"
    assert "based on profiling data" in error["error"]
    # In the caller's terms: the tools and their arguments (issue 28).
    assert f'measure(op="{OP}", attempt=ATTEMPT)' in error["next"]
    assert "evidence=[" in error["next"] and "tune-ledger" not in error["next"]
    assert not any(e["type"] == "limit.relaxed" for e in cli.events())
