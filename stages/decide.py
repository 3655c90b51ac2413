"""`decide(state, command)`: the stop and activation gates, then the concern's decider."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from ledger.domain.hints import TEXT, Fill, Step
from ledger.domain.state import State
from ledger.errors import BadInput
from ledger.log import codec
from ledger.schema.events import (
    ManifestRecorded,
    NoteAdded,
    OpInitialized,
    PolicySet,
    ReportGenerated,
)
from stages import activation, pipeline, remeasure, search, skills, stop, target, verdict
from stages import commands as cmd
from stages.allowed import allowed
from stages.conflicts import RULES, conflicts
from stages.outcome import Decision, Result, accept, build, nonempty, plain, refuse
from stages.person import needs_reason, person_name, person_refusal, policy_before
from stages.policy import DEFAULT_POLICY, DEFAULTS_KEY, GUARD_RULES, check_policy_value, loosens
from stages.refusal import Refusal

# Bookkeeping: allowed at any time once the op exists, also after a stop (R10).
_BOOKKEEPING = (cmd.AddNote, cmd.SetPolicy, cmd.RecordReport, cmd.RecordManifest)
# Steps that finish an attempt already in flight: allowed while a merge conflict is open, so
# work done on either branch can still be measured and recorded.
_FINISHING = (cmd.Verify, cmd.Fail, cmd.Abandon)
# The steps that end or lift a stop: the stop gate cannot apply to them (R10).
_AFTER_STOP = (cmd.HandBack, cmd.ResumeCampaign)
# The steps that reach activation, so the R1 gate cannot apply to them.
_ACTIVATION_STEPS = (cmd.RecordCompare, cmd.RecordLayout, cmd.Activate)

_PINNED = "the defaults in force when the op was created, pinned so decisions replay unchanged"


def _init(state: State, command: cmd.Init) -> Result:
    if state.op is not None:
        raise BadInput(f"op {state.op} already has a ledger")
    op = nonempty(command.op, "the op name")
    # The whole default policy goes into the ledger: later changes to the defaults in the code
    # must not change how this op's past decisions replay.
    return accept(
        OpInitialized(op=op),
        PolicySet(key=DEFAULTS_KEY, value=dict(DEFAULT_POLICY), reason=_PINNED),
    )


def _set_policy(state: State, command: cmd.SetPolicy) -> Result:
    if command.key == DEFAULTS_KEY:
        raise BadInput(f"policy key {DEFAULTS_KEY!r} is written by init only")
    value = plain(command.value, f"policy {command.key}")
    check_policy_value(state, command.key, value)
    person = person_name(command.person)
    if loosens(command.key, policy_before(state, command.key), value) and not command.legacy:
        # Lowering a guard is a person's decision, by name and with a reason (DESIGN §3.3).
        text = codec.canonical_json(value)
        if person is None:
            return person_refusal(
                GUARD_RULES[command.key],
                f"policy {command.key} {text}",
                ["policy", state.op or "OP", command.key, text],
            )
        needs_reason(command.reason, f"policy {command.key} {text}")
    return accept(PolicySet(key=command.key, value=value, reason=command.reason, person=person))


def _note(_state: State, command: cmd.AddNote) -> Result:
    return accept(build(NoteAdded, "note", text=command.text))


def _report(_state: State, command: cmd.RecordReport) -> Result:
    path = nonempty(command.path, "the report path")
    digest = nonempty(command.digest, "the report digest")
    return accept(ReportGenerated(path=path, digest=digest))


def _manifest(state: State, command: cmd.RecordManifest) -> Result:
    if state.manifest is not None and state.manifest.digest == command.digest:
        raise BadInput(
            f"the manifest {command.digest} is already the one in use",
            hint="change SPEC.md's front matter first; `status` shows the manifest in use",
        )
    declared = plain(command.declared, "the manifest")
    return accept(
        build(
            ManifestRecorded,
            "manifest",
            digest=nonempty(command.digest, "the manifest digest"),
            source=nonempty(command.source, "the manifest's file"),
            declared=declared,
            measured_only=bool(command.measured_only),
        )
    )


_DECIDERS: Mapping[type[Any], Callable[[State, Any], Result]] = {
    cmd.RecordCompare: activation.decide_compare,
    cmd.RecordLayout: activation.decide_layout,
    cmd.Activate: activation.decide_activate,
    cmd.SetTarget: target.decide_target,
    cmd.Relax: target.decide_relax,
    cmd.LoadSkill: skills.decide_load,
    cmd.UnloadSkill: skills.decide_unload,
    cmd.EnterStage: pipeline.decide_enter,
    cmd.ExitStage: pipeline.decide_exit,
    cmd.OpenPoint: search.decide_open,
    cmd.ClosePoint: search.decide_close,
    cmd.ProposeCandidate: search.decide_candidate,
    cmd.TryMutation: search.decide_mutation,
    cmd.TryAlgorithm: search.decide_algorithm,
    cmd.Verify: verdict.decide_verify,
    cmd.Fail: verdict.decide_fail,
    cmd.Abandon: verdict.decide_abandon,
    cmd.Stop: stop.decide_stop,
    cmd.HandBack: stop.decide_handback,
    cmd.ResumeCampaign: stop.decide_resume,
    cmd.RecordReport: _report,
    cmd.SetPolicy: _set_policy,
    cmd.AddNote: _note,
    cmd.RecordManifest: _manifest,
}


def _remeasure(state: State, command: Any) -> Result:
    return remeasure.decide_remeasure(state, command)


def _device_remeasure(state: State, command: Any) -> Result:
    return remeasure.decide_device_remeasure(state, command)


def _conflict_gate(state: State) -> Refusal | None:
    """Refuse tuning steps while a merge left the protocol in conflict (DESIGN §8)."""
    found = conflicts(state)
    if not found:
        return None
    first = found[0]
    blocking = f"conflict {first.id} ({RULES[first.kind]})"
    remeasuring = remeasure.next_step(state)
    if remeasuring is not None and len(found) == 1:
        return refuse(
            "merge", "the two bests of a merge are being re-measured", blocking, remeasuring
        )
    return refuse(
        "merge",
        "a merge of branches left the campaign in conflict",
        blocking,
        f"list them with {Step('conflicts', state.op)}, then record a decision with "
        f"{Step('resolve', state.op, conflict=Fill('ID'), resolution=Fill('R'), reason=TEXT)}",
    )


def decide(state: State, command: cmd.Command) -> Decision | Refusal:
    """The events `command` appends on `state`, or the Refusal naming the rule that forbids it.

    Raises BadInput (exit 2) for malformed values: an unknown skill, stage, attempt, policy key
    or failure category, a malformed config, a value that is not plain JSON.
    """
    result = _decide(state, command)
    if isinstance(result, Refusal):
        return attrs.evolve(result, allowed=tuple(allowed(state)))
    return result


def _decide(state: State, command: cmd.Command) -> Result:
    if isinstance(command, cmd.Init):
        return _init(state, command)
    if state.op is None:
        raise BadInput("the op has no ledger yet", hint=str(Step("init", Fill("OP"))))
    decider: Callable[[State, Any], Result] | None = _DECIDERS.get(type(command))
    if decider is None:
        raise BadInput(f"unknown command {type(command).__name__}")
    # "re-measure both" (DESIGN §8): measuring a competing best again is how that conflict
    # closes, so it passes the merge gate.
    remeasuring = isinstance(command, cmd.ProposeCandidate) and (
        remeasure.target_of(state, command.config) is not None
    )
    if remeasuring:
        decider = _remeasure
    elif isinstance(command, cmd.ProposeCandidate) and remeasure.is_device_remeasure(
        state, command
    ):
        decider = _device_remeasure
    if not isinstance(command, _BOOKKEEPING):
        gate = None if isinstance(command, _AFTER_STOP) else stop.stopped_refusal(state)
        if gate is None and not isinstance(command, _ACTIVATION_STEPS):
            gate = activation.activation_gate(state)
        if gate is None and not isinstance(command, _FINISHING) and not remeasuring:
            gate = _conflict_gate(state)
        if gate is not None:
            return gate
    return decider(state, command)
