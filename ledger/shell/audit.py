"""Audit: integrity of the chain, schema, legality of every step, verdicts re-derived, MEMORY.md.

Legality is checked by turning every recorded batch back into the command that produced it,
deciding that command on the state replayed so far, and comparing the events the rules give
with the events recorded. A verdict that differs from what its recorded data and policy give,
a step the rules refuse, or an edited event all become findings with line and event id.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from attrs import frozen

from ledger.domain.replay import evolve, replay
from ledger.domain.state import State
from ledger.errors import LedgerError
from ledger.git import merge
from ledger.log import codec, integrity
from ledger.log.file_store import chain_findings
from ledger.log.record import Event, unstructure_payload
from ledger.projections import conflicts as conflict_view
from ledger.projections import memory_file, splice
from ledger.projections.person_decisions import person_lines
from ledger.schema import events as ev
from ledger.schema.vocabulary import ORIGIN_LEVELS
from ledger.shell import audit_trust as trust
from ledger.shell import rollback
from ledger.shell.audit_commands import COMMAND_OF, NOT_DECIDED
from stages.policy import lowered_guards

if TYPE_CHECKING:
    from ledger.shell.api import Loaded, OpLedger


def batches(events: Sequence[Event]) -> Iterator[tuple[int, list[Event]]]:
    """Group events into the batches that appended them: (index of the first, events)."""
    open_batches: dict[str, tuple[int, list[Event]]] = {}
    for index, event in enumerate(events):
        i, n = event.part
        if i == 0:
            group = (index, [event])
        else:
            group = open_batches.pop(event.parents[0])
            group[1].append(event)
        if i == n - 1:
            yield group
        else:
            open_batches[event.id] = group


def legality_findings(events: Sequence[Event], lines: Sequence[int] | None = None) -> list[str]:
    """Replay every batch through the stage machines; report steps the rules would not give.

    Each batch is decided on the state of the events it follows (its causal past): on merged
    branches, each side's steps were decided without the other's, and what breaks a rule
    only in combination is a conflict (stages/conflicts.py), not a finding.
    """
    from stages import resolve
    from stages.decide import decide
    from stages.refusal import Refusal

    findings: list[str] = []
    causal = merge.CausalReplay(events)
    for index, batch in batches(events):
        state = causal.before(batch)
        first = batch[0]
        where = f"line {lines[index] if lines else index + 1} ({first.id[:12]} {first.type})"
        if resolve.is_resolution(batch):
            findings.extend(f"{where}: {f}" for f in resolve.resolution_findings(state, batch))
        elif first.type not in NOT_DECIDED:
            findings.extend(_check_batch(state, batch, where, decide, Refusal))
        for event in batch:
            try:
                evolve(state, event)
            except (KeyError, TypeError, ValueError) as e:
                findings.append(f"{where}: cannot replay: {e}")
        causal.after(batch, state)
    return findings


def _check_batch(
    state: State, batch: list[Event], where: str, decide: Any, refusal_type: Any
) -> list[str]:
    try:
        command = COMMAND_OF[batch[0].type](batch[0].data)
    except (KeyError, TypeError, ValueError) as e:
        return [f"{where}: recorded data does not form a command: {e}"]
    try:
        decision = decide(state, command)
    except LedgerError as e:
        return [f"{where}: the rules refuse this step: {e.message}"]
    if isinstance(decision, refusal_type):
        if decision.kind == "hand-back" and decision.events:
            expected = decision.events
        else:
            return [f"{where}: the rules refuse this step ({decision.rule}): {decision.message}"]
    else:
        expected = decision.events
    given = [(e.type, e.data) for e in batch]
    wanted = [(p.TYPE, _plain(unstructure_payload(p))) for p in expected]
    if batch[0].type == "op.initialized":
        # The defaults pinned at init are data: later releases may ship other defaults, and
        # the op keeps deciding with the ones it recorded.
        given, wanted = given[:1], wanted[:1]
    if given != wanted:
        return [f"{where}: recorded {_summary(given)} but the rules give {_summary(wanted)}"]
    return []


def _plain(data: dict[str, Any]) -> Any:
    # Recorded data went through JSON: compare like with like (tuples become lists).
    return codec.loads(codec.canonical_json(data))


def _summary(events: list[tuple[str, Any]]) -> str:
    parts = []
    for type_name, data in events:
        if type_name == "attempt.verdict":
            parts.append(f"verdict {data.get('verdict')} (failure {data.get('failure')})")
        else:
            parts.append(type_name)
    return "[" + ", ".join(parts) + "]"


def schema_findings(events: Sequence[Event], lines: Sequence[int] | None = None) -> list[str]:
    """Structure every payload with the current schema; report those that do not fit."""
    types = {event.id: event.type for event in events}
    findings = []
    for found in integrity.schema_findings(events, lines):
        event_id = str(found.event_id)  # a schema finding always names its event
        findings.append(f"line {found.line} ({event_id[:12]} {types[event_id]}): {found.message}")
    return findings


def ownership_findings(events: Sequence[Event], op: str) -> list[str]:
    """Every event belongs to the op of its folder: one genesis, the `op.initialized` of `op`,
    that every other event follows (a union with another op's ledger has two)."""
    findings = []
    for line, event in enumerate(events, start=1):
        where = f"line {line} ({event.id[:12]} {event.type})"
        if event.type == ev.OpInitialized.TYPE and event.data.get("op") != op:
            findings.append(
                f"{where}: initializes op {event.data.get('op')!r}, not {op!r}: this ledger "
                "holds another op's events; restore it from git before the merge that mixed them"
            )
        elif event.type == ev.OpInitialized.TYPE and line > 1:
            findings.append(f"{where}: a second op.initialized; the op was created twice")
        elif not event.parents and line > 1:
            findings.append(f"{where}: starts a second history in the ledger (no parents)")
    return findings


def provenance_summary(events: Sequence[Event]) -> dict[str, int]:
    """How many measurements and evidence were run by the ledger, parsed, or only reported."""
    counts: Counter[str] = Counter()
    for event in events:
        origin = (
            event.data.get("origin")
            if event.type
            in ("attempt.measured", "evidence.compare", "evidence.layout", "target.set")
            else None
        )
        if origin:
            counts[origin["level"]] += 1
    return {level: counts.get(level, 0) for level in ORIGIN_LEVELS}


def check_memory_file(ledger: OpLedger, loaded: Loaded | None = None) -> list[str]:
    """Findings about MEMORY.md: missing, stale, or hand-edited managed sections."""
    if loaded is None:
        loaded = ledger.load()
    if not ledger.memory_path.exists():
        return [f"{ledger.memory_path}: missing; run `tune-ledger render {ledger.op}`"]
    text = splice.read_text(ledger.memory_path) or ""
    state = loaded.state
    position = state.position
    findings = memory_file.check_memory(text, position)
    # Named first: the stale finding alone would send a reader to `render`, which is refused.
    found = rollback.find(ledger.store, ledger.memory_path, state)
    if found is not None:
        findings.insert(0, rollback.warning(found, ledger.op))
    return [f"{ledger.memory_path}: {f}" for f in findings]


@frozen
class Audited:
    """One op's audit: the report `audit` prints, and the state it replayed (None, with the
    error, when the ledger could not be read), so a view of it shows the audit's numbers."""

    report: dict[str, Any]
    state: State | None
    error: LedgerError | None = None


def audit_op(ledger: OpLedger) -> dict[str, Any]:
    """Every audit check of one op; `findings` is empty when the op is clean."""
    return audited(ledger).report


def audited(ledger: OpLedger) -> Audited:
    """Every audit check of one op, with the state replayed from the events it checked."""
    path = ledger.path
    try:
        integrity = chain_findings(path)
        ledger.require()
        log = ledger.store.read()  # audit needs every event, not only the replayed state
    except LedgerError as e:
        report = {"op": ledger.op, "findings": [e.message], "provenance": {}, "events": 0}
        return Audited(report=report, state=None, error=e)
    from ledger.shell.api import Loaded

    events = log.events
    state = replay(events)
    loaded = Loaded(position=log.position(), state=state)
    lines = list(range(1, len(events) + 1))
    findings = [f"{path}:{f}" for f in integrity]
    findings += [f"{path}:{f}" for f in schema_findings(events, lines)]
    findings += [f"{path}:{f}" for f in ownership_findings(events, ledger.op)]
    findings += [f"{path}:{f}" for f in legality_findings(events, lines)]
    findings += merge.order_findings(ledger.file_store, ledger.op)
    findings += check_memory_file(ledger, loaded)
    from ledger.shell import kernels  # the kept kernels, each against its name (issue 27.6)

    findings += kernels.stored_findings(ledger)
    report = {
        "op": ledger.op,
        "events": len(events),
        "findings": findings,
        # Each guard a person lowered, by name and reason, first (DESIGN §3.3).
        "person_decisions": [line.removeprefix("- ") for line in person_lines(state)],
        "provenance": provenance_summary(events),
        "overrides": [{"attempt": a, "reason": r} for a, r in state.overrides],
        "repairs": list(state.repairs),
        "conflicts": conflict_view.texts(state),
        # Each open conflict with what closes it: no finding (every step is legal), yet the
        # campaign cannot go on until it is resolved, so `audit` fails on it like `check`.
        "unresolved": conflict_view.findings(state),
        "reported_decisions": trust.reported_decisions(events),
        "unbound": trust.unbound_measurements(events),
        "cache_hits": trust.cache_hits(events),
        "manifests": trust.manifests(events),
        "decisions": trust.campaign_decisions(events),
        # What `audit --strict` fails on (exit 9): decisions resting on values not measured
        # with the declared verifier, and each guard lowered (stages/policy.py).
        "strict": [
            *trust.unmeasured_activations(events),
            *trust.unmeasured_decisions(events),
            *lowered_guards(state),
        ],
    }
    return Audited(report=report, state=state)
