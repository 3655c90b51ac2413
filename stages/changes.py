"""R5-R7 What counts as a change: knobs belong to a stage and a point (from the op manifest),
a default spelt out is no change, and a new attempt starts from the best implementation.

Ops without a recorded manifest have no knob stages and no defaults: only the checks on the
implementation's digest apply to them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ledger.domain.configs import filled
from ledger.domain.hints import NAME, TEXT, Fill, Step, arg
from ledger.domain.keys import knob_defaults
from ledger.domain.state import Point, State
from ledger.errors import BadInput
from ledger.log import codec
from stages.binding import best_impl_digest
from stages.outcome import refuse
from stages.pipeline import active_stage, algorithm_step
from stages.refusal import Refusal
from stages.retry import next_idea, outcome_of


def changed_knobs(state: State, before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """The keys whose values differ once the manifest's defaults are filled in (R6)."""
    defaults = knob_defaults(state)
    old, new = filled(before, defaults), filled(after, defaults)
    return sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))


def _knobs_of(state: State, stage: str) -> list[str]:
    knobs = state.manifest.knobs if state.manifest else {}
    return [name for name, spec in knobs.items() if spec.get("stage") == stage]


def knob_refusal(state: State, changed: list[str], point: Point | None) -> Refusal | None:
    """Refuse a change of a knob outside the current stage (R5) or the open point (R7)."""
    manifest = state.manifest
    stage = active_stage(state)
    if manifest is None or stage is None:
        return None
    knobs = manifest.knobs
    for name in changed:
        home = knobs.get(name, {}).get("stage")
        if home is not None and home != stage:
            own = ", ".join(_knobs_of(state, stage)) or "none"
            return refuse(
                "R5",
                f"knob {name} belongs to the {home} stage, not to {stage}",
                f"the op manifest ({manifest.source}) puts {name} in stage {home}",
                f"change a knob of the {stage} stage ({own})",
            )
        if point is not None and point.knobs and name not in point.knobs:
            return refuse(
                "R7",
                f"knob {name} is outside point {point.name}",
                f"point {point.name} tunes {', '.join(point.knobs)}",
                f"close it ({Step('point close', state.op, name=point.name, reason=TEXT)}), "
                f"then open a point for {name} ({Step('point open', state.op, name=name)}), "
                "or a multi-knob point that tunes them together "
                f"({Step('point open', state.op, name=NAME, knob=[*point.knobs, name])})",
            )
    return None


def point_knobs(state: State, name: str, given: tuple[str, ...]) -> tuple[str, ...] | Refusal:
    """The knobs a new point tunes: those given, else the knob of its name (R5, R7)."""
    manifest = state.manifest
    if manifest is None:
        if given:
            raise BadInput(
                f"{arg('knob')} needs an op manifest: this op has none recorded",
                hint=f"record SPEC.md's manifest ({Step('manifest', state.op)}), or open "
                f"the point without {arg('knob')}",
            )
        return ()
    knobs = manifest.knobs
    chosen = tuple(dict.fromkeys(given)) or ((name,) if name in knobs else ())
    if not chosen:
        named_knobs = Step("point open", state.op, name=name, knob=[Fill("KNOB")])
        return refuse(
            "R7",
            f"point {name} names no knob of the op manifest",
            f"the manifest's knobs: {', '.join(knobs) or 'none'}",
            f"open it for named knobs ({named_knobs})",
        )
    unknown = [k for k in chosen if k not in knobs]
    if unknown:
        raise BadInput(
            f"unknown knob {unknown[0]!r}: the op manifest declares {', '.join(knobs)}",
            hint="name knobs of SPEC.md's front matter",
        )
    return knob_refusal(state, list(chosen), None) or chosen


def unchanged_refusal(state: State, param: str, value: Any) -> Refusal | None:
    """Refuse a mutation that leaves the best config as it was, defaults filled in (R6)."""
    best = state.best
    if best is None or changed_knobs(state, best.config, {**best.config, param: value}):
        return None
    shown = codec.canonical_json(value)
    if param in best.config:
        blocking = f"the best config already has {param} = {shown}"
    else:
        source = state.manifest.source if state.manifest else "the op manifest"
        blocking = (
            f"{param} = {shown} is its default in the op manifest ({source}), and the best "
            f"config leaves {param} at its default"
        )
    return refuse(
        "R6",
        f"the mutation leaves {param} unchanged",
        blocking,
        "change one parameter to a different value",
    )


def start_refusal(state: State, disk_digest: str | None, impl_file: str | None) -> Refusal | None:
    """Refuse a new attempt while the implementation on disk is not the best's (R6)."""
    expected = best_impl_digest(state)
    if disk_digest is None or expected is None or disk_digest == expected:
        return None
    where = impl_file or "the implementation file"
    return refuse(
        "R6",
        "a new attempt starts from the best: the implementation on disk is not the best's",
        f"{where} has digest {disk_digest[:12]}, the best was measured with {expected[:12]}",
        f"restore {where} to implementation {expected[:12]} ({Step('kernel restore', state.op)}"
        f" when the ledger kept it, or `git restore {where}`), then run the command again",
    )


def same_impl_refusal(state: State, digest: str | None, override: str | None) -> Refusal | None:
    """Refuse an algorithm change whose implementation is the best's (R5) or was already
    measured by an earlier attempt (R9, unless overridden)."""
    if digest is None:
        return None
    if digest == best_impl_digest(state):
        return refuse(
            "R5",
            "no algorithm change: the implementation is the best's",
            f"implementation {digest[:12]} is the one the best was measured with",
            algorithm_step(state),
        )
    if override is not None:
        return None
    for attempt in state.attempts.values():
        if (
            attempt.kind == "algorithm"
            and attempt.impl_digest == digest
            and attempt.status in ("verified", "failed")
        ):
            outcome = outcome_of(state, attempt.id)
            return refuse(
                "R9",
                f"this implementation was already measured by attempt {attempt.id}: {outcome}",
                f"attempt {attempt.id} ran implementation {digest[:12]} ({outcome})",
                next_idea(),
                kind="retry",
            )
    return None
