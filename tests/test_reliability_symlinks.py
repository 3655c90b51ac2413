"""Symbolic links for an op's folder, ledger or MEMORY.md are refused, never followed (issue 20,
item 7): exit 2 naming the link, and neither the link's target nor anything else changes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from cli_harness import OP, Cli, new_op, snapshot


def _link_folder(cli: Cli, outside: Path) -> Path:
    """custom/OP moved outside the root and linked back."""
    folder = cli.root / "custom" / OP
    folder.rename(outside / OP)
    folder.symlink_to(outside / OP, target_is_directory=True)
    return folder


def _link_ledger(cli: Cli, outside: Path) -> Path:
    """events.jsonl moved outside the root and linked back."""
    ledger = cli.ledger()
    ledger.rename(outside / "events.jsonl")
    ledger.symlink_to(outside / "events.jsonl")
    return ledger


def _link_memory(cli: Cli, outside: Path) -> Path:
    """MEMORY.md replaced by a link to another file (whose bytes must not be copied in)."""
    memory = cli.root / "custom" / OP / "MEMORY.md"
    memory.unlink()
    (outside / "secret.txt").write_text("private notes of another project\n", "utf-8")
    memory.symlink_to(outside / "secret.txt")
    return memory


@pytest.mark.parametrize("link", [_link_folder, _link_ledger, _link_memory])
def test_a_symlink_is_refused_for_writes_and_reads(
    cli: Cli, tmp_path_factory: pytest.TempPathFactory, link: Callable[[Cli, Path], Path]
) -> None:
    """`note` and `status` exit 2 naming the link; no byte changes here or at its target."""
    new_op(cli)
    outside = tmp_path_factory.mktemp("outside")
    linked = link(cli, outside)
    before, outside_before = snapshot(cli.root), snapshot_of(outside)

    for args in (("note", OP, "--text", "where does this go?"), ("status", OP)):
        refused = cli(*args)
        assert refused.code == 2, (args, refused.stdout)
        assert str(linked) in refused.json["error"] and "symbolic link" in refused.json["error"]
        assert "replace the link" in refused.json["next"]

    assert snapshot(cli.root) == before
    assert snapshot_of(outside) == outside_before


def snapshot_of(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` and its bytes (lock files aside)."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.name.endswith(".lock")
    }
