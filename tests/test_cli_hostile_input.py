"""Hostile input never becomes "a bug" (exit 1): each is bad input (exit 2) or a named I/O
error (exit 8), with the ledger's bytes unchanged."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest
from cli_harness import OP, Cli, new_op, pending, run_main, run_process, snapshot


def test_an_argument_that_is_not_utf8_is_bad_input(cli: Cli) -> None:
    """Bytes that are not UTF-8 arrive as lone surrogates: refused before anything runs."""
    new_op(cli)
    before = snapshot(cli.root)
    refused = cli("note", OP, "--text", "caf\udce9")
    assert refused.code == 2
    assert "not valid UTF-8" in refused.json["error"]
    assert snapshot(cli.root) == before


def test_json_nested_thousands_deep_is_bad_input(cli: Cli) -> None:
    """A config nested past the parser's recursion limit is refused, not a crash."""
    new_op(cli)
    before = snapshot(cli.root)
    deep = "[" * 100_000 + "]" * 100_000
    refused = cli("try", OP, "--set", f"x={deep}")
    assert refused.code == 2
    assert "nested too deeply" in refused.json["error"]
    assert snapshot(cli.root) == before


@pytest.mark.parametrize("kind", ["file", "missing"])
def test_a_root_that_is_not_a_folder_is_bad_input(tmp_path: Path, kind: str) -> None:
    """--root naming a file or a missing folder is refused, and nothing is created."""
    root = tmp_path / "root"
    if kind == "file":
        root.write_text("not a folder\n")
    result = run_main(["--root", str(root), "--json", "init", OP])
    assert result.code == 2
    assert ("is not a folder" if kind == "file" else "does not exist") in result.stdout
    assert root.is_file() if kind == "file" else not root.exists()


@pytest.mark.parametrize("code", [errno.EFBIG, errno.EROFS, errno.EPERM, errno.ENOSPC])
def test_a_refused_write_is_an_io_error_with_nothing_written(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    """The file system refusing the append gives exit 8, naming the cause; no bytes change."""
    new_op(cli)
    before = snapshot(cli.root)
    real_write = os.write

    def refuse(fd: int, data: bytes) -> int:
        if b'"note.added"' in data:
            raise OSError(code, os.strerror(code))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", refuse)
    refused = cli("note", OP, "--text", "hello")
    assert refused.code == 8
    assert refused.json["kind"] == "io-error" and refused.json["errno"] == code
    assert os.strerror(code) in refused.json["error"]
    assert snapshot(cli.root) == before


def test_a_repeated_key_in_a_json_config_is_bad_input(cli: Cli) -> None:
    """`{"a": 1, "a": 2}` is refused naming the key, not read as `{"a": 2}`."""
    new_op(cli)
    before = snapshot(cli.root)
    refused = cli("try", OP, "--set", 'x={"a": 1, "a": 2}')
    assert refused.code == 2
    assert "key 'a' repeats" in refused.json["error"]
    assert snapshot(cli.root) == before


# --- bad numbers and names are bad input (issue 26, item 8) ---------------------------------

# Every integer option, each after what a command needs to reach its parsing.
INTEGER_OPTIONS = [
    ("log", OP, "--limit"),
    ("priors", OP, "--count"),
    ("target", OP, "--cube-m"),
    ("evidence", "layout", OP, "--exit-code"),
    ("verify", OP, "pending", "--layout-exit"),
    ("memory-merge-driver", "base", "ours", "theirs", "--marker-size"),
]


@pytest.mark.parametrize("value", ["1e30", str(2**63), "9" * 40, str(-(2**63))])
@pytest.mark.parametrize("args", INTEGER_OPTIONS, ids=[a[-1] for a in INTEGER_OPTIONS])
def test_an_integer_option_out_of_its_range_is_bad_input(
    cli: Cli, args: tuple[str, ...], value: str
) -> None:
    """`log --limit 2**63` was "a bug" (exit 1, from a slice deep inside) and an exit code of
    2**63 was recorded: each integer option is bounded where it is parsed, exit 2 naming it."""
    new_op(cli)
    before = snapshot(cli.root)
    refused = cli(*args, value)
    assert refused.code == 2, refused.stdout
    assert args[-1] in refused.json["error"]
    assert snapshot(cli.root) == before


# Every option naming a file the ledger reads (a measurement JSON, the implementation).
FILE_OPTIONS = {
    "compare": ("evidence", "compare", OP, "--from-json"),
    "target": ("target", OP, "--shape", "[32, 32, 1, 256]", "--target", "5us", "--target-source",
               "spec", "--from-json"),
    "verify": ("verify", OP, "pending", "--from-json"),
    "impl": ("evidence", "compare", OP, "--output", "y=true", "--impl"),
}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["/dev/zero", "fifo", "folder"])
@pytest.mark.parametrize("args", FILE_OPTIONS.values(), ids=FILE_OPTIONS.keys())
def test_a_file_option_naming_no_regular_file_is_bad_input(
    tmp_path: Path, kind: str, args: tuple[str, ...]
) -> None:
    """`--from-json /dev/zero` read until the process was killed, and a FIFO hung it: a file
    named by an option must be a regular file of bounded size, else exit 2 naming it."""
    cli = Cli(tmp_path / "root")
    cli.root.mkdir()
    pending(cli)
    named = {"/dev/zero": "/dev/zero", "fifo": str(tmp_path / "fifo"), "folder": str(tmp_path)}
    if kind == "fifo":
        os.mkfifo(tmp_path / "fifo")
    before = snapshot(cli.root)
    refused = run_process(cli.root, *args, named[kind])
    assert refused.code == 2, (refused.stdout, refused.stderr)
    assert named[kind] in refused.json["error"] and "regular file" in refused.json["error"]
    assert snapshot(cli.root) == before


