"""Audit, check, torn tails and the report through the CLI."""

from __future__ import annotations

from pathlib import Path

from cli_harness import MEASURE, OP, Cli, activate, new_op, pending, snapshot


def _memory(cli: Cli, op: str = OP) -> Path:
    return cli.root / "custom" / op / "MEMORY.md"


def test_audit_of_a_clean_campaign_exits_0(cli: Cli) -> None:
    """Integrity, legality, verdicts and MEMORY.md all check out: clean, exit 0."""
    attempt = pending(cli)
    cli.ok("verify", OP, attempt, "--run", f"{cli.script('m.py', MEASURE)} 90")
    report = cli.ok("audit", OP)
    assert report["clean"] is True
    assert report["ops"][0]["findings"] == [] and report["ops"][0]["events"] == len(cli.events())
    human = cli("audit", OP, as_json=False)
    assert human.code == 0 and human.stdout.startswith(f"{OP}: clean")


def test_a_byte_edited_in_the_middle_is_exit_7_naming_file_and_line(cli: Cli) -> None:
    """Audit names path:line of the edited event; nothing is repaired or written."""
    pending(cli)
    path = cli.ledger()
    lines = path.read_bytes().splitlines(keepends=True)
    target = next(i for i, line in enumerate(lines) if b'"target.set"' in line)
    lines[target] = lines[target].replace(b'"baseline_us":100.0', b'"baseline_us":900.0')
    path.write_bytes(b"".join(lines))
    before = snapshot(cli.root)
    result = cli("audit", OP)
    assert result.code == 7
    error = result.json
    assert error["code"] == 7 and error["clean"] is False
    assert f"events.jsonl:{target + 1}" in error["error"]
    assert error["next"]
    human = cli("audit", OP, as_json=False)
    assert human.code == 7
    assert f"events.jsonl:{target + 1}" in human.stdout
    assert f"events.jsonl:{target + 1}" in human.stderr.splitlines()[0]
    assert snapshot(cli.root) == before


def test_a_hand_edited_memory_section_fails_check_and_audit(cli: Cli) -> None:
    """Text changed inside a managed section: check and audit exit 7; render restores it."""
    activate(cli)
    memory = _memory(cli)
    text = memory.read_text("utf-8")
    assert "Activation **passed**" in text
    memory.write_text(text.replace("Activation **passed**", "Activation **PASSED!**"), "utf-8")
    before = snapshot(cli.root)
    check = cli("check", OP)
    assert check.code == 7
    assert "MEMORY.md" in check.json["error"] and "edited by hand" in check.json["error"]
    audit = cli("audit", OP)
    assert audit.code == 7 and "MEMORY.md" in audit.json["error"]
    human = cli("check", OP, as_json=False)
    assert human.code == 7 and "edited by hand" in human.stderr
    assert snapshot(cli.root) == before
    assert cli.ok("render", OP)["changed"] is True
    assert cli.ok("check", OP)["findings"] == []


def test_text_outside_the_managed_sections_is_kept(cli: Cli) -> None:
    """Human notes outside the markers survive the next command byte for byte."""
    new_op(cli)
    memory = _memory(cli)
    memory.write_text(memory.read_text("utf-8") + "\n## My notes\n\nkeep me\n", "utf-8")
    cli.ok("evidence", "compare", OP, "--output", "y=true")
    assert memory.read_text("utf-8").endswith("\n## My notes\n\nkeep me\n")
    assert cli.ok("check", OP)["findings"] == []


