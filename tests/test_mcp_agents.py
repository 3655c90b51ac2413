"""The shipped optimizer agent: one body for both clients, and `agent-setup` installs it
without clobbering a file someone changed."""

from __future__ import annotations

import json
import re
from pathlib import Path

from cli_harness import run_main

AGENTS = Path(__file__).resolve().parents[1] / "tools" / "agents"
OPENCODE = ".opencode/agents/pypto-op-optimizer.md"
CLAUDE = ".claude/agents/pypto-op-optimizer.md"


def _body(path: Path) -> str:
    return path.read_text("utf-8").split("\n---\n", 1)[1]


def test_both_clients_get_the_same_protocol_naming_real_tools() -> None:
    """The agent's instructions are the same text for opencode and Claude Code, and every
    tool they tell the agent to call is one the server has."""
    from ledger.mcp.invoke import Invoker
    from ledger.mcp.reads import ReadTools
    from ledger.mcp.steps import StepTools

    body = _body(AGENTS / "opencode" / OPENCODE)
    assert body == _body(AGENTS / "claude" / CLAUDE)
    invoker = Invoker(Path("."))
    tools = {*StepTools(invoker).tools(), *ReadTools(invoker).tools()}
    named = set(re.findall(r"`([a-z_]+)`", body))
    steps = {"resume", "status", "evidence_compare", "activate", "target", "stage_enter"}
    steps |= {"point_open", "candidate", "try", "measure", "verify", "fail", "abandon", "report"}
    assert steps <= named & tools
    config = json.loads((AGENTS / "opencode" / "opencode.json").read_text())
    assert config["mcp"]["tune-ledger"]["command"][-1] == "mcp"
    assert json.loads((AGENTS / "claude" / ".mcp.json").read_text())["mcpServers"]["tune-ledger"]


def test_agent_setup_installs_once_and_refuses_to_clobber(tmp_path: Path) -> None:
    """A first run writes the files, a second changes nothing, a differing file is refused
    (exit 2, nothing written) unless --force."""
    args = ["--root", str(tmp_path), "--json", "agent-setup", "--client", "claude"]
    first = run_main(args)
    assert first.code == 0 and sorted(first.json["written"]) == [
        ".claude/agents/pypto-op-optimizer.md",
        ".claude/settings.json",
        ".mcp.json",
    ]
    again = run_main(args)
    assert again.code == 0 and again.json["written"] == []
    (tmp_path / ".mcp.json").write_text("{}\n")
    (tmp_path / CLAUDE).unlink()
    refused = run_main(args)
    assert refused.code == 2 and refused.json["differing"] == [".mcp.json"]
    assert not (tmp_path / CLAUDE).exists()
    forced = run_main([*args, "--force"])
    assert forced.code == 0
    assert (tmp_path / ".mcp.json").read_bytes() == (AGENTS / "claude" / ".mcp.json").read_bytes()
