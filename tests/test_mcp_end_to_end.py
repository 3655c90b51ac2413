"""An op from `new_op` to `handback` through MCP only, as a client drives it: the SDK's own
client over stdio, the server started in another folder than its root, a stand-in verifier
(tests/standin.py) in SPEC.md (issue 28.9). The calls and answers are a readable transcript,
tests/data/mcp_transcript.md, normalised (no paths, clocks, ids or digests that vary), that
the test compares; every way forward an answer names is a call of an existing tool with only
its arguments (28.1), and the paths given are relative to the root (28.3).

Regenerate the transcript after a deliberate change (and review the diff):
    UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_mcp_end_to_end.py
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from cli_harness import OP
from standin import write_script
from test_measure_cache import _spec

pytest.importorskip("mcp")
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from ledger.domain.hints import ACTIONS

pytestmark = pytest.mark.slow  # one server process and a dozen verifier runs (a few seconds)

TRANSCRIPT = Path(__file__).parent / "data" / "mcp_transcript.md"
REPO = Path(__file__).resolve().parents[1]
IMPL = f"custom/{OP}/{OP}_impl.py"
# Answer fields that only repeat what the transcript's reader does not need (whole events).
DROPPED = {"events", "points", "alternates", "policy_overrides", "manifest", "pending_config"}


class Session:
    """The calls of one client session, and what they answered, normalised."""

    def __init__(self, client: ClientSession, root: Path, schemas: dict[str, Any]) -> None:
        self.client, self.root, self.schemas = client, root, schemas
        self.lines: list[str] = []
        self.names: dict[str, str] = {}
        self.ways: list[str] = []  # every `next`, `guide` and `allowed` entry answered

    async def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        result = await self.client.call_tool(tool, arguments)
        text = result.content[0].text  # type: ignore[union-attr]
        answer = json.loads(text)
        assert result.is_error == ("code" in answer), (tool, answer)
        self._ways(answer)
        shown = {k: v for k, v in answer.items() if k not in DROPPED}
        call = json.dumps(arguments, sort_keys=True, ensure_ascii=False)
        self.lines += [
            f"### {tool}" + (" (refused)" if result.is_error else ""),
            "",
            f"    call   {self.normal(call)}",
            f"    answer {self.normal(json.dumps(shown, sort_keys=True, ensure_ascii=False))}",
            "",
        ]
        if os.environ.get("MCP_TRANSCRIPT_DEBUG"):
            Path(os.environ["MCP_TRANSCRIPT_DEBUG"]).write_text("\n".join(self.lines), "utf-8")
        return dict(answer)

    def say(self, text: str) -> None:
        self.lines += [text, ""]

    def _ways(self, value: Any, key: str = "") -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                self._ways(v, k)
        elif isinstance(value, list):
            for item in value:
                self._ways(item, key)
        elif isinstance(value, str) and key in ("next", "guide", "allowed"):
            self.ways.append(value)

    def normal(self, text: str) -> str:
        """Without what varies between runs: the root, ids, digests, clocks, durations."""
        text = text.replace(str(self.root), "<root>").replace(sys.executable, "<python>")
        text = re.sub(r"\b[0-9a-f]{64}\b", lambda m: self._name("digest", m.group(0)), text)
        text = re.sub(r"\b[0-9a-f]{12}\b", lambda m: self._name("id", m.group(0)), text)
        text = re.sub(r"\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:\d\d)?", "<time>", text)
        return re.sub(r'"(duration_s|elapsed_s|seconds)":[\d.e-]+', r'"\1":<s>', text)

    def _name(self, kind: str, value: str) -> str:
        if value not in self.names:
            count = sum(1 for v in self.names.values() if v.startswith(f"<{kind}-"))
            self.names[value] = f"<{kind}-{count + 1}>"
        return self.names[value]


async def _campaign(s: Session) -> None:
    s.say("A new op, scaffolded; a person then puts the stand-in verifier in SPEC.md.")
    await s.call("new_op", op=OP)
    op_dir = s.root / "custom" / OP
    script = write_script(s.root / "verifier")
    (op_dir / "SPEC.md").write_text(_spec(script, "sleep:0"), "utf-8")
    (op_dir / "layout_check.py").write_text("import sys\nsys.exit(0)\n", "utf-8")
    await s.call("init", op=OP)
    s.say("Activation (R1), the kernel named by its path relative to the root.")
    await s.call("evidence_compare", op=OP, from_spec=True, impl=IMPL)
    await s.call("evidence_layout", op=OP, from_spec=True, impl=IMPL)
    assert (await s.call("activate", op=OP, impl=IMPL))["activated"]
    await s.call("stage_enter", op=OP, name="frontend")
    await s.call("target", op=OP, from_spec=True)
    for skill in ("pypto-op-perf-tune", "perf-analyzer"):
        await s.call("skill_load", op=OP, name=skill)
    await s.call("stage_enter", op=OP, name="frontend")
    await s.call("skill_load", op=OP, name="tune-frontend")
    s.say("An attempt outside a point, then an argument of the wrong type.")
    await s.call("try", op=OP, change="vec_tile_shape=[1,32,1,64]")
    await s.call("point_open", op=OP, name="vec_tile_shape")
    wrong = await s.call("verify", op=OP, attempt="pending", time={"samples": [1]})
    assert (wrong["code"], wrong["field"]) == (2, "time")
    started = await s.call(
        "candidate", op=OP, config={"vec_tile_shape": [1, 16, 1, 64]}, prior="a test's guess"
    )
    measured = await s.call("measure", op=OP, attempt=started["attempt"])
    assert measured["best_us"] == measured["time_us"] < measured["best_before_us"]
    mutation = await s.call("try", op=OP, change="vec_tile_shape=[1,4,1,64]")
    slower = await s.call("measure", op=OP, attempt=mutation["attempt"])
    assert slower["best_us"] == slower["best_before_us"] < slower["time_us"]
    await s.call("resume", op=OP)
    await s.call("stage_enter", op=OP, name="swimlane")
    s.say("The user stops; what still works is listed, the report, then the hand-back.")
    await s.call("stop", op=OP, reason="the user has seen enough")
    await s.call("try", op=OP, change="vec_tile_shape=[1,32,1,64]")
    stopped = await s.call("status", op=OP)
    assert "handback" not in stopped["allowed"] and "report" in stopped["allowed"]
    await s.call("handback", op=OP, summary="too early")
    await s.call("report", op=OP)
    await s.call("handback", op=OP, summary="vec_tile_shape [1, 16, 1, 64]")
    await s.call("status", op=OP)


def _transcript(tmp_path: Path) -> Session:
    root, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    found: list[Session] = []

    async def run() -> None:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "ledger", "--root", str(root), "mcp"],
            env={**os.environ, "PYTHONPATH": str(REPO)},
            cwd=str(elsewhere),  # relative paths must mean the root's files, not this folder's
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            schemas = {t.name: t.input_schema for t in (await client.list_tools()).tools}
            session = Session(client, root, schemas)
            found.append(session)
            await _campaign(session)

    anyio.run(run)
    return found[0]


def test_an_op_from_new_op_to_handback_over_mcp(tmp_path: Path) -> None:
    session = _transcript(tmp_path)
    text = (
        "\n".join(
            [
                "# An op from `new_op` to `handback` over MCP",
                "",
                "Generated by tests/test_mcp_end_to_end.py (UPDATE_GOLDEN=1 regenerates it); ids,",
                "digests, paths and clocks are normalised.",
                "",
                *session.lines,
            ]
        ).rstrip()
        + "\n"
    )
    if os.environ.get("UPDATE_GOLDEN"):
        TRANSCRIPT.write_text(text, "utf-8")
    assert text == TRANSCRIPT.read_text("utf-8")
    _assert_ways_are_tool_calls(session)


_CALL = re.compile(r"\b([a-z_]+)\(([^()]*)\)")
_ARGUMENT = re.compile(r"(?:^|, )([a-z_]+)=")


def _assert_ways_are_tool_calls(session: Session) -> None:
    """Every `next`, `guide` and `allowed` entry is in the tools' terms: calls of tools the
    server has, with arguments of their schemas, and no CLI syntax (issue 28.1)."""
    assert session.ways
    calls = 0
    for way in session.ways:
        assert "tune-ledger" not in way and not re.search(r"(^|\s)--[a-z]", way), way
        if way in session.schemas:  # an `allowed` entry
            continue
        for name, arguments in _CALL.findall(way):
            calls += 1
            assert name in session.schemas, (name, way)
            properties = session.schemas[name]["properties"]
            for argument in _ARGUMENT.findall(arguments):
                assert argument in properties, (name, argument, way)
    assert calls >= 10


def test_every_step_a_hint_names_is_a_tool_with_those_arguments() -> None:
    """The table hints are built from (ledger/domain/hints.py) against the server's tools."""
    from ledger.mcp.server import build_server

    tools = anyio.run(build_server(Path(".")).list_tools)
    schemas = {t.name: t.input_schema["properties"] for t in tools}
    for action in ACTIONS.values():
        assert action.tool in schemas, action
        assert {*action.positional, *action.options} <= set(schemas[action.tool]), action
