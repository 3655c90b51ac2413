"""R1 Activation: evidence bound to the implementation digest gates every tuning step."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ledger.domain.hints import Step
from ledger.domain.state import Evidence, State
from ledger.schema.events import ActivationFailed, ActivationPassed, CompareEvidence, LayoutEvidence
from stages.outcome import Result, accept, build, nonempty, refuse
from stages.policy import measured_only
from stages.refusal import Refusal

if TYPE_CHECKING:  # annotations only: a read asks the blockers, not the commands
    from collections.abc import Callable

    from ledger.schema.events import Payload
    from stages.commands import Activate, RecordCompare, RecordLayout

_NEXT = (
    "hand back to pypto-op-orchestrator: fix accuracy, record passing evidence for the "
    "current implementation (evidence compare, evidence layout), then activate"
)


def _evidence_steps(state: State) -> str:
    """The three steps of R1, the evidence from SPEC.md's verifier when a manifest is recorded."""
    op, spec = state.op, True if state.manifest is not None else None
    return (
        f"{Step('evidence compare', op, from_spec=spec)}, "
        f"{Step('evidence layout', op, from_spec=spec)}, then {Step('activate', op)}"
    )


def _short(digest: str | None) -> str:
    return (digest or "-")[:12]


def _unmeasured_evidence(state: State, kind: str, level: str) -> Refusal | None:
    """Under require_measured, only evidence the ledger obtained by running the op's declared
    verifier or layout check may be recorded (R1, R11)."""
    if level == "measured" or not measured_only(state):
        return None
    how = "an ad-hoc --run command nobody declared" if level == "ran" else level
    return refuse(
        "R1",
        f"only measured evidence activates: this {kind} evidence is {how} (provenance {level})",
        "SPEC.md declares a verifier, so policy require_measured is on",
        "let the ledger run the op's own check: "
        f"{Step(f'evidence {kind}', state.op, from_spec=True)}",
    )


def decide_compare(state: State, command: RecordCompare) -> Result:
    """Record E2E tensor-compare evidence for an implementation digest (R1)."""
    return _evidence(
        state,
        command,
        "compare",
        CompareEvidence,
        "tensor-compare evidence",
        outputs=command.outputs,
    )


def decide_layout(state: State, command: RecordLayout) -> Result:
    """Record a layout check's exit code for an implementation digest (R1)."""
    return _evidence(
        state, command, "layout", LayoutEvidence, "layout evidence", exit_code=command.exit_code
    )


def _evidence(
    state: State,
    command: RecordCompare | RecordLayout,
    kind: str,
    factory: Callable[..., Payload],
    what: str,
    **fields: Any,
) -> Result:
    nonempty(command.impl_digest, "the implementation digest")
    refused = _unmeasured_evidence(state, kind, command.origin.level)
    if refused is not None:
        return refused
    return accept(
        build(
            factory,
            what,
            impl_path=command.impl_path,
            impl_digest=command.impl_digest,
            origin=command.origin,
            **fields,
        )
    )


def _problems(evidence: Evidence | None, digest: str, missing: str, name: str) -> list[str]:
    """Why one kind of evidence does not activate `digest`: missing, stale, or failed (R1)."""
    if evidence is None:
        return [f"no {missing} evidence is recorded"]
    if evidence.impl_digest != digest:
        return [
            f"the {name} evidence checked another implementation "
            f"({_short(evidence.impl_digest)}, current {_short(digest)}): stale"
        ]
    failing = [str(o["name"]) for o in evidence.outputs if not o["all_close"]]
    if failing:
        return [f"outputs not all_close: {', '.join(failing)}"]
    if evidence.exit_code not in (None, 0):
        return [f"the layout check exited {evidence.exit_code}, not 0"]
    return []


def activation_problems(state: State, digest: str) -> list[str]:
    """What keeps the latest evidence from activating implementation `digest` (R1); under
    require_measured, evidence the ledger did not measure itself (recorded before the
    manifest was) does not count."""
    problems = [
        *_problems(state.compare, digest, "E2E tensor-compare", "tensor-compare"),
        *_problems(state.layout, digest, "layout-check", "layout"),
    ]
    if measured_only(state):
        for kind, evidence in (("compare", state.compare), ("layout", state.layout)):
            if evidence is not None and evidence.origin_level != "measured":
                problems.append(
                    f"the {kind} evidence is {evidence.origin_level}, not measured: record it "
                    f"with {Step(f'evidence {kind}', state.op, from_spec=True)}"
                )
    return problems


def evidence_ready(state: State) -> bool:
    """True when the latest evidence of both kinds passes for one implementation (R1)."""
    compare, layout = state.compare, state.layout
    return (
        compare is not None
        and layout is not None
        and compare.passed
        and layout.passed
        and compare.impl_digest == layout.impl_digest
    )


def decide_activate(state: State, command: Activate) -> Result:
    """Pass activation, or record the failed check and hand back to the orchestrator (R1)."""
    digest = nonempty(command.impl_digest, "the implementation digest")
    problems = activation_problems(state, digest)
    compare, layout = state.compare, state.layout
    if problems or compare is None or layout is None:
        failed = ActivationFailed(impl_digest=digest, problems=tuple(problems))
        return Refusal(
            rule="R1",
            message="activation failed: " + "; ".join(problems),
            blocking="; ".join(problems),
            next_step=_NEXT,
            kind="hand-back",
            events=(failed,),
        )
    return accept(
        ActivationPassed(impl_digest=digest, compare_event=compare.event, layout_event=layout.event)
    )


def activation_gate(state: State) -> Refusal | None:
    """Refuse a tuning step while activation has not passed (R1)."""
    if state.activated:
        return None
    if state.handed_back:
        blocking = "activation failed: " + "; ".join(state.activation_problems)
    else:
        blocking = "activation has not passed yet"
    return refuse(
        "R1",
        "tuning is not activated: nothing else may happen until activation passes",
        blocking,
        _gate_next(state),
    )


def _gate_next(state: State) -> str:
    """The true next step before activation: activate when both pieces of evidence pass
    for one implementation, else record them (R1); a failed activation hands back."""
    if evidence_ready(state):
        assert state.compare is not None  # evidence_ready checked it
        return (
            f"both pieces of evidence pass for implementation {_short(state.compare.impl_digest)}: "
            f"{Step('activate', state.op)}"
        )
    if state.handed_back:
        return _NEXT
    return "record passing evidence for the current implementation: " + _evidence_steps(state)
