"""Accuracy evidence of one run: on a device its real outputs, in the simulator PyPTO's
pass-verify verdicts plus our own tensor compare.

Pure: callers pass the CSV text and the compare results. On a device the outputs the kernel
computed are copied back and compared with the golden (`device_evidence`). The simulator
computes no outputs: there the evidence comes from pypto's pass-verify, which interprets the
tensor graph and the graph after each checked compiler pass on the host CPU (torch), not from
executing generated NPU code.

In the simulator an output is `all_close` only when all of these hold:
- our compare of the output buffer (written by the host interpretation) with the golden is
  within the SPEC tolerance (`torch.allclose`);
- the verifier's own tensor_graph-vs-golden row for that output says PASS;
- no checked compiler pass disagrees with the tensor graph (a pass row cannot be attributed
  to one output of a multi-output kernel, so a failing pass fails every output).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

from attrs import frozen

from .metrics import ArtefactError

_REQUIRED = ("passName", "referPassName", "ioflag", "verifyResult", "maxAbsDiff")


@frozen
class VerifyRow:
    """One line of verify_result_brief.csv."""

    stage: str  # tensor_graph or Pass_NN_Name
    reference: str  # golden or tensor_graph
    ioflag: str  # outputN: index into the kernel's tensor arguments
    result: str  # PASS, FAILED, NO_COMPARE, ...
    max_abs_diff: float


@frozen
class OutputCompare:
    """Our own compare of one output buffer with its golden (done in the child process)."""

    name: str
    index: int  # position among the kernel's tensor arguments (inputs first)
    all_close: bool
    max_diff: float
    nonzero: bool  # False: the buffer was never written (no numerics at all)


def parse_verify_csv(text: str) -> list[VerifyRow]:
    """The rows of verify_result_brief.csv; refuses a file without the columns we read."""
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in _REQUIRED if c not in (reader.fieldnames or [])]
    if missing:
        raise ArtefactError(f"verify_result_brief.csv: missing columns {', '.join(missing)}")
    rows = []
    for line_no, row in enumerate(reader, start=2):
        try:
            diff = float(row["maxAbsDiff"])
        except ValueError as e:
            raise ArtefactError(f"verify_result_brief.csv:{line_no}: bad maxAbsDiff") from e
        rows.append(
            VerifyRow(
                stage=row["passName"],
                reference=row["referPassName"],
                ioflag=row["ioflag"],
                result=row["verifyResult"],
                max_abs_diff=diff,
            )
        )
    return rows


def pass_summary(rows: Sequence[VerifyRow]) -> dict[str, dict[str, float]]:
    """Per checked stage: how many comparisons, how many failed, the largest abs diff."""
    summary: dict[str, dict[str, float]] = {}
    for row in rows:
        if row.result == "NO_COMPARE":
            continue
        entry = summary.setdefault(row.stage, {"checked": 0.0, "failed": 0.0, "max_abs_diff": 0.0})
        entry["checked"] += 1
        entry["failed"] += 0 if row.result == "PASS" else 1
        entry["max_abs_diff"] = max(entry["max_abs_diff"], row.max_abs_diff)
    return summary


def output_evidence(
    compares: Sequence[OutputCompare], rows: Sequence[VerifyRow], rtol: float, atol: float
) -> list[dict[str, Any]]:
    """One `{name, all_close, max_diff, ...}` entry per output (see the module docstring)."""
    failed_passes = sorted(
        {
            r.stage
            for r in rows
            if r.stage != "tensor_graph" and r.result not in ("PASS", "NO_COMPARE")
        }
    )
    evidence = []
    for out in compares:
        graph_rows = [
            r for r in rows if r.stage == "tensor_graph" and r.ioflag == f"output{out.index}"
        ]
        graph_ok = bool(graph_rows) and all(r.result == "PASS" for r in graph_rows)
        reasons = []
        if not out.nonzero:
            reasons.append("output buffer never written")
        if not out.all_close:
            reasons.append(
                f"max |out - golden| {out.max_diff:.3g} beyond rtol={rtol:g}, atol={atol:g}"
            )
        if not graph_rows:
            reasons.append("no tensor_graph verdict in verify_result_brief.csv")
        elif not graph_ok:
            reasons.append("pass-verify: tensor_graph differs from the golden")
        if failed_passes:
            reasons.append("pass-verify: " + ", ".join(failed_passes) + " differ from the graph")
        evidence.append(
            {
                "name": out.name,
                "all_close": not reasons,
                "max_diff": out.max_diff,
                "rtol": rtol,
                "atol": atol,
                "source": "pypto pass-verify (host interpretation) + torch compare",
                "reason": "; ".join(reasons) or None,
            }
        )
    return evidence


def evidence_from_rows(
    rows: Sequence[VerifyRow], names: tuple[list[str], list[str]] | None
) -> list[dict[str, Any]]:
    """Per-output evidence from the verifier's verdicts alone (for an existing artefact folder).

    The CSV gives the max diff with 6 decimals only; outputs are named from the impl's
    INPUT_NAMES/OUTPUT_NAMES when known, else `output<index>`.
    """
    failed_passes = sorted(
        {
            r.stage
            for r in rows
            if r.stage != "tensor_graph" and r.result not in ("PASS", "NO_COMPARE")
        }
    )
    graph = [r for r in rows if r.stage == "tensor_graph" and r.result != "NO_COMPARE"]
    evidence = []
    for flag in sorted({r.ioflag for r in graph}, key=lambda f: int(f.removeprefix("output"))):
        index = int(flag.removeprefix("output"))
        name = flag
        if names is not None and len(names[0]) <= index < len(names[0]) + len(names[1]):
            name = names[1][index - len(names[0])]
        mine = [r for r in graph if r.ioflag == flag]
        reasons = [
            f"pass-verify: tensor_graph {r.result} vs golden" for r in mine if r.result != "PASS"
        ]
        if failed_passes:
            reasons.append("pass-verify: " + ", ".join(failed_passes) + " differ from the graph")
        evidence.append(
            {
                "name": name,
                "all_close": not reasons,
                "max_diff": max(r.max_abs_diff for r in mine),
                "source": "verify_result_brief.csv",
                "reason": "; ".join(reasons) or None,
            }
        )
    return evidence


def device_evidence(
    compares: Sequence[OutputCompare], rtol: float, atol: float
) -> list[dict[str, Any]]:
    """One entry per output of a device run: the outputs the device computed, copied to the
    host, against the golden (`torch.allclose` within the SPEC tolerance). An all-zero output
    is no sign of a missing run here (it may be right): the outputs were zeroed before it."""
    return [
        {
            "name": out.name,
            "all_close": out.all_close,
            "max_diff": out.max_diff,
            "rtol": rtol,
            "atol": atol,
            "source": "device outputs vs golden (torch.allclose on the host)",
            "reason": None
            if out.all_close
            else f"max |out - golden| {out.max_diff:.3g} beyond rtol={rtol:g}, atol={atol:g}",
        }
        for out in compares
    ]
