"""What a verdict or a failure did to the campaign, as `verify` and `fail` print it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ledger.log.record import Event
from ledger.projections.formatting import fmt_time_us
from ledger.schema.vocabulary import ADOPTED


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
                if data["verdict"] in ADOPTED
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
