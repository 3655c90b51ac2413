"""People and agents are different callers (issue 27, items 3 and 5): lowering a guard needs a
person's name and reason through the CLI and is shown first in MEMORY.md and the report; a
relaxation rests on measured attempts of the op; agent-setup writes the clients' permission
rules. The MCP server's refusal is tested through the SDK client in tests/test_mcp_person.py.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from cli_harness import OP, Cli, frontend, new_op, snapshot
from test_measure_cache import VERIFIER, _in_frontend, _op

from ledger.domain.replay import replay
from ledger.log import upcast
from ledger.log.file_store import FileStore
from ledger.log.record import converter
from ledger.schema.events import PAYLOAD_TYPES
from stages.person import person_decisions

DATA = Path(__file__).parent / "data" / "ledger"


def _memory(cli: Cli) -> str:
    return (cli.root / "custom" / OP / "MEMORY.md").read_text("utf-8")


def _verifier(tmp_path: Path) -> Path:
    folder = tmp_path / "verifier"
    folder.mkdir()
    script = folder / "verifier.py"
    script.write_text(textwrap.dedent(VERIFIER), "utf-8")
    return script


# --- item 3: a guard is lowered by a person, by name and with a reason ----------------------


def test_require_measured_off_without_a_person_is_refused_with_the_command_a_person_runs(
    cli: Cli,
) -> None:
    """The agent's `policy require_measured false` (as in issue 27, "agent decided") is refused
    (exit 3, R11) naming the exact CLI command, and nothing is written."""
    new_op(cli)
    before = snapshot(cli.root)
    refused = cli("policy", OP, "require_measured", "false", "--reason", "agent decided")
    assert refused.code == 3
    error = refused.json
    assert error["rule"] == "R11" and "a person's decision" in error["error"]
    assert error["next"].endswith(
        f"tune-ledger policy {OP} require_measured false --person NAME --reason TEXT"
    )
    assert snapshot(cli.root) == before


def test_a_person_lowers_a_guard_by_name_and_reason_shown_first_in_memory_and_report(
    cli: Cli,
) -> None:
    """With --person and --reason the change is recorded with both; MEMORY.md's header (the
    top of the file) and the report's first section name the person, the reason and the
    guard now lowered."""
    new_op(cli)
    no_reason = cli("policy", OP, "noise_threshold", "0.05", "--person", "Ada Lovelace")
    assert no_reason.code == 2 and "--reason" in no_reason.json["error"]
    cli.ok("policy", OP, "noise_threshold", "0.05", "--person", "Ada Lovelace",
           "--reason", "the lab host is noisy today")  # fmt: skip
    event = cli.events()[-1]
    assert (event["type"], event["schema"]) == ("policy.set", 2)
    assert event["payload"] == {
        "key": "noise_threshold",
        "value": 0.05,
        "reason": "the lab host is noisy today",
        "person": "Ada Lovelace",
    }
    memory = _memory(cli)
    header = memory[: memory.index("<!-- tune-ledger:end header -->")]
    assert "**Person decisions**" in header
    assert (
        "- policy noise_threshold 0.01 -> 0.05: Ada Lovelace, because the lab host is noisy "
        "today (event" in header
    )
    assert "Guards lowered now: noise_threshold 0.05 (default 0.01, R8)." in header
    assert cli.ok("check", OP)["findings"] == []
    audited = cli.ok("audit", OP)["ops"][0]
    assert audited["person_decisions"][0].startswith(
        "policy noise_threshold 0.01 -> 0.05: Ada Lovelace, because the lab host is noisy today"
    )
    assert "  person's decision: policy noise_threshold" in cli("audit", OP, as_json=False).stdout
    report = cli.ok("report", OP)["path"]
    text = (cli.root / report).read_text("utf-8")
    first = text.index("## Person decisions")
    assert first < text.index("## Summary")
    assert "Ada Lovelace, because the lab host is noisy today" in text[first:]


def test_a_tighter_threshold_needs_no_person_and_memory_shows_no_decisions(cli: Cli) -> None:
    """Raising the bar is anyone's step: no person, no person decisions in MEMORY.md."""
    new_op(cli)
    cli.ok("policy", OP, "noise_threshold", "0.005")
    cli.ok("policy", OP, "require_measured", "true")
    assert "Person decisions" not in _memory(cli)
    loosened = cli("policy", OP, "require_measured", '"auto"')
    assert loosened.code == 3 and loosened.json["rule"] == "R11"
    looser = cli("policy", OP, "bootstrap_confidence", "0.9")
    assert looser.code == 3 and looser.json["rule"] == "R8"