@pytest.mark.parametrize("command", ["check-op", "new-op", "status", "init", "manifest"])
def test_an_op_name_is_checked_before_anything_reads_or_writes(cli: Cli, command: str) -> None:
    """One check of op names (a click type on every OP argument) runs as the command line is
    parsed: `check-op ../..` read SPEC.md two folders above custom/."""
    (cli.root / "custom").mkdir()
    (cli.root / "SPEC.md").write_text("---\nop_name: x\n---\n", "utf-8")
    refused = cli(command, "../..")
    assert refused.code == 2, refused.stdout
    assert "op name '../..' is not allowed" in refused.json["error"]
    assert sorted(p.name for p in cli.root.rglob("*")) == ["SPEC.md", "custom"]


def test_names_that_look_like_options_stay_names_through_mcp(cli: Cli) -> None:
    """The MCP server builds a command line from a tool's arguments: `--help` as an op's name
    printed the help (exit 0, nothing recorded, no error). Values go after `--` now, so each is
    the name it is: an op name is refused (code 2) by the one check of op names, an attempt
    is unknown, and a policy value of `-1` reaches the policy's own check."""
    pytest.importorskip("mcp")
    from ledger.mcp.invoke import Invoker
    from ledger.mcp.reads import ReadTools
    from ledger.mcp.steps import StepTools

    new_op(cli)
    invoker = Invoker(cli.root)
    reads, steps = ReadTools(invoker), StepTools(invoker)
    before = snapshot(cli.root)
    for option in ("--help", "--version", "-h"):
        for result in (
            reads.status(option),
            reads.log(option),
            reads.check_op(option),
            steps.init(option),
            steps.note(option, text="x"),
        ):
            error = _tool_error(result)
            assert error["code"] == 2 and f"op name {option!r} is not allowed" in error["error"]
    unknown = _tool_error(steps.fail(OP, "--help", category="compile"))
    assert unknown["code"] == 2 and "'--help'" in unknown["error"]
    assert snapshot(cli.root) == before
    negative = _tool_error(steps.policy(OP, "noise_threshold", "-1"))
    assert negative["code"] == 2 and "noise_threshold" in negative["error"]
    assert _tool_error(reads.log(OP, limit=10**30))["code"] == 2  # 1e30 as a JSON integer
    assert snapshot(cli.root) == before


def _tool_error(result: Any) -> dict[str, Any]:
    """The CLI's JSON error object a tool returned (failing unless the tool failed)."""
    assert result.is_error, result.content[0].text
    value = json.loads(result.content[0].text)
    assert isinstance(value, dict)
    return value
