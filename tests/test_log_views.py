"""Abandon reasons, failure details and notes appear whole where a reader
looks: `log` prints them, `log OP --attempt ID` shows every field of one attempt and
`log OP --notes` every note (MEMORY.md may shorten them)."""

from __future__ import annotations

from cli_harness import OP, Cli, frontend

LONG = "the simulator hung after the stitch pass; " * 12  # 504 characters, longer than a cell


def test_an_abandon_reason_is_whole_in_log_and_in_log_attempt(cli: Cli) -> None:
    frontend(cli)
    attempt = str(cli.ok("try", OP, "--set", "stitch=64")["attempt"])
    cli.ok("abandon", OP, attempt, "--reason", LONG)
    [row] = cli.ok("log", OP)["attempts"]
    assert row["detail"] == LONG
    text = cli("log", OP, as_json=False).stdout
    assert f"\n{'':>18}reason: {LONG}\n" in text + "\n"
    one = cli.ok("log", OP, "--attempt", attempt[:6])["attempt"]
    assert (one["attempt"], one["status"], one["detail"], one["param"], one["value"]) == (
        attempt,
        "abandoned",
        LONG,
        "stitch",
        64,
    )
    shown = cli("log", OP, "--attempt", attempt, as_json=False).stdout
    assert f"  reason: {LONG}\n" in shown
    assert '  config: {"stitch":64,"vec_tile_shape":[1,8,1,64]}\n' in shown


def test_a_failure_detail_and_the_measurement_are_whole(cli: Cli) -> None:
    frontend(cli)
    attempt = str(cli.ok("try", OP, "--set", "stitch=64")["attempt"])
    cli.ok("verify", OP, attempt, "--output", "y=true", "--layout-exit", "0",
           "--time", "90us", "--time", "91us", "--time", "92us")  # fmt: skip
    shown = cli("log", OP, "--attempt", attempt, as_json=False).stdout
    assert (
        "  time: 91.00 µs (samples 90.00 µs, 91.00 µs, 92.00 µs; best then 100.00 µs; "
        "provenance reported)\n"
    ) in shown
    second = str(cli.ok("try", OP, "--set", "stitch=32")["attempt"])
    cli.ok("fail", OP, second, "--category", "compile", "--detail", LONG)
    assert cli.ok("log", OP, "--attempt", second)["attempt"]["detail"] == LONG
    assert f"  detail: {LONG}\n" in cli("log", OP, "--attempt", second, as_json=False).stdout


def test_notes_are_whole_in_log_notes(cli: Cli) -> None:
    frontend(cli)
    cli.ok("note", OP, "--text", LONG)
    assert cli.ok("log", OP, "--notes")["notes"] == [LONG]
    assert cli("log", OP, "--notes", as_json=False).stdout == f"- {LONG}\n"


def test_attempt_and_notes_are_one_view_each(cli: Cli) -> None:
    frontend(cli)
    result = cli("log", OP, "--notes", "--attempt", "pending")
    assert result.code == 2
    assert result.json["error"] == "give only one of --attempt, --notes"
