"""Attempts and optimization points as Markdown, in the words MEMORY.md and the report share.

An attempt is described the same way wherever it appears, a row of a MEMORY.md section or of
the report: what it changed, its time against the best it was compared with, why it failed;
and so are the totals, the failures grouped, and the points with their no-gain streaks (R7).
Cells are cut to a fixed length, so a row stays readable however long the user's text is.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ledger.domain.state import Attempt, Point, State
from ledger.log.codec import canonical_json
from ledger.projections.formatting import (
    change_pct,
    fmt_pct,
    fmt_time_us,
    md_code,
    md_table,
    md_text,
    plural,
    reported_mark,
    short_digest,
)
from ledger.projections.timeline import Step, config_diff, outcome, point_state
from ledger.schema.events import STAGES
from stages.policy import DEFAULT_POLICY, patience, policy_value

# Bounds of the shared cells and tables, part of what keeps MEMORY.md short enough for an
# agent's context (the other bounds are in memory_status and memory_history).
CELL = 90  # characters of user text or config per table cell
FAILED_GROUPS = 30  # groups of earlier failures that get a row of their own
# The order in which outcomes are listed wherever they are counted.
FAILURE_ORDER = ("rollback", "accuracy", "layout", "compile", "timeout", "oom", "runtime")
OUTCOME_ORDER = ("adopt", "target-reached", "no-gain", *FAILURE_ORDER, "abandoned", "pending")
_STAGE_INDEX: dict[str, int] = {stage: i for i, stage in enumerate(STAGES)}


def point_cell(name: str | None) -> str:
    """An optimization point's name for a table cell, `-` for an attempt outside any point."""
    return md_code(name, 40) if name else "-"


def change_text(step: Step) -> str:
    """What an attempt changed, as Markdown for one table cell."""
    attempt = step.attempt
    if attempt.kind == "mutation":
        return md_code(f"{attempt.param}={canonical_json(attempt.value)}", CELL)
    if attempt.kind == "algorithm":
        text = "algorithm: " + md_text(attempt.description or "", CELL)
        if attempt.impl_digest:
            text += f" (impl {md_code(short_digest(attempt.impl_digest))})"
        return text
    prior = md_text(attempt.prior or "unknown prior", 40)
    return f"candidate ({prior}): {md_code(config_diff(step.best_config, attempt.config), CELL)}"


def attempt_cells(step: Step) -> list[str]:
    """The cells every table starts an attempt's row with: id, stage, point, change."""
    attempt = step.attempt
    return [md_code(attempt.id), attempt.stage, point_cell(attempt.point), change_text(step)]


def time_text(step: Step) -> str:
    """The attempt's median time (marked when only reported) and its change against the best
    it was compared with."""
    measurement = step.attempt.measurement
    if measurement is None:
        return "-"
    text = fmt_time_us(measurement.median_us) + reported_mark(measurement.origin_level)
    if step.best_us:
        text += f" ({fmt_pct(change_pct(measurement.median_us, step.best_us), signed=True)})"
    return text


def reason_text(step: Step) -> str:
    """Why a failed or rolled-back attempt is not retried, for one table cell."""
    attempt = step.attempt
    if attempt.failure is None and attempt.measurement is not None:
        return f"slower: {time_text(step)} vs best {fmt_time_us(step.best_us)}"
    detail = md_text(attempt.detail, CELL) if attempt.detail else ""
    if attempt.measurement is not None and attempt.failure in ("accuracy", "layout"):
        m = attempt.measurement
        check = f"layout exit {m.layout_exit}" if attempt.failure == "layout" else "not all_close"
        return f"{check}; {detail}" if detail else check
    return detail or "-"


def outcome_counts(state: State) -> list[tuple[str, int]]:
    """How many attempts had each outcome, in OUTCOME_ORDER (outcomes it lacks last, sorted)."""
    counts = Counter(outcome(attempt) for attempt in state.attempts.values())
    known = [k for k in OUTCOME_ORDER if k in counts]
    return [(k, counts[k]) for k in known + sorted(set(counts) - set(OUTCOME_ORDER))]


def counts_text(state: State) -> str:
    """The number of attempts, then how many had each outcome (in OUTCOME_ORDER)."""
    detail = ", ".join(f"{k} {n}" for k, n in outcome_counts(state))
    return f"{len(state.attempts)}" + (f" ({detail})" if detail else "")


def policy_number(policy: Mapping[str, Any], key: str) -> float:
    """A number of the effective policy; stages.policy's default when missing or not a number."""
    value = policy_value(policy, key)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return float(DEFAULT_POLICY[key])


def points_table(state: State, policy: Mapping[str, Any], limit: int | None = None) -> str:
    """The optimization points with their state and no-gain streaks (R7), as Markdown.

    With a `limit`, only the current stage's most recent `limit` points (and any open one)
    get a row; the others are counted per stage under the table.
    """
    if not state.points:
        return "None opened yet (R7).\n"
    shown = recent_points(state, limit) if limit is not None else _ordered_points(state)
    rows = [_point_row(point, policy) for point in shown]
    listed = {id(p) for p in shown}
    rest = [p for p in _ordered_points(state) if id(p) not in listed]
    summary = [
        (stage, Counter(point_state(p) for p in rest if p.stage == stage))
        for stage in dict.fromkeys(p.stage for p in rest)
    ]
    return _points_text(rows, summary)


