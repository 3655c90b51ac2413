"""People and agents are different callers (DESIGN §3.3): lowering a guard is a person's
decision, made by name and with a reason through the CLI; an agent (MCP, or the CLI without
`--person`) is refused with the exact command a person runs.

The decisions a person may take: a policy change that lowers a guard (`require_measured` off,
a looser noise threshold or bootstrap confidence: `stages.policy.loosens`), `accept-rollback`,
`resume-campaign`, and a relaxation that skips measured evidence (R3). `person_decisions`
lists every one recorded, those written before issue 27 with the person unknown.
"""

from __future__ import annotations

import shlex
from typing import Any

import attrs

from ledger.domain.state import PersonAct, State
from ledger.errors import BadInput
from ledger.log import codec
from stages.outcome import refuse
from stages.policy import DEFAULT_POLICY, REQUIRE_MEASURED, loosens
from stages.refusal import Refusal

# The placeholders of the command a refusal names: the person fills them in.
_SIGNED = "--person NAME --reason TEXT"


def person_name(person: str | None) -> str | None:
    """`person` stripped (None stays None); BadInput for a blank or multi-line name."""
    if person is None:
        return None
    name = person.strip()
    if not name or "\n" in name or "\r" in name:
        raise BadInput(
            f"--person must name the person on one line, got {person!r}",
            hint="e.g. --person 'Ada Lovelace'",
        )
    return name


def person_refusal(rule: str, what: str, command: list[str]) -> Refusal:
    """The refusal of a guard lowered without a person: names the guard's rule, says whose
    decision it is, and gives the exact CLI command a person runs (the MCP server has none)."""
    line = " ".join(["tune-ledger", *(shlex.quote(word) for word in command), _SIGNED])
    return refuse(
        rule,
        f"{what} lowers a guard: a person's decision, made by name with a reason through the "
        "CLI; an agent (the MCP server, or the CLI without --person) cannot make it",
        "no --person was given",
        f"ask a person to decide; they run: {line}",
    )


def needs_reason(reason: str, what: str) -> None:
    """BadInput when a person's decision comes without a reason."""
    if not reason.strip():
        raise BadInput(
            f"{what} is a person's decision: give --reason TEXT (why), recorded with the name",
        )


def policy_before(state: State, key: str) -> Any:
    """The value of policy `key` in force before a change (require_measured: "auto" unset)."""
    if key in state.policy:
        return state.policy[key]
    return DEFAULT_POLICY.get(key, "auto" if key == REQUIRE_MEASURED else None)


def person_decisions(state: State) -> list[PersonAct]:
    """Every person's decision the ledger holds, in ledger order: policy changes that lowered
    a guard, relaxations without evidence, resumed stops and accepted rollbacks; a policy
    change's `what` names the values before and after (person None: unknown, recorded before
    issue 27)."""
    return [_decision(act) for act in state.person_acts if _is_decision(act)]


def _is_decision(act: PersonAct) -> bool:
    if act.kind != "policy":
        return True
    return act.person is not None or loosens(act.key or "", act.before, act.value)


def _decision(act: PersonAct) -> PersonAct:
    if act.kind != "policy":
        return act
    before, after = codec.canonical_json(act.before), codec.canonical_json(act.value)
    return attrs.evolve(act, what=f"policy {act.key} {before} -> {after}")


def person_label(person: str | None) -> str:
    """A person's name as the views print it; "person unknown" for decisions recorded before
    persons were (issue 27)."""
    return person if person is not None else "person unknown (recorded before issue 27)"
