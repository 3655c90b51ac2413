"""`tune-ledger mcp` driven by the SDK's own client over stdio, as a real client does: the tool
schemas (a snapshot), the README's session through tools (the same events as the CLI's), a
refusal carrying its rule, MEMORY.md as a resource, and a ledger changed behind its back.

Regenerate the schema snapshot after a deliberate change (and review the diff):
    UPDATE_GOLDEN=1 .venv/bin/python -m pytest -m slow tests/test_mcp_server.py -k schema
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from cli_harness import run_main
from test_readme import session_lines

pytest.importorskip("mcp")
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

pytestmark = pytest.mark.slow  # each test starts a server process (about 1-2 s)

SNAPSHOT = Path(__file__).parent / "data" / "mcp" / "tools.json"
GROUPS = ("evidence", "skill", "stage", "point")


def serve(root: Path, body: Callable[[ClientSession], Awaitable[None]]) -> None:
    """Run `body` with a client session of `tune-ledger --root ROOT mcp` over stdio."""

    async def session() -> None:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "ledger", "--root", str(root), "mcp"],
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
            cwd=str(root),
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            await body(client)

    anyio.run(session)


def tool_call(argv: list[str], schemas: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The tool and arguments of a `tune-ledger ARGV` command line (the README's session)."""
    words = list(argv)
    name = words.pop(0)
    if name in GROUPS:
        name = f"{name}_{words.pop(0)}"
    properties = schemas[name]["properties"]
    positional = [p for p in properties if p in ("op", "name", "attempt")]
    arguments: dict[str, Any] = {}
    while words:
        word = words.pop(0)
        if not word.startswith("--"):
            arguments[positional.pop(0)] = word
            continue
        key = {"set": "change"}.get(word[2:], word[2:]).replace("-", "_")
        kind = json.dumps(properties[key])
        if '"boolean"' in kind:  # a flag (`audit --strict`): no value follows
            arguments[key] = True
            continue
        value: Any = words.pop(0)
        if '"integer"' in kind and value.isdigit():
            arguments[key] = int(value)
        elif '"array"' in kind:
            arguments.setdefault(key, []).append(value)
        else:
            arguments[key] = value
    return name, arguments


def _readme_commands() -> list[tuple[list[str], int]]:
    commands = []
    for line, code in session_lines():
        if line.startswith("tune-ledger "):
            commands.append((shlex.split(line.split("#")[0])[1:], code))
    return commands


def _new_op(root: Path) -> None:
    (root / "custom" / "demo").mkdir(parents=True)
    (root / "custom" / "demo" / "demo_impl.py").write_text("# the kernel under tuning\n")


def _comparable(root: Path) -> list[tuple[str, Any]]:
    """Each event's type and payload, with event ids, durations (the clock) and the root folder
    (both sessions run in their own) made positional."""
    text = (root / "custom/demo/events.jsonl").read_text().replace(str(root), "<root>")
    records = [json.loads(line) for line in text.splitlines()]
    names = {r["id"][:12]: f"<event {i}>" for i, r in enumerate(records)}

    def plain(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: "<duration>" if k == "duration_s" else plain(v) for k, v in value.items()}
        if isinstance(value, list):
            return [plain(v) for v in value]
        if isinstance(value, str):
            return names.get(value[:12], value) if len(value) >= 12 else value
        return value

    return [(r["type"], plain(r["payload"])) for r in records]


