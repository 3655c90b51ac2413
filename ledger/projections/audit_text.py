"""One op's audit report for humans (`audit` without `--json`)."""

from __future__ import annotations

from typing import Any

# The report's plain lists, in the order they are shown: (key, line for each item).
_LISTED = (
    ("conflicts", "conflict: {}"),
    ("reported_decisions", "R11: {}"),
    ("decisions", "R10: {}"),
    ("strict", "strict: {}"),
    ("unbound", "R11: attempt {} was measured unbound (the result named no config)"),
    ("cache_hits", "cache hit: {}"),
)


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
    lines.extend(f"  person's decision: {d}" for d in report.get("person_decisions", ()))
    lines.extend(
        f"  repaired: torn tail at line {repair.get('line')} "
        f"({repair.get('byte_count')} bytes) moved to {repair.get('quarantine')}"
        for repair in report.get("repairs", ())
    )
    lines.extend(
        f"  retry override: attempt {o['attempt']}: {o['reason']}"
        for o in report.get("overrides", ())
    )
    for key, template in _LISTED:
        lines.extend("  " + template.format(item) for item in report.get(key, ()))
    recorded = report.get("manifests", ())
    if len(recorded) > 1:
        digests = " -> ".join(m["digest"] for m in recorded)
        lines.append(f"  manifest changed during the campaign: {digests}")
    lines.extend(f"  {f}" for f in report["findings"])
    return "\n".join(lines)