def test_old_events_read_as_decided_by_a_person_unknown() -> None:
    """A schema-1 ledger's relaxation (no evidence, no person) is upcast and listed as a
    person's decision whose person is unknown."""
    events = FileStore(DATA / "v1.jsonl").read().events
    decisions = person_decisions(replay(events))
    assert [(d.kind, d.person) for d in decisions] == [("relax", None)]


@pytest.mark.parametrize(
    ("kind", "payload"),
    [
        ("policy.set", {"key": "noise_threshold", "value": 0.1, "reason": "old"}),
        ("campaign.resumed", {"lifted": "util 90%", "reason": "old"}),
        ("ledger.rollback_accepted", {"missing": "ab" * 16, "events": 3, "reason": "old"}),
        ("limit.relaxed", {"what": "vec", "limit": 128, "basis": "old"}),
    ],
)
def test_a_schema_1_event_is_upcast_with_its_person_unknown(
    kind: str, payload: dict[str, object]
) -> None:
    """Each of the four events that gained `person` reads from schema 1 with person None (and
    a relaxation with no evidence), and validates as the current payload."""
    current = upcast.upcast(kind, 1, dict(payload))
    assert current["person"] is None
    assert {k: v for k, v in current.items() if k in payload} == payload
    if kind == "limit.relaxed":
        assert current["evidence"] == []
    converter().structure(current, PAYLOAD_TYPES[kind])


@pytest.mark.parametrize(
    ("kind", "payload"),
    [
        ("policy.set", {"key": "max_evaluations", "value": 10, "reason": "r", "person": "Ada"}),
        ("campaign.resumed", {"lifted": "evaluation budget", "reason": "r", "person": "Ada"}),
    ],
)
def test_a_schema_1_event_that_names_its_person_keeps_it(
    kind: str, payload: dict[str, object]
) -> None:
    """Between issue 29 and the merge of issue 27, a loosened budget and a lifted budget stop
    were written at schema 1 with an optional `person`: the upcast keeps the name."""
    current = upcast.upcast(kind, 1, dict(payload))
    assert current == {**payload, "person": "Ada"}
    converter().structure(current, PAYLOAD_TYPES[kind])


def test_a_resume_recorded_before_persons_is_shown_as_a_person_unknowns() -> None:
    """audit names the person who lifted a stop, "a person unknown" for a schema-1 event."""
    from ledger.shell.audit_trust import campaign_decisions

    events = FileStore(DATA / "v1.jsonl").read().events
    old = events[-1]._replace(
        type="campaign.resumed", data={"lifted": "u", "reason": "r", "person": None}
    )
    (text,) = campaign_decisions([old])
    assert text.startswith("utilization stop lifted by a person unknown")


# --- item 5: relax rests on measured evidence --------------------------------------------------


def test_relax_names_measured_attempts_shown_on_the_target_sheet(tmp_path: Path) -> None:
    """Without evidence relax is refused (R3, "based on profiling data", naming `measure`); an
    unknown attempt is bad input; a pending or typed-in attempt is refused naming it; a
    measured one is recorded and its time shown beside the basis on the target sheet."""
    cli = _op(tmp_path, "r", _verifier(tmp_path))
    _in_frontend(cli)
    before = snapshot(cli.root)
    bare = cli("relax", OP, "--what", "vec", "--limit", "128", "--basis", "idle vec units")
    assert bare.code == 3 and bare.json["rule"] == "R3"
    assert "based on profiling data" in bare.json["error"]
    assert f"tune-ledger measure {OP} ATTEMPT" in bare.json["next"]
    unknown = cli("relax", OP, "--what", "vec", "--limit", "128", "--basis", "b",
                  "--evidence", "beef")  # fmt: skip
    assert unknown.code == 2 and "--evidence beef" in unknown.json["error"]
    assert snapshot(cli.root) == before

    measured = cli.ok("candidate", OP, "--config", '{"vec_tile_shape":[1,8,1,32]}',
                      "--prior", "test")["attempt"]  # fmt: skip
    pending = cli("relax", OP, "--what", "vec", "--limit", "128", "--basis", "b",
                  "--evidence", measured)  # fmt: skip
    assert pending.code == 3 and measured in pending.json["error"]
    cli.ok("measure", OP, measured)
    typed = cli.ok("candidate", OP, "--config", '{"vec_tile_shape":[1,8,1,16]}',
                   "--prior", "test")["attempt"]  # fmt: skip
    # Under a declared verifier a typed time is refused outright (issue 27.1), so no typed-in
    # attempt can become evidence here; one that is still pending is refused as above.
    typed_time = cli("verify", OP, typed, "--output", "y=true", "--layout-exit", "0",
                     "--time", "900us")  # fmt: skip
    assert typed_time.code == 3 and "provenance reported" in typed_time.json["error"]
    reported = cli("relax", OP, "--what", "vec", "--limit", "128", "--basis", "b",
                   "--evidence", typed)  # fmt: skip
    assert reported.code == 3 and typed in reported.json["error"]
    cli.ok("abandon", OP, typed, "--reason", "typed times are refused under the verifier")

    out = cli.ok("relax", OP, "--what", "vec", "--limit", "128", "--basis",
                 "tile 32 -> 64 cut the time in half", "--evidence", measured[:6])  # fmt: skip
    assert out["evidence"] == [measured]
    event = cli.events()[-1]
    assert event["payload"]["evidence"] == [measured] and event["payload"]["person"] is None
    sheet = _memory(cli).split("<!-- tune-ledger:begin target-sheet -->")[1]
    row = next(line for line in sheet.splitlines() if "tile 32 -> 64" in line)
    # The stand-in verifier's time for [1,8,1,32]: 40960 / 256 + 1 = 161 µs.
    assert f"`{measured[:12]}` 161.00 µs" in row
    assert "Person decisions" not in _memory(cli)


