"""Hostile input never becomes "a bug" (exit 1): each is bad input (exit 2) or a named I/O
error (exit 8), with the ledger's bytes unchanged."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from cli_harness import OP, Cli, new_op, run_main, snapshot


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