def _ordered_points(state: State) -> list[Point]:
    """Every point, in pipeline order (unknown stages last), then in opening order."""
    return sorted(state.points.values(), key=lambda p: _stage_order(p.stage))


def recent_points(state: State, limit: int) -> list[Point]:
    """The points `points_table(state, policy, limit)` lists: the current stage's most recent
    `limit` and any open one (when the current stage has none, the last `limit` in pipeline
    order)."""
    points = _ordered_points(state)
    current = [p for p in points if p.stage == state.stage or p.is_open]
    return current[-limit:] if current else points[-limit:]


def _points_text(rows: list[list[str]], rest: Sequence[tuple[str, Mapping[str, int]]]) -> str:
    """The table of `rows`, then the points not listed: (stage, {key: count}) in order."""
    table = md_table(
        ["stage", "point", "state", "candidates", "mutations", "no-gain streak", "attempts"],
        rows,
        align="lllrrrr",
    )
    text = (
        "A point is exhausted after N consecutive mutants without gain; failures do not "
        "count (R7).\n\n" + table
    )
    if rest:
        summary = []
        for stage, outcomes in rest:
            detail = ", ".join(f"{k} {outcomes[k]}" for k in sorted(outcomes))
            summary.append(f"{stage} {plural(sum(outcomes.values()), 'point')} ({detail})")
        text += "\nNot listed: " + "; ".join(summary) + ".\n"
    return text


def _stage_order(stage: str) -> int:
    return _STAGE_INDEX.get(stage, len(_STAGE_INDEX))


def _point_row(point: Point, policy: Mapping[str, Any]) -> list[str]:
    if point.is_open:
        condition = "**open**"
    else:
        condition = md_text(point_state(point))
        if point.reason:
            condition += ": " + md_text(point.reason, 60)
    limit = patience(policy, point.stage)
    return [
        point.stage,
        point_cell(point.name),
        condition,
        str(point.candidates),
        str(point.mutations),
        f"{point.streak} / {limit}" if limit else str(point.streak),
        str(len(point.attempts)),
    ]


def _group_key(attempt: Attempt) -> tuple[str, str]:
    if attempt.kind == "mutation":
        return attempt.stage, f"param {md_code(attempt.param or '?', 40)}"
    if attempt.kind == "candidate":
        return attempt.stage, f"candidates from {md_text(attempt.prior or 'unknown prior', 40)}"
    return attempt.stage, "algorithm ideas" if attempt.kind == "algorithm" else attempt.kind


def _idea(step: Step) -> tuple[str, str]:
    """What a failed attempt tried: a key (equal keys are the same idea in a group) and the
    idea as its group's cell shows it."""
    attempt = step.attempt
    if attempt.kind == "mutation":
        value = canonical_json(attempt.value)
        return value, md_code(value, 30)
    if attempt.kind == "algorithm":
        return attempt.description or "", md_text(attempt.description or "", 50)
    # A candidate's full config is never measured twice (R9): each is an idea of its own.
    return attempt.id, md_code(config_diff(step.best_config, attempt.config), 50)


# How many distinct ideas a group shows, by the kind of its attempts (cells stay short).
_EXAMPLES = {"mutation": 6, "algorithm": 3, "candidate": 2}


def failed_groups(earlier: Sequence[Step], op: str) -> str:
    """Earlier failures grouped by stage and what was changed, with the values tried (R9)."""
    groups: dict[tuple[str, str], list[Step]] = {}
    for step in earlier:
        groups.setdefault(_group_key(step.attempt), []).append(step)
    keys = sorted(
        groups,
        key=lambda k: (_STAGE_INDEX.get(k[0], len(_STAGE_INDEX)), groups[k][0].attempt.seq),
    )
    shown, hidden = keys[:FAILED_GROUPS], keys[FAILED_GROUPS:]
    text = (
        "### Earlier failed attempts, grouped\n\n"
        "By stage and what was changed; values most recent first.\n\n"
        + md_table(
            ["stage", "change", "count", "outcomes", "values tried"],
            [_group_row(key, groups[key]) for key in shown],
            align="llrll",
        )
    )
    if hidden:
        count = sum(len(groups[k]) for k in hidden)
        text += (
            f"\n{plural(len(hidden), 'more group')} ({plural(count, 'attempt')}) are in "
            f"`tune-ledger log {op} --verdict rollback`.\n"
        )
    return text


def _group_row(key: tuple[str, str], steps: Sequence[Step]) -> list[str]:
    """One group's row: stage, what changed, count, outcomes, the values tried."""
    counts = Counter(outcome(step.attempt) for step in steps)
    outcomes = ", ".join(
        f"{k} {counts[k]}"
        for k in sorted(
            counts, key=lambda k: (FAILURE_ORDER.index(k) if k in FAILURE_ORDER else 99, k)
        )
    )
    # Distinct ideas, most recent first, each shown by its most recent step.
    latest: dict[str, str] = {}
    for step in reversed(steps):
        latest.setdefault(*_idea(step))
    keep = _EXAMPLES.get(steps[0].attempt.kind, 2)
    examples = list(latest.values())[:keep]
    if len(latest) > keep:
        examples.append(f"+{len(latest) - keep} more")
    return [key[0], key[1], str(len(steps)), outcomes, ", ".join(examples)]
