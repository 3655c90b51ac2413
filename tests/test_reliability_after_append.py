"""A failure after the append succeeded never exits as if nothing was written (issue 20, item 2):
the command exits 0 with a warning that MEMORY.md is stale and how to re-render it."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

from cli_harness import OP, Cli, new_op

# MEMORY.md is padded past this many bytes while the ledger stays below it, so that under
# `ulimit -f` the append succeeds and rewriting MEMORY.md fails with EFBIG.
_FILE_SIZE_LIMIT = 64 * 1024


def _limited_run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`tune-ledger --root ROOT ARGS` in a process whose files may not grow past the limit."""

    def limit_file_size() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (_FILE_SIZE_LIMIT, _FILE_SIZE_LIMIT))

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    return subprocess.run(
        [sys.executable, "-m", "ledger", "--root", str(root), *args],
        capture_output=True,
        text=True,
        env=env,
        preexec_fn=limit_file_size,
        check=False,
    )


def test_memory_md_past_the_file_size_limit_is_a_warning_after_the_append(cli: Cli) -> None:
    """`ulimit -f`: the note is appended, MEMORY.md keeps its bytes, exit 0 says so."""
    new_op(cli)
    memory = cli.root / "custom" / OP / "MEMORY.md"
    with memory.open("a", encoding="utf-8") as notes:
        notes.write("\nHuman notes that make the file large.\n" * 4000)
    memory_before = memory.read_bytes()
    ledger_before = cli.ledger().read_bytes()
    assert len(memory_before) > _FILE_SIZE_LIMIT > len(ledger_before)

    done = _limited_run(cli.root, "--json", "note", OP, "--text", "appended anyway")

    assert done.returncode == 0, done.stdout + done.stderr
    ledger_after = cli.ledger().read_bytes()
    assert ledger_after.startswith(ledger_before) and len(ledger_after) > len(ledger_before)
    assert cli.types()[-1] == "note.added"
    assert memory.read_bytes() == memory_before
    assert "MEMORY.md could not be written" in done.stdout
    assert f"tune-ledger render {OP}" in done.stdout
    # Re-rendering once the limit is gone brings MEMORY.md up to date.
    cli.ok("render", OP)
    assert "appended anyway" in memory.read_text("utf-8")


def test_memory_md_that_cannot_be_replaced_is_a_warning_after_the_append(cli: Cli) -> None:
    """MEMORY.md that is not a file (here a folder) cannot be rewritten: exit 0, warning."""
    new_op(cli)
    memory = cli.root / "custom" / OP / "MEMORY.md"
    memory.unlink()
    memory.mkdir()
    ledger_before = cli.ledger().read_bytes()

    done = cli("note", OP, "--text", "appended anyway")

    assert done.code == 0, done.stdout
    assert cli.ledger().read_bytes().startswith(ledger_before)
    assert cli.types()[-1] == "note.added"
    assert memory.is_dir()
    (warning,) = done.json["warnings"]
    assert "MEMORY.md" in warning and "stale" in warning and f"render {OP}" in warning
