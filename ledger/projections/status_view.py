"""`status`: where a campaign stands, as JSON (DESIGN §5 keys and a few more) and for humans."""

from __future__ import annotations

import math
from typing import Any

from ledger.domain.hints import Fill, Step, arg
from ledger.domain.state import Attempt, State
from ledger.log.codec import canonical_json
from ledger.projections import campaign_end
from ledger.projections.attempt_markdown import recent_points
from ledger.projections.attempt_rows import attempt_row
from ledger.projections.formatting import fmt_time_us, legend_lines, reported_mark

# How many points `status` lists: the current stage's most recent ones (and the open one).
STATUS_POINTS = 20


def _best(state: State) -> dict[str, Any] | None:
    if state.best is None:
        return None
    return {
        "config": state.best.config,
        "time_us": state.best.time_us,
        "attempt": state.best.attempt,
        "util_pct": state.best.measurement.util_pct,
        "bubble_pct": state.best.measurement.bubble_pct,
        "provenance": state.best.measurement.origin_level,
    }


def status(state: State) -> dict[str, Any]:
    """The `status --json` object (DESIGN §5 keys and a few more), in time that does not grow
    with the ledger on a warm state (the points listed are bounded, the alternates indexed)."""
    from ledger.projections.conflicts import texts as conflict_texts
    from stages.allowed import allowed
    from stages.alternates import alternates
    from stages.policy import measured_only, policy_overrides

    sheet = state.target
    return {
        "op": state.op,
        "activated": state.activated,
        # R1's hand-back (activation failed), apart from a campaign's end (`campaign_end`)
        "activation_handed_back": state.handed_back,
        "target_sheet": sheet is not None,
        "baseline_us": sheet.baseline_us if sheet else None,
        "target_us": sheet.target_us if sheet else None,
        "required_speedup": sheet.required_speedup if sheet else None,
        # Who vouches for each number (issue 27): the sheet's baseline, the evidence.
        "baseline_provenance": sheet.origin_level if sheet else None,
        "evidence_provenance": {
            kind: evidence.origin_level
            for kind, evidence in (("compare", state.compare), ("layout", state.layout))
            if evidence is not None
        },
        "stage": state.stage,
        "stages_exited": dict(state.exited),
        "skills": list(state.skills),
        "pending": state.pending,
        "pending_config": state.attempts[state.pending].config if state.pending else None,
        "next_command": measure_command(state, state.attempts[state.pending])
        if state.pending
        else None,
        "best": _best(state),
        "alternates": [attempt_row(state.attempts[a]) for a in alternates(state)],
        "open_point": state.open_point,
        # Bounded as MEMORY.md's table is: an agent reads this after every step, and a
        # campaign opens points without end (`log` and the report list them all).
        "points": [
            {
                "name": p.name,
                "stage": p.stage,
                "open": p.is_open,
                "outcome": p.outcome,
                "streak": p.streak,
                "candidates": p.candidates,
                "mutations": p.mutations,
            }
            for p in recent_points(state, STATUS_POINTS)
        ],
        "points_total": len(state.points),
        "attempts": len(state.attempts),
        "stopped": state.stopped,
        "conflicts": conflict_texts(state),
        "events": state.event_count,
        "allowed": allowed(state),
        "policy_overrides": policy_overrides(state),
        "manifest": {
            "digest": state.manifest.digest,
            "knobs": sorted(state.manifest.knobs),
            "verifier": state.manifest.has_verifier,
            "measured_only": measured_only(state),
        }
        if state.manifest
        else None,
        "manifests_recorded": len(state.manifests),
        "campaign_end": campaign_end.campaign_end(state),
        "impl_digest_expected": campaign_end.impl_expected(state),
    }


def status_text(data: dict[str, Any]) -> str:
    """`status` for humans."""
    best = data["best"]
    lines = [
        f"op {data['op']}: "
        + (
            "stopped (" + data["stopped"] + ")"
            if data["stopped"]
            else f"stage {data['stage'] or '-'}"
        ),
        f"  activated: {'yes' if data['activated'] else 'no'}"
        f"   target sheet: {'yes' if data['target_sheet'] else 'no'}",
        f"  baseline {fmt_time_us(data['baseline_us'])}"
        f"{reported_mark(data.get('baseline_provenance'))}"
        f"  target {fmt_time_us(data['target_us'])}"
        f"  best {_marked(best)}",
        f"  skills: {', '.join(data['skills']) or '-'}",
        f"  pending attempt: {data['pending'] or '-'}   open point: {data['open_point'] or '-'}",
    ]
    if data.get("pending"):
        lines.append(f"  pending config: {canonical_json(data['pending_config'])}")
        lines.append(f"  measure it: {data['next_command']}")
    lines.extend(campaign_end.end_lines(data))
    for conflict in data["conflicts"]:
        lines.append(f"  CONFLICT: {conflict}")
    lines.extend(_policy_and_manifest_lines(data))
    lines.append(f"  allowed next: {', '.join(data['allowed']) or '-'}")
    lines.extend(f"  {legend}" for legend in legend_lines(lines[2]))  # who vouches (R11)
    return "\n".join(lines)


def _marked(best: dict[str, Any] | None) -> str:
    """The best's time with its provenance mark, or `-`."""
    if not best:
        return "-"
    return fmt_time_us(best["time_us"]) + reported_mark(best.get("provenance"))


def _policy_and_manifest_lines(data: dict[str, Any]) -> list[str]:
    """The policies that differ from the pinned defaults, with their reasons (R10), and the
    manifest in use (R5: without one, knobs have no stages)."""
    lines = [
        f"  policy {o['key']} = {canonical_json(o['value'])} (default "
        f"{canonical_json(o['default'])}): {o['reason'] or 'no reason recorded'}"
        for o in data.get("policy_overrides", ())
    ]
    manifest = data.get("manifest")
    if manifest:
        lines.append(
            f"  manifest: {manifest['digest'][:12]} ({len(manifest['knobs'])} knobs, each "
            "bound to its stage)"
            + (
                "; only values measured by its verifier count"
                if manifest.get("measured_only")
                else ""
            )
        )
        changes = int(data.get("manifests_recorded") or 1) - 1
        if changes:
            lines.append(f"  manifest changed {changes} time(s) during the campaign (SPEC.md)")
    else:
        lines.append(
            f"  manifest: none recorded, so knobs have no stages and no defaults "
            f"(tune-ledger manifest {data['op']} records SPEC.md's)"
        )
    return lines


def measure_command(state: State, attempt: Attempt) -> str:
    """The exact command that measures a pending attempt: the ledger's own `measure` when the
    recorded manifest declares a verifier, else `verify` with the values to fill in (R11)."""
    from stages.policy import declares_verifier

    if declares_verifier(state):
        return str(Step("measure", state.op, attempt=attempt.id))
    by_hand = [arg("output", [Fill("NAME=true|false")]), arg("layout_exit", Fill("N")),
               arg("time", [Fill("TIME")])]  # fmt: skip
    return (
        f"{Step('verify', state.op, attempt=attempt.id, run=Fill('VERIFIER'))}  (a command "
        f"that measures config {canonical_json(attempt.config)}; or {' '.join(by_hand)} to "
        "report it by hand)"
    )


def json_safe(value: Any) -> Any:
    """`value` with every float JSON cannot carry (an infinity, NaN) as null: a value an older
    release recorded (a target so small that Baseline/Target overflows) must never make a read
    command fail (R11)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value