def test_a_person_may_relax_without_evidence_and_is_named(cli: Cli) -> None:
    """--person relaxes without evidence: recorded with the name, listed as a person's
    decision at the top of MEMORY.md and on the target sheet."""
    frontend(cli)
    cli.ok("relax", OP, "--what", "vec", "--limit", "128", "--basis", "the vendor says so",
           "--person", "Grace")  # fmt: skip
    assert cli.events()[-1]["payload"]["person"] == "Grace"
    memory = _memory(cli)
    assert "without measured evidence: Grace, because the vendor says so" in memory
    assert "none: decided by Grace" in memory


# --- item 3: agent-setup's permission rules -----------------------------------------------------


def test_agent_setup_merges_permission_rules_into_the_clients_settings(tmp_path: Path) -> None:
    """Claude Code: permissions.deny gains the rules, every other key of an existing
    .claude/settings.json is kept, and a second run changes nothing; opencode: the
    permission table denies editing the ledger and MEMORY.md and a person's commands."""
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    permissions = {"deny": ["Bash(rm *)"], "allow": ["Bash(ls)"]}
    settings.write_text(json.dumps({"model": "m", "permissions": permissions}))
    args = ["--root", str(tmp_path), "--json", "agent-setup", "--client"]
    cli = Cli(tmp_path)
    assert cli.ok(*args[3:], "claude")["written"]
    merged = json.loads(settings.read_text())
    assert merged["model"] == "m" and merged["permissions"]["allow"] == ["Bash(ls)"]
    deny = merged["permissions"]["deny"]
    assert deny[0] == "Bash(rm *)"
    assert {"Edit(/custom/**/events.jsonl)", "Edit(/custom/**/MEMORY.md)"} <= set(deny)
    assert {"Bash(*--person*)", "Bash(*accept-rollback*)", "Bash(*resume-campaign*)"} <= set(deny)
    assert ".claude/settings.json" in cli.ok(*args[3:], "claude")["unchanged"]
    cli.ok(*args[3:], "opencode")
    config = json.loads((tmp_path / "opencode.json").read_text())
    assert config["mcp"]["tune-ledger"]["command"][-1] == "mcp"
    assert config["permission"]["edit"] == {
        "custom/*/events.jsonl": "deny",
        "custom/*/MEMORY.md": "deny",
    }
    assert config["permission"]["bash"]["*--person*"] == "deny"


def test_agent_setup_refuses_a_settings_file_that_is_not_a_json_object(tmp_path: Path) -> None:
    """A .claude/settings.json it cannot merge into: exit 2, nothing written."""
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("[1, 2]\n")
    cli = Cli(tmp_path)
    refused = cli("agent-setup", "--client", "claude")
    assert refused.code == 2 and "not a JSON object" in refused.json["error"]
    assert settings.read_text() == "[1, 2]\n"
    assert not (tmp_path / ".mcp.json").exists()


def test_the_api_cannot_append_a_step_decided_by_old_rules(cli: Cli) -> None:
    """`legacy` is audit's way to re-decide a pre-issue-27 event; the API refuses to append a
    command that sets it (exit 2), so it is no way around naming a person."""
    from ledger.errors import BadInput
    from ledger.shell.api import OpLedger
    from stages import commands as cmd

    new_op(cli)
    before = snapshot(cli.root)
    lowered = cmd.SetPolicy(key="require_measured", value=False, reason="r", legacy=True)
    with pytest.raises(BadInput, match="legacy"):
        OpLedger(cli.root, OP).execute(lowered)
    assert snapshot(cli.root) == before
