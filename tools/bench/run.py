"""The ledger's guardrails, each a ratio of two sides measured in the same run:

    python -m tools.bench.run --quick          # a few minutes: every guardrail, pass or fail
    python -m tools.bench.run                  # more repetitions, a whole autopilot campaign
    python -m tools.bench.run --quick --json   # the full report (noise included) as JSON
    python -m tools.bench.run --no-campaign    # without the real PyPTO campaigns

Run it from the repository root (`tools` is imported as a package). Progress goes to stderr.
What each figure means and what its floor is: tools/bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledger import __version__
from tools.bench import campaign, commands, core, ledgers, mcp_step
from tools.bench.timing import Guardrail


@dataclass(frozen=True)
class Plan:
    """The ledger sizes and repetitions of one mode."""

    replay: int  # whole replays per size (each side)
    appends: int  # appends timed
    command_rounds: int  # rounds of every command at each size
    mcp_steps: int  # steps through the server and as processes
    autopilot_attempts: int  # the autopilot campaign's attempt budget
    agent_tries: int  # attempts measured in the agent-like MCP session
    replay_sizes: tuple[int, ...] = (1_000, 10_000)
    append_size: int = 1_000
    command_sizes: tuple[int, int] = (100, 10_000)
    mcp_size: int = 1_000


PLANS = {
    "quick": Plan(replay=5, appends=21, command_rounds=3, mcp_steps=10, autopilot_attempts=6,
                  agent_tries=3),
    "full": Plan(replay=15, appends=60, command_rounds=7, mcp_steps=30, autopilot_attempts=80,
                 agent_tries=10),
}  # fmt: skip


def guardrails(
    plan: Plan, scratch: Path, with_campaigns: bool, log: Callable[[str], None]
) -> tuple[list[Guardrail], dict[str, str]]:
    """Every guardrail of `plan`, and those skipped with the reason."""
    found: list[Guardrail] = []
    skipped: dict[str, str] = {}
    for events in plan.replay_sizes:
        log(f"replay, {events} events")
        found.append(core.replay(ledgers.copy_of(events, scratch), events, plan.replay))
    log(f"durable append, {plan.append_size} events")
    root = ledgers.copy_of(plan.append_size, scratch)
    found.append(core.append(root, plan.append_size, plan.appends))
    found += commands.bench_commands(scratch, plan.command_sizes, plan.command_rounds, log)
    if _importable("mcp"):
        log(f"MCP step, {plan.mcp_size} events")
        found.append(mcp_step.bench_mcp_step(scratch, plan.mcp_size, plan.mcp_steps))
    else:
        skipped["mcp_step"] = skipped["campaign_agent_mcp"] = "no mcp SDK: pip install -e '.[mcp]'"
    if not with_campaigns:
        skipped["campaign_autopilot"] = skipped["campaign_agent_mcp"] = "--no-campaign"
    elif not _importable("pypto"):
        reason = "no pypto: pip install -e '.[pypto]'"
        skipped["campaign_autopilot"] = skipped["campaign_agent_mcp"] = reason
    else:
        found.append(campaign.autopilot(scratch, plan.autopilot_attempts, log))
        if "campaign_agent_mcp" not in skipped:
            found.append(campaign.agent_over_mcp(scratch, plan.agent_tries, log))
    return found, skipped


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def main(argv: Sequence[str] | None = None) -> int:
    """Measure every guardrail and print each with its verdict (or the JSON report)."""
    parser = argparse.ArgumentParser(description="tune-ledger's guardrails")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions, a short campaign")
    parser.add_argument("--json", action="store_true", help="print the full report as JSON")
    parser.add_argument("--no-campaign", action="store_true", help="skip the real campaigns")
    args = parser.parse_args(argv)
    mode = "quick" if args.quick else "full"
    started = time.perf_counter()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f} s] {message}", file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="tune-ledger-bench-") as folder:
        found, skipped = guardrails(PLANS[mode], Path(folder), not args.no_campaign, log)
    report: dict[str, Any] = {
        "mode": mode,
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "tune_ledger": __version__},
        "data": ledgers.SYNTHETIC,
        "elapsed_s": round(time.perf_counter() - started, 1),
        "guardrails": {g.name: g.report() for g in found},
        "skipped": skipped,
        "passed": sum(g.passed for g in found),
    }  # fmt: skip
    if args.json:
        print(json.dumps(report, indent=1, sort_keys=True, ensure_ascii=False))
    else:
        for guardrail in found:
            print(guardrail.line())
        for name, reason in skipped.items():
            print(f"SKIP  {name:<34} {reason}")
        print(f"{report['passed']} of {len(found)} guardrails pass ({report['elapsed_s']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