def test_the_tool_schemas_match_the_snapshot(tmp_path: Path) -> None:
    """Every tool, its description and its input schema, as a client lists them."""
    listed: dict[str, Any] = {}

    async def body(client: ClientSession) -> None:
        for tool in (await client.list_tools()).tools:
            listed[tool.name] = {
                "description": tool.description,
                "input_schema": tool.input_schema,
            }

    serve(tmp_path, body)
    text = json.dumps(listed, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    if os.environ.get("UPDATE_GOLDEN"):
        SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
        SNAPSHOT.write_text(text, "utf-8")
    assert text == SNAPSHOT.read_text("utf-8")
    assert {"init", "try", "verify", "status", "resume", "audit"} <= set(listed)


def test_the_readme_session_through_tools_records_what_the_cli_records(tmp_path: Path) -> None:
    """The README's session run as tool calls gives the CLI's exit codes as tool errors, the
    CLI's JSON objects, and a ledger with the same events and payloads."""
    cli_root, mcp_root = tmp_path / "cli", tmp_path / "mcp"
    for root in (cli_root, mcp_root):
        _new_op(root)
    commands = _readme_commands()
    cli_answers = []
    for argv, code in commands:
        result = run_main(["--root", str(cli_root), "--json", *argv])
        assert result.code == code, (argv, result.stdout)
        cli_answers.append(result.json)
    tool_answers: list[tuple[bool, dict[str, Any]]] = []

    async def body(client: ClientSession) -> None:
        schemas = {t.name: t.input_schema for t in (await client.list_tools()).tools}
        for argv, _code in commands:
            name, arguments = tool_call(argv, schemas)
            result = await client.call_tool(name, arguments)
            text = result.content[0].text  # type: ignore[union-attr]
            assert text.startswith("{"), (name, arguments, text)
            # The text is the structured object, as the CLI prints it: compact, sorted keys.
            compact = json.dumps(
                json.loads(text), sort_keys=True, separators=(",", ":"), ensure_ascii=False
            )
            assert text == compact, (name, text)
            if not result.is_error:
                assert result.structured_content == json.loads(text), name
            tool_answers.append((result.is_error, json.loads(text)))

    serve(mcp_root, body)
    for (argv, code), cli_answer, (is_error, answer) in zip(
        commands, cli_answers, tool_answers, strict=True
    ):
        assert is_error == (code != 0), argv
        assert answer.keys() == cli_answer.keys(), argv
        assert answer.get("code") == cli_answer.get("code")
        assert answer.get("rule") == cli_answer.get("rule")
    assert _comparable(mcp_root) == _comparable(cli_root)
    assert (mcp_root / "custom/demo/MEMORY.md").read_text().count("target-reached") == (
        cli_root / "custom/demo/MEMORY.md"
    ).read_text().count("target-reached")


def test_a_refusal_names_its_rule_and_memory_is_a_resource(tmp_path: Path) -> None:
    """A refused step is a tool error whose text is the CLI's JSON error object; MEMORY.md
    reads as a resource; the protocol prompt names the op."""
    _new_op(tmp_path)
    seen: dict[str, Any] = {}

    async def body(client: ClientSession) -> None:
        seen["before"] = [str(r.uri) for r in (await client.list_resources()).resources]
        await client.call_tool("init", {"op": "demo"})
        seen["after"] = [str(r.uri) for r in (await client.list_resources()).resources]
        refused = await client.call_tool("skill_load", {"op": "demo", "name": "tune-frontend"})
        seen["refused"] = (refused.is_error, json.loads(refused.content[0].text))
        memory = await client.read_resource("memory://demo")
        seen["memory"] = memory.contents[0].text  # type: ignore[union-attr]
        prompt = await client.get_prompt("protocol", {"op": "demo"})
        seen["prompt"] = prompt.messages[0].content.text  # type: ignore[union-attr]

    serve(tmp_path, body)
    # Listed once the op has a ledger (a client that shows only listed resources finds it).
    assert seen["before"] == []
    assert seen["after"] == ["memory://demo", "status://demo"]
    is_error, error = seen["refused"]
    assert is_error
    assert error["rule"] == "R1" and error["code"] == 3
    # its tools' names: the protocol's steps, then what works at any time
    assert error["allowed"] == [
        "evidence_compare", "evidence_layout",
        "note", "policy", "report", "status", "resume", "log", "audit",
    ]  # fmt: skip
    assert error["next"] and error["blocking"]
    assert seen["memory"] == (tmp_path / "custom/demo/MEMORY.md").read_text()
    assert "custom/demo/" in seen["prompt"]


def test_the_cli_between_two_calls_and_a_tampered_tail_are_seen(tmp_path: Path) -> None:
    """The server's next answer includes what the CLI appended meanwhile; a torn tail is
    reported as torn; a tampered line appended behind its back is damage (code 7)."""
    _new_op(tmp_path)
    ledger = tmp_path / "custom/demo/events.jsonl"
    seen: dict[str, Any] = {}

    async def log(client: ClientSession) -> tuple[bool, dict[str, Any]]:
        result = await client.call_tool("log", {"op": "demo"})
        return result.is_error, json.loads(result.content[0].text)

    async def body(client: ClientSession) -> None:
        await client.call_tool("init", {"op": "demo"})
        await client.call_tool("evidence_layout", {"op": "demo", "exit_code": 0})
        cli = run_main(
            ["--root", str(tmp_path), "evidence", "compare", "demo", "--output", "y=true"]
        )
        assert cli.code == 0
        # Activation needs both pieces of evidence: it passes only if the CLI's is seen.
        activated = await client.call_tool("activate", {"op": "demo"})
        seen["activated"] = (activated.is_error, json.loads(activated.content[0].text))
        clean = ledger.read_bytes()
        ledger.write_bytes(clean + b'{"id":"00')
        seen["torn"] = await log(client)
        last = clean.rstrip(b"\n").rsplit(b"\n", 1)[-1]
        ledger.write_bytes(clean + last.replace(b'"lamport":', b'"lamport":7', 1) + b"\n")
        seen["tampered"] = await log(client)

    serve(tmp_path, body)
    types = [json.loads(line)["type"] for line in ledger.read_text().splitlines()]
    assert types[2:5] == ["evidence.layout", "evidence.compare", "activation.passed"]
    assert seen["activated"][0] is False, seen["activated"]
    torn_error, torn = seen["torn"]
    assert not torn_error
    assert any("torn" in w or "interrupted" in w for w in torn["warnings"]), torn
    tampered_error, tampered = seen["tampered"]
    assert tampered_error
    assert tampered["code"] == 7
    assert "events.jsonl:6" in tampered["error"]


def test_a_ledger_rewritten_behind_its_back_is_read_again_whole(tmp_path: Path) -> None:
    """A ledger replaced by another valid one (a merge, `normalize`, a checkout) is read again
    whole: the server's next answers are those of the new file, never of its kept state."""
    _new_op(tmp_path)
    other = tmp_path / "other"
    _new_op(other)
    for argv in (["init", "demo"], ["note", "demo", "--text", "written on the other branch"]):
        assert run_main(["--root", str(other), *argv]).code == 0
    ledger = tmp_path / "custom/demo/events.jsonl"
    seen: dict[str, Any] = {}

    async def call(client: ClientSession, name: str, **arguments: Any) -> dict[str, Any]:
        result = await client.call_tool(name, {"op": "demo", **arguments})
        assert not result.is_error, result.content
        return json.loads(result.content[0].text)  # type: ignore[union-attr]

    async def body(client: ClientSession) -> None:
        await call(client, "init")
        await call(client, "evidence_layout", exit_code=0)
        seen["before"] = await call(client, "log", notes=True)
        ledger.write_bytes((other / "custom/demo/events.jsonl").read_bytes())
        seen["status"] = await call(client, "status")
        seen["after"] = await call(client, "log", notes=True)

    serve(tmp_path, body)
    lines = ledger.read_bytes().count(b"\n")
    assert seen["status"]["events"] == lines
    assert "written on the other branch" in json.dumps(seen["after"])
    assert "written on the other branch" not in json.dumps(seen["before"])


def test_a_quick_step_runs_on_the_servers_thread_and_a_long_one_on_a_worker(
    tmp_path: Path,
) -> None:
    """A step runs where the server's loop runs unless it may take long (a tool that runs a
    verifier or reads every ledger, a step given `run`) or another command holds the invoker:
    then on a worker thread, so the server keeps answering."""
    import threading

    from ledger.mcp import server
    from ledger.mcp.invoke import Invoker

    invoker = Invoker(tmp_path)
    ran_on: list[threading.Thread] = []

    def step(op: str, run: str | None = None) -> str:
        ran_on.append(threading.current_thread())
        return f"{op} done"

    async def calls() -> None:
        loop_thread = threading.current_thread()
        quick = server._served("try", step, invoker)
        assert await quick(op="a") == "a done" and ran_on[-1] is loop_thread
        assert await quick(op="b", run="python verify.py") == "b done"
        assert ran_on[-1] is not loop_thread
        assert server._served("measure", step, invoker) is step  # the SDK threads it
        held, release = threading.Event(), threading.Event()

        def busy() -> None:
            with invoker.lock:
                held.set()
                release.wait(10)

        holder = threading.Thread(target=busy)
        holder.start()
        held.wait(10)
        try:
            assert await quick(op="c") == "c done"
            assert ran_on[-1] is not loop_thread  # the invoker was busy
        finally:
            release.set()
            holder.join()
        assert await quick(op="d") == "d done" and ran_on[-1] is loop_thread

    anyio.run(calls)
