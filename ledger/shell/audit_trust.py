"""What audit says about trust (R11): decisions resting on reported values, measurements that
name nothing they ran, and the manifests a campaign used.

A decision "rests on reported values" when the verdict's own times or the best it was compared
with were typed in by the caller rather than measured or parsed from an artefact. A stop for
target-reached or utilization rests on the adopt that triggered it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ledger.domain.keys import attempt_id
from ledger.log.record import Event
from ledger.schema.vocabulary import ADOPTED


def reported_decisions(events: Sequence[Event]) -> list[str]:
    """Each adopt, target-reached and stop that rests on reported values, in ledger order."""
    return _decisions_resting_on(events, ("reported",), "reported values")


def unmeasured_decisions(events: Sequence[Event]) -> list[str]:
    """Each adopt, target-reached and stop that rests on values the ledger did not measure
    with the op's declared verifier (any level but `measured`), in ledger order: what
    `audit --strict` fails on (issue 27)."""
    levels = ("unbound", "ran", "artefact", "reported")
    return _decisions_resting_on(events, levels, "values not measured")


def unmeasured_activations(events: Sequence[Event]) -> list[str]:
    """Each activation that rests on evidence the ledger did not obtain by running the op's
    declared verifier and layout check (an `evidence --run "echo ..."` activates an op without
    a manifest): what `audit --strict` fails on beside the decisions (issue 27)."""
    level: dict[str, str] = {}  # evidence event id -> origin level
    found = []
    for event in events:
        if event.type in ("evidence.compare", "evidence.layout"):
            level[event.id] = event.data["origin"]["level"]
        elif event.type == "activation.passed":
            data = event.data
            weak = [
                f"{kind}: {level.get(data[key], '?')}"
                for kind, key in (("compare", "compare_event"), ("layout", "layout_event"))
                if level.get(data[key]) != "measured"
            ]
            if weak:
                found.append(
                    f"activation of implementation {data['impl_digest'][:12]} rests on "
                    f"evidence not measured ({'; '.join(weak)})"
                )
    return found


def _decisions_resting_on(events: Sequence[Event], weak: Sequence[str], what: str) -> list[str]:
    level: dict[str | None, str] = {}  # attempt id (None: the baseline) -> origin level
    last_adopted: tuple[str, bool] | None = None  # (attempt, rests on reported)
    found: list[str] = []
    for event in events:
        data = event.data
        if event.type == "target.set":
            level[None] = data["origin"]["level"]
        elif event.type == "attempt.measured":
            level[data["attempt"]] = data["origin"]["level"]
        elif event.type == "attempt.verdict" and data["verdict"] in ADOPTED:
            attempt = data["attempt"]
            parts = []
            if level.get(attempt) in weak:
                parts.append(_named("its times", level.get(attempt), what))
            best = data.get("best_attempt")
            if level.get(best) in weak:
                which = "the baseline" if best is None else f"best {best}"
                parts.append(_named(which, level.get(best), what))
            if parts:
                found.append(
                    f"attempt {attempt}: {data['verdict']} rests on {what} ({'; '.join(parts)})"
                )
            last_adopted = (attempt, bool(parts))
        elif (
            event.type == "campaign.stopped"
            and data["reason"] != "user"
            and last_adopted is not None
            and last_adopted[1]
        ):
            found.append(f"stop {data['reason']} rests on {what} (attempt {last_adopted[0]})")
    return found


def _named(part: str, level: str | None, what: str) -> str:
    """`part`, with its provenance level when the finding is about any unmeasured level."""
    return part if what == "reported values" else f"{part}: {level}"


def unbound_measurements(events: Sequence[Event]) -> list[str]:
    """Attempts measured by a verifier the ledger ran whose result named nothing it ran."""
    return [
        event.data["attempt"]
        for event in events
        if event.type == "attempt.measured" and event.data["origin"]["level"] == "unbound"
    ]


def cache_hits(events: Sequence[Event]) -> list[str]:
    """Each measurement or evidence recorded from the measurement cache: still run by a
    verifier (its level counts as such), but earlier, at the time and on the host named."""
    found = []
    for event in events:
        origin = event.data.get("origin")
        if not isinstance(origin, dict) or not isinstance(origin.get("cached"), dict):
            continue
        cached = origin["cached"]
        what = event.data.get("attempt") or event.type
        found.append(
            f"{what}: {origin['level']} from the measurement cache (entry {cached['key'][:12]}, "
            f"run at {cached['at']} on {cached['host']})"
        )
    return found


def manifests(events: Sequence[Event]) -> list[dict[str, Any]]:
    """The manifests recorded, in order (more than one: SPEC.md changed mid-campaign)."""
    return [
        {"digest": e.data["digest"], "event": attempt_id(e.id), "source": e.data["source"]}
        for e in events
        if e.type == "manifest.recorded"
    ]


def campaign_decisions(events: Sequence[Event]) -> list[str]:
    """The person's and agent's decisions about a stopped campaign (R10): each stop lifted
    (utilization or budget), with its reason, and each hand-back to the orchestrator, in
    ledger order."""
    found = []
    stopped = "utilization"  # the only stop lifted before budgets (issue 29)
    for event in events:
        data = event.data
        if event.type == "campaign.stopped":
            stopped = str(data["reason"])
        elif event.type == "campaign.resumed":
            who = data.get("person") or "a person unknown (recorded before issue 27)"
            found.append(
                f"{stopped} stop lifted by {who} ({attempt_id(event.id)}): {data['reason']}"
                f" (the stop: {data['lifted'] or 'no detail recorded'})"
            )
        elif event.type == "campaign.handed_back":
            summary = f": {data['summary']}" if data["summary"] else ""
            found.append(
                f"handed back to the orchestrator after the {data['stop']} stop with "
                f"{data['report']}{summary}"
            )
    return found
