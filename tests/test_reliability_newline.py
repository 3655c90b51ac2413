"""A last event that lost only its newline stays in the ledger (issue 20, item 4): reads count
it, the next append writes the newline back and records it; what does not verify is still
quarantined as a torn tail."""

from __future__ import annotations

import json

from cli_harness import OP, Cli, new_op


def _strip_last_newline(cli: Cli) -> bytes:
    """Remove the ledger's final newline (as an editor might); return the bytes left."""
    data = cli.ledger().read_bytes()
    assert data.endswith(b"\n")
    cli.ledger().write_bytes(data[:-1])
    return data[:-1]


def test_a_verified_last_line_without_newline_is_completed_not_quarantined(cli: Cli) -> None:
    """`status` counts the event and warns; `note` restores the newline, records it, and
    leaves no quarantine file."""
    new_op(cli)
    cli.ok("note", OP, "--text", "acknowledged")
    stripped = _strip_last_newline(cli)
    last_id = json.loads(stripped.rsplit(b"\n", 1)[-1])["id"]

    shown = cli.ok("status", OP)
    assert shown["events"] == 3
    (warning,) = shown["warnings"]
    assert "has no newline" in warning and "writes the newline back" in warning

    cli.ok("note", OP, "--text", "after")
    data = cli.ledger().read_bytes()
    assert data.startswith(stripped + b"\n")
    assert cli.types()[2:] == ["note.added", "ledger.newline_restored", "note.added"]
    restored = cli.events()[3]["payload"]
    assert restored == {"event": last_id, "line": 3}
    assert not list(cli.ledger().parent.glob("*.quarantine-*"))
    assert cli.ok("audit", OP)["clean"] is True
    assert "after" in (cli.root / "custom" / OP / "MEMORY.md").read_text("utf-8")


def test_the_last_part_of_a_batch_without_newline_completes_the_batch(cli: Cli) -> None:
    """`init` writes one batch of two events; its last part losing the newline keeps both."""
    new_op(cli)
    stripped = _strip_last_newline(cli)
    assert cli.ok("status", OP)["events"] == 2
    cli.ok("note", OP, "--text", "after")
    assert cli.ledger().read_bytes().startswith(stripped + b"\n")
    assert cli.types() == ["op.initialized", "policy.set", "ledger.newline_restored", "note.added"]


def test_a_last_line_that_does_not_verify_is_still_quarantined(cli: Cli) -> None:
    """A cut-off last line (no newline, id no longer matching) goes to quarantine as before."""
    new_op(cli)
    cli.ok("note", OP, "--text", "will be cut")
    data = cli.ledger().read_bytes()
    cut = data[:-10]
    cli.ledger().write_bytes(cut)
    kept = cut[: cut.rfind(b"\n") + 1]

    cli.ok("note", OP, "--text", "after")
    assert cli.ledger().read_bytes().startswith(kept)
    assert cli.types()[2:] == ["ledger.repaired", "note.added"]
    (quarantine,) = cli.ledger().parent.glob("*.quarantine-*")
    assert quarantine.read_bytes() == cut[len(kept) :]
