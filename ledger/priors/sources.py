"""Where priors come from: other ops' ledgers and kernel sources (the built-in file: knowledge.py).

Each function turns one kind of evidence into `Prior`s (values for some config keys, a
provenance line, a weight in [0, 1]); all are pure. Weights say how much a prior is trusted
before anything is measured: an adopted config of a very similar op most, a production
kernel's literal next, a typical value from the documentation least.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import PurePath
from typing import Any

from attrs import frozen

from ledger.domain.state import State
from ledger.priors.prior import FailedConfig, Prior
from ledger.priors.profile import OpProfile, name_tokens, similarity
from ledger.priors.scan_result import MODULE_SCOPE, KernelValue, ScanResult

LATEST_BEST_WEIGHT = 1.0  # another op's current best, times its similarity
EARLIER_ADOPTED_WEIGHT = 0.8  # a config it adopted and later improved on
SOURCE_WEIGHT = 0.55  # a literal in a production kernel
SOURCE_NAME_BONUS = 0.2  # ... whose file or function is named like this op


# --- other ops' ledgers -----------------------------------------------------------------------


@frozen
class OtherOp:
    """Another op's replayed campaign and what its SPEC.md says about it."""

    name: str
    where: str  # its folder, as shown in provenance
    profile: OpProfile
    state: State


def _speedup(state: State, time_us: float) -> str:
    if state.target is None or time_us <= 0:
        return f"{time_us:.2f} µs"
    return f"{time_us:.2f} µs, {state.target.baseline_us / time_us:.2f}x over its baseline"


def ledger_priors(
    current: OpProfile, others: Iterable[OtherOp]
) -> tuple[list[Prior], list[FailedConfig]]:
    """Adopted configs of other ops, weighted by similarity; their failed configs apart."""
    priors: list[Prior] = []
    failures: list[FailedConfig] = []
    for other in others:
        score, why = similarity(current, other.profile)
        state = other.state
        latest = state.best.attempt if state.best is not None else None
        for attempt_id in state.adopted:
            attempt = state.attempts[attempt_id]
            if attempt.kind == "algorithm" or attempt.measurement is None:
                continue  # an algorithm change keeps the config: nothing to learn about it
            is_latest = attempt_id == latest
            weight = score * (LATEST_BEST_WEIGHT if is_latest else EARLIER_ADOPTED_WEIGHT)
            where = f"{attempt.stage}" + (f", point {attempt.point}" if attempt.point else "")
            priors.append(
                Prior(
                    values=dict(attempt.config),
                    kind="ledger",
                    weight=weight,
                    provenance=f"ledger {other.where}: attempt {attempt_id} adopted ({where}; "
                    f"{_speedup(state, attempt.measurement.median_us)})",
                    reasons=(
                        why,
                        "its current best" if is_latest else "adopted, later improved on",
                    ),
                )
            )
        for attempt in state.attempts.values():
            if attempt.failure is not None and attempt.kind != "algorithm":
                failures.append(
                    FailedConfig(
                        values=dict(attempt.config),
                        op=other.name,
                        attempt=attempt.id,
                        failure=attempt.failure,
                        similarity=score,
                    )
                )
    return priors, failures


# --- kernel sources ---------------------------------------------------------------------------


def _source_prior(findings: Sequence[KernelValue], op: OpProfile) -> Prior:
    first = findings[0]
    values: dict[str, Any] = {}
    for finding in findings:
        values.update(finding.values)
    stem = PurePath(first.path).stem
    named = name_tokens(op.family or op.name, 3) | name_tokens(op.name, 3)
    matched = named & (name_tokens(stem, 3) | name_tokens(first.scope, 3))
    lines = ", ".join(f"{f.line} {f.call}" for f in findings)
    scope = "" if first.scope == MODULE_SCOPE else f" in {first.scope}"
    reasons = [f"production kernel literal(s): {first.path} lines {lines}"]
    reasons.extend(f"value read through the constant {v}" for f in findings for v in f.via)
    if matched:
        reasons.append(f"named like this op ({', '.join(sorted(matched))})")
    return Prior(
        values=values,
        kind="source",
        weight=SOURCE_WEIGHT + (SOURCE_NAME_BONUS if matched else 0.0),
        provenance=f"source {first.where}{scope}",
        reasons=tuple(reasons),
    )


def source_priors(scan: ScanResult, op: OpProfile) -> list[Prior]:
    """One prior per kernel function (its calls together); a function that sets a key twice
    (two tiles for two phases) gives one prior per such call, each with the calls shared."""
    groups: dict[tuple[str, str], list[KernelValue]] = {}
    for finding in scan.findings:
        groups.setdefault((finding.path, finding.scope), []).append(finding)
    priors: list[Prior] = []
    for _, findings in sorted(groups.items()):
        counts = Counter(k for f in findings for k in f.values)
        repeated = [f for f in findings if any(counts[k] > 1 for k in f.values)]
        if not repeated:
            priors.append(_source_prior(findings, op))
            continue
        shared = [f for f in findings if f not in repeated]
        priors.extend(_source_prior([f, *shared], op) for f in repeated)
    return priors
