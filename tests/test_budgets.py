"""R10 budgets (issue 29.5): an evaluation budget, device time and wall-clock time per
campaign, each a recorded stop, shown in MEMORY.md and the report, lifted only by a person.

Through the CLI, with the stand-in verifier of tests/test_device_measurements.py (its runs'
durations are what the device-time budget counts).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_harness import OP, Cli, snapshot
from test_device_measurements import _campaign, _candidate, script  # noqa: F401 (fixture)

from stages import budget

TILES = ([1, 16, 1, 64], [1, 32, 1, 64], [1, 64, 1, 64], [1, 8, 1, 32])


def _stops(cli: Cli) -> list[dict[str, Any]]:
    return [e["payload"] for e in cli.events() if e["type"] == "campaign.stopped"]


def _measure_until_stopped(cli: Cli) -> int:
    """Start and measure candidates until the campaign stops; how many were measured."""
    for count, tile in enumerate(TILES, 1):
        _candidate(cli, tile)
        cli.ok("measure", OP)
        if _stops(cli):
            return count
    raise AssertionError("the campaign never stopped")


def test_the_evaluation_budget_stops_and_only_a_person_lifts_it(cli: Cli, script: Path) -> None:  # noqa: F811
    """`--max-evaluations 2`: the second result stops the campaign (recorded, shown); an agent's
    lift and loosening are refused with nothing written; a person raises and lifts it."""
    _campaign(cli, script)
    set_ = cli.ok("policy", OP, "--max-evaluations", "2", "--reason", "devices cost")
    assert set_["set"] == {"max_evaluations": 2}
    assert _measure_until_stopped(cli) == 2
    (stop,) = _stops(cli)
    assert stop["reason"] == "budget"
    assert "evaluation budget reached: 2 of 2 evaluations" in stop["detail"]
    memory = (cli.root / "custom" / OP / "MEMORY.md").read_text("utf-8")
    assert "**stopped (budget)**: evaluation budget reached" in memory
    cli.ok("report", OP)
    report = (cli.root / "custom" / OP / f"{OP}_tuning_report.md").read_text("utf-8")
    assert "stopped (budget): evaluation budget reached: 2 of 2" in report
    assert (
        cli("candidate", OP, "--config", '{"vec_tile_shape":[1,8,1,16]}', "--prior", "t").code == 6
    )

    before = snapshot(cli.root)
    for refused in (
        cli("resume-campaign", OP, "--reason", "go on"),
        cli("policy", OP, "--max-evaluations", "10", "--reason", "more"),
        cli("resume-campaign", OP, "--reason", "go on", "--person", "Ada"),  # still reached
    ):
        assert refused.code == 3, refused.stdout
        assert refused.json["rule"] == "R10"
        assert "--person NAME" in refused.json["next"]
    # A person's decision without its reason is bad input, as for every lowered guard (§3.3).
    no_reason = cli("policy", OP, "--max-evaluations", "off", "--person", "Ada")
    assert no_reason.code == 2 and "--reason" in no_reason.json["error"]
    assert snapshot(cli.root) == before

    cli.ok("policy", OP, "--max-evaluations", "4", "--person", "Ada", "--reason", "worth it")
    cli.ok("resume-campaign", OP, "--reason", "worth it", "--person", "Ada")
    resumed = [e["payload"] for e in cli.events() if e["type"] == "campaign.resumed"]
    assert resumed == [
        {"lifted": stop["detail"], "reason": "worth it", "person": "Ada"},
    ]
    raised = [e["payload"] for e in cli.events() if e["type"] == "policy.set"][-1]
    assert raised["person"] == "Ada" and raised["value"] == 4
    # The one person rule (DESIGN §3.3): the raise is a lowered guard, both are person's
    # decisions, shown first in MEMORY.md.
    memory = (cli.root / "custom" / OP / "MEMORY.md").read_text("utf-8")
    assert "- policy max_evaluations 2 -> 4: Ada, because worth it" in memory
    assert "- lifted the budget stop (evaluation budget reached: 2 of 2" in memory
    assert "Guards lowered now: max_evaluations 4 (was 2, R10)." in memory
    # Two more results reach the raised budget: a second recorded stop.
    assert _measure_until_stopped_again(cli) == 2
    audited = cli.ok("audit", OP)
    assert audited["clean"] is True  # every stop re-derived from recorded data
    (decision,) = [d for d in audited["ops"][0]["decisions"] if "stop lifted" in d]
    assert decision.startswith("budget stop lifted by Ada")


def _measure_until_stopped_again(cli: Cli) -> int:
    stops = len(_stops(cli))
    for count, tile in enumerate(TILES[2:], 1):
        _candidate(cli, tile)
        cli.ok("measure", OP)
        if len(_stops(cli)) > stops:
            return count
    raise AssertionError("the campaign never stopped again")


@pytest.mark.parametrize(
    ("option", "words"),
    [
        ("--max-device-seconds", "device-time budget reached"),
        ("--max-wall-seconds", "wall-clock budget reached"),
    ],
)
def test_device_and_wall_time_budgets_stop_from_recorded_data(
    cli: Cli,
    script: Path,  # noqa: F811
    option: str,
    words: str,
) -> None:
    """A tiny device-time or wall-clock budget stops at the first result; what it counted
    is the recorded run durations / event times, so replay and audit agree."""
    _campaign(cli, script)
    cli.ok("policy", OP, option, "0.001")
    assert _measure_until_stopped(cli) == 1
    (stop,) = _stops(cli)
    assert stop["reason"] == "budget" and words in stop["detail"]
    measured = [e for e in cli.events() if e["type"] == "attempt.measured"]
    duration = measured[0]["payload"]["origin"]["duration_s"]
    if option == "--max-device-seconds":
        assert f"{duration:g} of 0.001 s of verifier runs" in stop["detail"]
    assert cli.ok("audit", OP)["clean"] is True


def test_a_budget_value_out_of_range_is_bad_input(cli: Cli, script: Path) -> None:  # noqa: F811
    _campaign(cli, script)
    before = snapshot(cli.root)
    for option, value in (
        ("--max-evaluations", "0"),
        ("--max-evaluations", "2.5"),
        ("--max-device-seconds", "-1"),
        ("--max-wall-seconds", '"soon"'),
    ):
        result = cli("policy", OP, option, value)
        assert result.code == 2, (option, value, result.stdout)
    assert snapshot(cli.root) == before


def test_several_budgets_in_one_command_are_all_or_nothing(cli: Cli, script: Path) -> None:  # noqa: F811
    """All three options set at once; one refused (a loosening without a person): none set."""
    _campaign(cli, script)
    cli.ok(
        "policy", OP, "--max-evaluations", "300", "--max-device-seconds", "43200",
        "--max-wall-seconds", "86400",
    )  # fmt: skip
    keys = [e["payload"]["key"] for e in cli.events() if e["type"] == "policy.set"]
    assert keys[-3:] == ["max_evaluations", "max_device_seconds", "max_wall_seconds"]
    memory = (cli.root / "custom" / OP / "MEMORY.md").read_text("utf-8")
    assert "when a budget runs out (used: 0 of 300 (max_evaluations)" in memory
    before = snapshot(cli.root)
    refused = cli("policy", OP, "--max-evaluations", "100", "--max-wall-seconds", "off")
    assert refused.code == 3 and refused.json["rule"] == "R10"
    assert snapshot(cli.root) == before


def test_what_a_campaign_spent_counts_results_not_cache_hits() -> None:
    """The device time of a result read from the cache is not spent now (its run was earlier)."""
    from ledger.domain.state import State
    from ledger.schema.values import CachedRun, Origin

    state = State()
    run = Origin(level="measured", duration_s=2.0)
    hit = Origin(level="measured", duration_s=2.0, cached=CachedRun(key="k", at="t", host="h"))
    assert budget.spent(state, run).device_seconds == 2.0
    assert budget.spent(state, hit).device_seconds == 0.0
    assert budget.spent(state, hit).evaluations == 1
    assert budget.reached({"max_evaluations": 1}, budget.spent(state, hit)) == [
        "evaluation budget reached: 1 of 1 evaluations (policy max_evaluations)"
    ]
    assert json.dumps(budget.budgets({"max_evaluations": None})) == "{}"


def test_the_mcp_server_never_lifts_a_budget(cli: Cli, script: Path) -> None:  # noqa: F811
    """Over MCP (no `person` argument exists): lifting a budget stop and loosening a budget are
    refused (R10) with the CLI command a person runs; nothing is written."""
    pytest.importorskip("mcp")
    from test_mcp_server import serve

    _campaign(cli, script)
    cli.ok("policy", OP, "--max-evaluations", "1")
    assert _measure_until_stopped(cli) == 1
    before = snapshot(cli.root)
    seen: dict[str, Any] = {}

    async def body(client: Any) -> None:
        for name, arguments in (
            ("resume_campaign", {"op": OP, "reason": "the agent wants more"}),
            ("policy", {"op": OP, "key": "max_evaluations", "value": "50", "reason": "more"}),
        ):
            result = await client.call_tool(name, arguments)
            seen[name] = (result.is_error, json.loads(result.content[0].text))

    serve(cli.root, body)
    for name in ("resume_campaign", "policy"):
        is_error, error = seen[name]
        assert is_error, name
        assert error["rule"] == "R10" and error["code"] == 3
        assert "--person NAME" in error["next"]
    assert snapshot(cli.root) == before


@pytest.mark.slow  # an autopilot campaign of real processes (the stand-in verifier)
def test_the_autopilot_records_its_budget_and_stops_on_it(tmp_path: Path) -> None:
    """`--max-evaluations 3`: the autopilot records the budget as the op's policy and the
    campaign stops on it after three verifier results; asked again for a larger one, it
    leaves the stop to a person."""
    from standin import autopilot, op_root, summary, write_script

    standin = write_script(tmp_path / "verifier")
    root = op_root(tmp_path, "root", standin, "sleep:0.01")
    cache = tmp_path / "cache"
    out = autopilot(root, cache, "--workers", "1", "--max-evaluations", "3")
    assert summary(out)["stopped"] == "budget"
    cli = Cli(root)
    budgets = [
        e["payload"]
        for e in cli.events()
        if e["type"] == "policy.set" and e["payload"]["key"] == "max_evaluations"
    ]
    assert [(b["value"], b.get("person")) for b in budgets] == [(3, None)]
    results = [e for e in cli.events() if e["type"] in ("attempt.measured", "attempt.failed")]
    assert len(results) == 3
    before = cli.ledger().read_bytes()
    again = autopilot(root, cache, "--workers", "1", "--max-evaluations", "10")
    assert summary(again)["stopped"] == "budget"
    assert cli.ledger().read_bytes() == before  # the autopilot lifts nothing


@pytest.mark.parametrize(
    ("before", "after", "looser"),
    [(None, 5, False), (5, 3, False), (5, 5, False), (5, 10, True), (5, None, True)],
)
def test_loosening_a_budget_is_lowering_a_guard(before: Any, after: Any, looser: bool) -> None:
    """Setting a budget from off, or tightening it, is the agent's to do; a larger budget or
    one switched off lowers a guard (R10), a person's decision like every other (§3.3)."""
    from stages.policy import GUARD_RULES, loosens

    assert loosens(budget.MAX_EVALUATIONS, before, after) is looser
    assert GUARD_RULES[budget.MAX_EVALUATIONS] == "R10"
