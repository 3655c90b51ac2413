"""The `tune-ledger priors` command: parse, gather and rank priors, print candidates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ledger.cli.base import OP, Ctx, count_option, pass_ctx
from ledger.domain.hints import Step
from ledger.errors import BadInput
from ledger.log import codec
from ledger.priors.rank import proposal_json
from ledger.priors.scan_result import ScanResult
from ledger.schema.vocabulary import CONFIG_STAGES
from ledger.shell.priors_load import Gathered, gather


def candidate_command(op: str, config: dict[str, Any], prior: str) -> str:
    """The step that starts one candidate, rendered for the caller at the output's edge (a
    shell-quoted `tune-ledger candidate` command, or the `candidate` tool's call over MCP)."""
    return str(Step("candidate", op, config=config, prior=prior))


def _scan_json(scan: ScanResult) -> dict[str, Any]:
    return {
        "files": scan.files,
        "findings": len(scan.findings),
        "skipped": [{"where": s.where, "call": s.call, "reason": s.reason} for s in scan.skipped],
        "errors": [{"where": e.where, "reason": e.reason} for e in scan.errors],
    }


def priors_json(op: str, gathered: Gathered, root: Path) -> dict[str, Any]:
    """The JSON output: the proposal, each candidate's command, the scan and ledgers used."""
    data = proposal_json(gathered.proposal)
    data["op"] = op
    for entry in data["candidates"]:
        entry["command"] = candidate_command(op, entry["config"], entry["prior"])
    data["scan"] = _scan_json(gathered.scan)
    data["ledgers"] = list(gathered.ledgers)
    data["builtin_sources"] = dict(gathered.builtin_sources)
    return data


def priors_text(data: dict[str, Any]) -> str:
    """The human output: ranked commands, then what was left out, notes and scan problems."""
    point = f", point {data['point']}" if data["point"] else ""
    lines = [
        f"priors for {data['op']}: stage {data['stage'] or '-'}{point}; keys "
        f"{', '.join(data['keys']) or '(none)'} ({data['keys_basis']})",
        f"{len(data['candidates'])} candidate(s) of {data['count']} wanted "
        f"({data['unselected']} more eligible, {len(data['filtered'])} filtered)",
    ]
    for entry in data["candidates"]:
        lines += [
            "",
            f"{entry['rank']:2d}. score {entry['score']:.3f} "
            f"[{', '.join(entry['sources'])}] {entry['reasons'][0]}",
            f"    {entry['command']}",
        ]
        lines += [
            f"    {reason}"
            for reason in entry["reasons"][1:]
            if reason.startswith(("warning:", "learned from this op:"))
        ]
    if data["filtered"]:
        lines += ["", "filtered (not proposed):"]
        lines += [
            f"  - {codec.canonical_json(f['config'])}: {f['reason']} [{f['prior']}]"
            for f in data["filtered"]
        ]
    if data["notes"]:
        lines += ["", "notes:", *(f"  - {note}" for note in data["notes"])]
    lines += ["", data["record_text"]]
    scan = data["scan"]
    if scan["files"] or scan["errors"]:
        lines += [
            "",
            f"sources: {scan['files']} file(s) scanned, {scan['findings']} config call(s) read",
        ]
        lines += [f"  skipped {s['where']} {s['call']}: {s['reason']}" for s in scan["skipped"]]
        lines += [f"  error {e['where']}: {e['reason']}" for e in scan["errors"]]
    return "\n".join(lines)


def _keys(text: str | None) -> tuple[str, ...]:
    if text is None:
        return ()
    keys = tuple(k.strip() for k in text.split(",") if k.strip())
    if not keys:
        raise BadInput("--keys needs at least one config key, e.g. --keys vec_tile_shape")
    return keys


@click.command("priors")
@click.argument("op", type=OP)
@click.option(
    "--ledgers",
    "ledgers",
    multiple=True,
    metavar="DIR",
    help="Also learn from the ledgers under DIR (an op folder, a root with custom/, "
    "or a folder of op folders); repeatable. custom/ of --root is always read.",
)
@click.option(
    "--from-source",
    "sources",
    multiple=True,
    metavar="DIR",
    help="Scan the PyPTO kernel sources under DIR (or one .py file) for literal "
    "configs; repeatable.",
)
@click.option(
    "--keys",
    "keys_text",
    metavar="K1,K2",
    help="The config keys to propose values for (default: from the point or stage).",
)
@click.option("--point", metavar="NAME", help="Propose for this point (default: the open one).")
@click.option(
    "--stage",
    "stage_name",
    type=click.Choice(list(CONFIG_STAGES)),
    help="Propose for this stage's keys (default: the current stage).",
)
@click.option(
    "--count",
    type=count_option(),
    metavar="N",
    help="How many candidates (default: about 10 within the policy's range).",
)
@click.option("--no-builtin", is_flag=True, help="Leave out the built-in typical values.")
@pass_ctx
def priors(
    ctx: Ctx,
    op: str,
    ledgers: tuple[str, ...],
    sources: tuple[str, ...],
    keys_text: str | None,
    point: str | None,
    stage_name: str | None,
    count: int | None,
    no_builtin: bool,
) -> None:
    """Propose about 10 diverse candidate configs for the current point, with provenance (R7).

    Each candidate is the best config with one prior's values for the point's keys; configs
    already measured (R9) or beyond an unrelaxed tile limit (R3) are listed as filtered, and so
    are those that move the best config a way this op measured slower or failed; a way it
    measured faster ranks first. The last line says how the op's prior candidates fared.
    """
    gathered = gather(
        ctx.root,
        op,
        ledgers=[Path(d) for d in ledgers],
        sources=[Path(s) for s in sources],
        point=point,
        stage=stage_name,
        keys=_keys(keys_text),
        count=count,
        builtin=not no_builtin,
        ledger=ctx.op(op),
    )
    data = priors_json(op, gathered, ctx.root)
    ctx.emit(data, priors_text(data))


# The commands this module adds to `tune-ledger` (ledger.cli names them, to load them lazily).
COMMANDS = (priors,)