def test_audit_all_covers_every_op(cli: Cli) -> None:
    """audit --all lists each op; one damaged op makes the whole audit exit 7."""
    for op in ("alpha", "beta", "gamma"):
        activate(cli, op)
    report = cli.ok("audit", "--all")
    assert [r["op"] for r in report["ops"]] == ["alpha", "beta", "gamma"]
    assert report["clean"] is True
    path = cli.ledger("beta")
    data = bytearray(path.read_bytes())
    middle = data.index(b"\n", len(data) // 2) - 5
    data[middle] = ord("X") if data[middle] != ord("X") else ord("Y")
    path.write_bytes(bytes(data))
    result = cli("audit", "--all")
    assert result.code == 7
    reports = {r["op"]: r for r in result.json["ops"]}
    assert reports["alpha"]["findings"] == [] and reports["gamma"]["findings"] == []
    assert "beta/events.jsonl:" in reports["beta"]["findings"][0]
    assert result.json["error"].startswith("beta: ")


def test_audit_all_without_ops_is_clean(cli: Cli) -> None:
    """No custom/ folder: nothing to audit, exit 0."""
    assert cli.ok("audit", "--all") == {"clean": True, "ops": []}


# --- torn tail ----------------------------------------------------------------------------------


def test_a_torn_tail_is_warned_about_then_quarantined_and_reported(cli: Cli) -> None:
    """Garbage without a newline: status works and warns; the next step quarantines it."""
    activate(cli)
    path = cli.ledger()
    intact = path.read_bytes()
    torn_line = intact.count(b"\n") + 1
    path.write_bytes(intact + b'{"id":"0123456789abcdef01234567')
    status = cli.ok("status", OP)
    assert status["activated"] is True
    assert any("torn tail" in w for w in status["warnings"])
    human = cli("status", OP, as_json=False)
    assert human.code == 0 and human.stderr.startswith("warning: ")
    assert "torn tail" in human.stderr
    assert cli.ok("log", OP)["warnings"] == status["warnings"]
    unrepaired = cli("audit", OP)
    assert unrepaired.code == 7 and "torn tail" in unrepaired.json["error"]
    assert f"events.jsonl:{torn_line}" in unrepaired.json["error"]
    cli.ok("note", OP, "--text", "after the crash")
    assert path.read_bytes().startswith(intact)
    assert cli.types()[-2:] == ["ledger.repaired", "note.added"]
    quarantine = path.parent / "events.jsonl.quarantine-1"
    assert quarantine.read_bytes() == b'{"id":"0123456789abcdef01234567'
    assert cli.ok("status", OP)["warnings"] == []
    audit = cli.ok("audit", OP)
    repairs = audit["ops"][0]["repairs"]
    assert audit["clean"] is True and len(repairs) == 1
    assert repairs[0]["quarantine"] == "events.jsonl.quarantine-1"
    human_audit = cli("audit", OP, as_json=False).stdout
    assert "repaired: torn tail" in human_audit and "quarantine-1" in human_audit


def test_a_refused_step_does_not_repair_a_torn_tail(cli: Cli) -> None:
    """A refusal writes nothing at all: the torn tail stays for the next accepted step."""
    new_op(cli)
    path = cli.ledger()
    path.write_bytes(path.read_bytes() + b"garbage")
    before = snapshot(cli.root)
    assert cli("skill", "load", OP, "perf-analyzer").code == 3
    assert snapshot(cli.root) == before


# --- report -------------------------------------------------------------------------------------


def test_report_writes_markdown_and_svg_and_records_an_event(cli: Cli) -> None:
    """custom/OP/OP_tuning_report.md and .svg exist and a report.generated event names them."""
    attempt = pending(cli)
    cli.ok("verify", OP, attempt, "--output", "y=true", "--layout-exit", "0", "--time", "90us")
    out = cli.ok("report", OP)
    folder = cli.root / "custom" / OP
    markdown = folder / f"{OP}_tuning_report.md"
    chart = folder / f"{OP}_tuning_report.svg"
    assert out["path"] == f"custom/{OP}/{OP}_tuning_report.md"
    assert out["chart"] == f"custom/{OP}/{OP}_tuning_report.svg"
    assert markdown.read_text("utf-8").startswith(f"# {OP}: tuning report")
    assert "<svg" in chart.read_text("utf-8")
    event = cli.events()[-1]
    assert event["type"] == "report.generated"
    assert event["payload"]["path"] == out["path"] and event["payload"]["digest"] == out["digest"]
    human = cli("report", OP, as_json=False)
    assert human.code == 0 and human.stdout.startswith(f"report written: custom/{OP}/")
