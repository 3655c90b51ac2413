"""Read-only views of a replayed state for the CLI: status, resume, log rows, results."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ledger.domain import devices
from ledger.domain.hints import NAME, TEXT, Fill, Step, arg
from ledger.domain.state import Attempt, State
from ledger.errors import BadInput
from ledger.log.codec import canonical_json
from ledger.log.record import Event
from ledger.projections import campaign_end
from ledger.projections.attempt_markdown import recent_points
from ledger.projections.formatting import fmt_time_us, legend_lines, reported_mark

_MIN_PREFIX = 4
# How many points `status` lists: the current stage's most recent ones (and the open one).
STATUS_POINTS = 20


def resolve_attempt(state: State, text: str) -> str:
    """The attempt id that `text` names: a full id, a unique prefix, or `pending`."""
    if text == "pending":
        if state.pending is None:
            raise BadInput("no attempt is pending", hint="start one with `candidate` or `try`")
        return state.pending
    if len(text) < _MIN_PREFIX:
        raise BadInput(f"attempt id {text!r} is too short", hint="give at least 4 characters")
    matches = [a for a in state.attempts if a.startswith(text)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise BadInput(
            f"unknown attempt {text!r}",
            hint=f"see {Step('log', state.op)} for attempt ids, or use `pending`",
        )
    raise BadInput(
        f"attempt id {text!r} is ambiguous: {', '.join(sorted(matches))}",
        hint=f"give more characters of the id (see {Step('log', state.op)})",
    )


def _change(attempt: Attempt) -> str:
    if attempt.kind == "mutation":
        return f"{attempt.param}={canonical_json(attempt.value)}"
    if attempt.kind == "algorithm":
        return attempt.description or ""
    return f"candidate from {attempt.prior}"


def attempt_row(attempt: Attempt) -> dict[str, Any]:
    """One attempt as a JSON row."""
    m = attempt.measurement
    return {
        "attempt": attempt.id,
        "seq": attempt.seq,
        "kind": attempt.kind,
        "stage": attempt.stage,
        "point": attempt.point,
        "change": _change(attempt),
        "config": attempt.config,
        "status": attempt.status,
        "verdict": attempt.verdict,
        "failure": attempt.failure,
        "detail": attempt.detail,
        "time_us": m.median_us if m else None,
        "util_pct": m.util_pct if m else None,
        "bubble_pct": m.bubble_pct if m else None,
        "provenance": m.origin_level if m else None,
        # Where it was measured (ledger/domain/devices.py); None: not measured.
        "device": devices.label(m.device) if m else None,
        "retry_override": attempt.retry_override,
    }


def attempt_rows(
    state: State,
    *,
    stage: str | None = None,
    verdict: str | None = None,
    failure: str | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """The attempts in the order they were started (`state.attempts`' order), filtered; the
    last `limit` of them."""
    chosen = [
        a
        for a in state.attempts.values()
        if (stage is None or a.stage == stage)
        and (verdict is None or a.verdict == verdict)
        and (failure is None or a.failure == failure)
    ]
    return [attempt_row(a) for a in (chosen[-limit:] if limit else chosen)]


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


def resume(state: State) -> dict[str, Any]:
    """What an interrupted agent needs: stage, skills to reload, pending attempt, next step."""
    data = status(state)
    return {**data, **resume_fields(state, data["allowed"])}


def resume_fields(state: State, allowed: Sequence[str]) -> dict[str, Any]:
    """The fields `resume` adds to `status` (`allowed`: the status's allowed commands)."""
    from stages.allowed import protocol_steps  # the next steps, not what works at any time
    from stages.conflicts import conflicts

    pending = state.attempts.get(state.pending) if state.pending else None
    point = state.points.get(state.open_point) if state.open_point else None
    op = state.op
    steps: list[str] = []
    if pending is not None:
        steps.append(measure_command(state, pending))
        abandon = Step("abandon", op, attempt=pending.id, reason="interrupted")
        steps.append(f"or, if it cannot be measured: {abandon}")
    elif conflicts(state):  # a merge left the campaign in conflict (DESIGN §8)
        from stages import remeasure

        steps.append(
            remeasure.next_step(state)
            or f"{Step('conflicts', op)} (then resolve each conflict as it says)"
        )
    return {
        "reload_skills": list(state.skills),
        "pending_attempt": attempt_row(pending) if pending else None,
        "point": {
            "name": point.name,
            "streak": point.streak,
            "candidates": point.candidates,
            "mutations": point.mutations,
        }
        if point
        else None,
        "guide": guide(op),
        # A stopped campaign's way forward is its end (R10), nothing once handed back.
        "next": steps
        or (campaign_end.end_steps(state) if state.stopped else None)
        or ([] if state.stopped else [_next_step(name, op) for name in protocol_steps(state)]),
    }


def guide(op: str | None) -> list[str]:
    """How to make and undo an algorithm change and when to open a multi-knob point (R5, R7),
    in the caller's terms: what `resume` teaches an agent that starts cold (issue 28.6)."""
    impl = f"custom/{op}/{op}_impl.py"
    knobs = [Fill("KNOB_A"), Fill("KNOB_B")]
    return [
        f"an algorithm change (algorithm stage only): edit {impl}, then "
        f"{Step('try', op, algorithm=TEXT, impl=impl)} and measure it; after a rollback or "
        f"no-gain, put the best's kernel back ({Step('kernel restore', op)}, or git restore "
        f"{impl}) before the next attempt",
        "knobs that only gain together: open one point for all of them "
        f"({Step('point open', op, name=NAME, knob=knobs)}); its candidates set them together "
        f"and its mutations may change any of them, where a point opened without {arg('knob')} "
        "changes only the knob it is named after",
    ]


# Steps whose first source to try needs no knowledge of the verifier (an op with a manifest).
_EVIDENCE_NEXT = {
    "evidence compare": ("run", Fill("CMD"), "output", [Fill("NAME=true|false")]),
    "evidence layout": ("run", Fill("CMD"), "exit_code", Fill("N")),
}


def _next_step(name: str, op: str | None) -> str:
    """An allowed step as a way forward: the evidence with its sources, any other step with
    its name (its arguments are in the tool's schema, or `--help`)."""
    if name in _EVIDENCE_NEXT:
        run, cmd, other, value = _EVIDENCE_NEXT[name]
        return f"{Step(name, op, from_spec=True)} (or {arg(run, cmd)}, or {arg(other, value)})"
    return str(Step(name, op, **_REQUIRED.get(name, {})))


# What a step needs besides the op, as placeholders: a bare `relax(op=…)` left an agent to
# guess its arguments from the schema.
_REQUIRED: dict[str, dict[str, Any]] = {
    "relax": {
        "what": Fill("vec|cube"),
        "limit": Fill("LIMIT"),
        "basis": TEXT,
        "evidence": [Fill("ATTEMPT")],
    },
    "skill load": {"name": Fill("SKILL")},
    "skill unload": {"name": Fill("SKILL")},
    "stage enter": {"name": Fill("STAGE")},
    "stage exit": {"name": Fill("STAGE")},
    "point open": {"name": Fill("KNOB")},
    "point close": {"name": Fill("POINT"), "reason": TEXT},
    "candidate": {"config": Fill("CONFIG"), "prior": TEXT},
    "try": {"change": Fill("KEY=VALUE")},
    "fail": {"attempt": "pending", "category": Fill("CATEGORY"), "detail": TEXT},
    "abandon": {"attempt": "pending", "reason": TEXT},
    "verify": {"attempt": "pending"},
    "handback": {"summary": TEXT},
}


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


def resume_text(data: dict[str, Any]) -> str:
    """`resume` for humans."""
    lines = [status_text(data), "resume:"]
    lines.append(f"  reload skills: {', '.join(data['reload_skills']) or '-'}")
    if data["pending_attempt"]:
        pa = data["pending_attempt"]
        lines.append(f"  in flight: attempt {pa['attempt']} ({pa['kind']}: {pa['change']})")
    if data["point"]:
        p = data["point"]
        lines.append(
            f"  point {p['name']}: streak {p['streak']}, {p['candidates']} candidates,"
            f" {p['mutations']} mutations"
        )
    lines.extend(f"  next: {step}" for step in data["next"])
    lines.extend(f"  guide: {line}" for line in data.get("guide", ()))
    return "\n".join(lines)


def attempt_result(events: Sequence[Event]) -> dict[str, Any]:
    """`verify`/`fail` output: the verdict, failure, medians and whether the campaign stopped;
    `best_before_us` is the best the attempt was compared with, `best_us` the best after the
    verdict (the attempt's time when it was adopted)."""
    result: dict[str, Any] = {
        "verdict": None,
        "failure": None,
        "stopped": None,
        "point_closed": None,
    }
    for event in events:
        data = event.data
        if event.type == "attempt.verdict":
            result.update(
                verdict=data["verdict"],
                failure=data["failure"],
                method=data["method"],
                best_before_us=data["best_median_us"],
                best_us=data["attempt_median_us"]
                if data["verdict"] in ("adopt", "target-reached")
                else data["best_median_us"],
                time_us=data["attempt_median_us"],
                ratio=data["ratio"],
                low=data["low"],
                high=data["high"],
                threshold=data["threshold"],
            )
        elif event.type == "attempt.failed":
            result.update(verdict="rollback", failure=data["category"])
        elif event.type == "campaign.stopped":
            result["stopped"] = data["reason"]
        elif event.type == "point.closed":
            result["point_closed"] = data["name"]
    return result


def describe_result(attempt: str, result: dict[str, Any]) -> str:
    """A one-line human summary of a verdict."""
    text = f"attempt {attempt}: {result['verdict']}"
    if result["failure"]:
        text += f" (failure: {result['failure']})"
    if result.get("time_us") is not None:
        text += (
            f", {fmt_time_us(result['time_us'])} vs best before "
            f"{fmt_time_us(result['best_before_us'])}; best now {fmt_time_us(result['best_us'])}"
        )
    if result["point_closed"]:
        text += f"; point {result['point_closed']} exhausted and closed"
    if result["stopped"]:
        text += f"; campaign stopped ({result['stopped']})"
    return text


def audit_text(report: dict[str, Any]) -> str:
    """One op's audit for humans: verdict, provenance summary, repairs, overrides, findings."""
    head = f"{report['op']}: {'clean' if not report['findings'] else 'PROBLEMS'}"
    prov = report.get("provenance", {})
    lines = [
        head,
        f"  events: {report.get('events', 0)}",
        "  measurements and evidence: "
        + (", ".join(f"{k} {v}" for k, v in sorted(prov.items())) or "-"),
    ]
    for decision in report.get("person_decisions", ()):
        lines.append(f"  person's decision: {decision}")
    for repair in report.get("repairs", ()):
        lines.append(
            f"  repaired: torn tail at line {repair.get('line')} "
            f"({repair.get('byte_count')} bytes) moved to {repair.get('quarantine')}"
        )
    for override in report.get("overrides", ()):
        lines.append(f"  retry override: attempt {override['attempt']}: {override['reason']}")
    for conflict in report.get("conflicts", ()):
        lines.append(f"  conflict: {conflict}")
    for decision in report.get("reported_decisions", ()):
        lines.append(f"  R11: {decision}")
    for decision in report.get("decisions", ()):
        lines.append(f"  R10: {decision}")
    for strict in report.get("strict", ()):
        lines.append(f"  strict: {strict}")
    for attempt in report.get("unbound", ()):
        lines.append(f"  R11: attempt {attempt} was measured unbound (the result named no config)")
    for hit in report.get("cache_hits", ()):
        lines.append(f"  cache hit: {hit}")
    recorded = report.get("manifests", ())
    if len(recorded) > 1:
        digests = " -> ".join(m["digest"] for m in recorded)
        lines.append(f"  manifest changed during the campaign: {digests}")
    lines.extend(f"  {f}" for f in report["findings"])
    return "\n".join(lines)


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
