"""The Performance target sheet (R3): baseline, target and source, and relaxed tile limits.

`target --from-spec` takes the P0 shape, the target, its metric and the baseline config from
SPEC.md's manifest and measures the baseline with the manifest's verifier, so nothing of the
sheet is retyped by hand (R3, R11): `OpLedger.target_from_spec` (ledger/shell/workflows.py).
"""

from __future__ import annotations

import sys
from typing import Any

import attrs
import click

from ledger.cli.base import (
    OP,
    Ctx,
    count_option,
    event_data,
    one_source,
    pass_ctx,
    person_option,
    run_step,
    run_workflow,
)
from ledger.domain import inputs
from ledger.domain.hints import Fill, arg
from ledger.domain.samples import median
from ledger.domain.units import parse_time_us
from ledger.errors import BadInput
from ledger.projections.formatting import fmt_time_us
from ledger.schema.events import Origin
from ledger.shell import documents, runner
from ledger.shell.api import OpLedger, StepResult
from stages import commands as cmd


@click.command()
@click.argument("op", type=OP)
@click.option(
    "--baseline",
    metavar="TIME",
    help="Measured baseline time (71.1us, 0.07ms, 1e-4s; a bare number is ms).",
)
@click.option(
    "--shape",
    metavar="SHAPE",
    help="The SPEC's P0 shape measured: [32, 32, 1, 256] (as in SPEC.md) or 32x32x1x256.",
)
@click.option("--target", "target_time", metavar="TIME", help="Target time.")
@click.option(
    "--target-source",
    type=click.Choice(["spec", "upstream", "torch-eager"]),
    help="Where the target comes from (precedence: spec, upstream, torch-eager).",
)
@click.option("--source-ref", metavar="TEXT", help="The SPEC line or kernel the target cites.")
@click.option(
    "--config",
    "config",
    metavar="JSON",
    default="{}",
    show_default=True,
    help="The config the baseline was measured with (the first best).",
)
@click.option("--tool", metavar="NAME", help="The tool that measured the baseline.")
@click.option(
    "--metric", default="time", show_default=True, help="Which execution time is compared."
)
@click.option(
    "--cube-m", type=count_option(), help="M of the cube problem (selects the cube tile table row)."
)
@click.option("--util", metavar="PCT", help="Core utilization % of the baseline measurement.")
@click.option("--bubble", metavar="PCT", help="Bubble rate % of the baseline measurement.")
@click.option(
    "--run",
    "run_cmd",
    metavar="CMD",
    help="Measure the baseline by running CMD (prints a measurement JSON object).",
)
@click.option("--from-json", "from_json", metavar="FILE", help="Read the baseline measurement.")
@click.option(
    "--from-spec",
    is_flag=True,
    help="Take shape, target, metric and baseline config from SPEC.md's manifest and measure "
    "the baseline with its verifier (provenance measured).",
)
@click.option(
    "--python",
    "python",
    default=sys.executable,
    show_default=True,
    help="With --from-spec: the interpreter the verifier template's {python} stands for.",
)
@pass_ctx
def target(
    ctx: Ctx,
    op: str,
    baseline: str | None,
    shape: str | None,
    target_time: str | None,
    target_source: str | None,
    source_ref: str | None,
    config: str,
    tool: str | None,
    metric: str,
    cube_m: int | None,
    util: str | None,
    bubble: str | None,
    run_cmd: str | None,
    from_json: str | None,
    from_spec: bool,
    python: str,
) -> None:
    """Write the Performance target sheet: baseline, target, source, tile limits (R3).

    With --from-spec the ledger reads SPEC.md's manifest (P0 shape, perf_target,
    baseline_config, verifier) and measures the baseline itself; otherwise give --shape,
    --target, --target-source and the baseline (--baseline, --run or --from-json).
    """
    if from_spec:
        given = {
            "--baseline": baseline,
            "--shape": shape,
            "--target": target_time,
            "--target-source": target_source,
            "--run": run_cmd,
            "--from-json": from_json,
            "--config": None if config == "{}" else config,
            "--metric": None if metric == "time" else metric,
        }
        clash = [name for name, value in given.items() if value is not None]
        if clash:
            raise BadInput(
                f"--from-spec takes these from SPEC.md's manifest: drop {', '.join(clash)}",
                hint="edit SPEC.md's front matter to change them",
            )
        run_workflow(
            ctx,
            op,
            lambda ledger, asked: ledger.target_from_spec(
                python=python, cube_m=cube_m, invocation=asked
            ),
            _present,
        )
        return
    missing = [
        n
        for n, v in (
            ("--shape", shape),
            ("--target", target_time),
            ("--target-source", target_source),
        )
        if v is None
    ]
    if missing:
        raise BadInput(
            f"Missing option {', '.join(repr(m) for m in missing)}: give "
            f"{'it' if len(missing) == 1 else 'them'}, or --from-spec to take the sheet from "
            "SPEC.md's manifest",
            hint=f"e.g. {arg('shape', '[32,32,1,256]')} {arg('target', '5us')} "
            f"{arg('target_source', 'spec')}",
        )
    shape_text = inputs.parse_shape(shape or "", "--shape")
    config_value = inputs.parse_json_object(config, "--config")
    one_source(baseline=baseline, run=run_cmd, from_json=from_json)
    target_us = parse_time_us(target_time or "", "--target")
    util_pct = inputs.parse_percent(util, "--util")
    bubble_pct = inputs.parse_percent(bubble, "--bubble")
    if baseline is None and not (run_cmd or from_json):
        raise BadInput(
            f"give the baseline: {arg('baseline', Fill('TIME'))}, {arg('run', Fill('CMD'))} or "
            f"{arg('from_json', Fill('FILE'))}",
            hint=f"e.g. {arg('baseline', '71.1us')} (the measured time on the P0 shape)",
        )
    baseline_us = None if baseline is None else parse_time_us(baseline, "--baseline")

    def build(_ledger: OpLedger) -> Any:
        if baseline_us is not None:
            samples: tuple[float, ...] = (baseline_us,)
            origin = Origin(level="reported", tool=tool)
            util_value, bubble_value = util_pct, bubble_pct
            device = None  # a typed-in baseline names no device: unknown
        else:
            document = documents.given_document(from_json, run_cmd, ctx.root, "times_us")
            samples = runner.times_of(document.doc, document.source)
            origin = document.origin
            if tool and not origin.tool:
                origin = attrs.evolve(origin, tool=tool)
            util_value = runner.percent_of(document.doc, "util_pct", util_pct)
            bubble_value = runner.percent_of(document.doc, "bubble_pct", bubble_pct)
            device = runner.device_of(document.doc, document.source)
        return cmd.SetTarget(
            baseline_us=median(samples),
            shape=shape_text,
            target_us=target_us,
            target_source=target_source or "",
            source_ref=source_ref,
            config=config_value,
            origin=origin,
            metric=metric,
            cube_m=cube_m,
            baseline_samples_us=samples,
            util_pct=util_value,
            bubble_pct=bubble_value,
            device=device,
        )

    run_step(ctx, op, build, _present)


@click.command()
@click.argument("op", type=OP)
@click.option(
    "--what",
    type=click.Choice(["vec", "cube"]),
    required=True,
    help="Which tile-shape limit: vec (per axis) or cube (the shape table).",
)
@click.option(
    "--limit",
    "limit",
    metavar="VALUE",
    required=True,
    help="New limit: an int for vec (per axis), a JSON cube tile list for cube.",
)
@click.option(
    "--basis",
    metavar="TEXT",
    required=True,
    help="The profiling data that justifies the relaxation.",
)
@click.option(
    "--evidence",
    "evidence",
    metavar="ATTEMPT",
    multiple=True,
    help="A measured attempt of this op the relaxation rests on (repeat for more; an id or a "
    "unique prefix). Required unless a person relaxes without evidence (--person).",
)
@person_option
@pass_ctx
def relax(
    ctx: Ctx,
    op: str,
    what: str,
    limit: str,
    basis: str,
    evidence: tuple[str, ...],
    person: str | None,
) -> None:
    """Relax a tile-shape upper limit on measured evidence, recording its basis (R3).

    Name the measured attempts it rests on (--evidence, their times are shown on the target
    sheet); a relaxation without evidence is a person's decision (--person NAME).
    """
    from ledger.projections.attempt_rows import resolve_attempt

    value = inputs.parse_json_value(limit, "--limit")

    def build(ledger: OpLedger) -> Any:
        state = ledger.load().state
        attempts = tuple(_evidence_attempt(state, op, text) for text in evidence)
        return cmd.Relax(what=what, limit=value, basis=basis, evidence=attempts, person=person)

    def _evidence_attempt(state: Any, op: str, text: str) -> str:
        try:
            return resolve_attempt(state, text)
        except BadInput as e:
            raise BadInput(
                f"--evidence {text}: {e.message} (not an attempt of op {op})",
                hint=f"name a measured attempt of {op}: tune-ledger log {op} lists them",
            ) from e

    run_step(
        ctx,
        op,
        build,
        lambda outcome: (
            {
                "what": what,
                "limit": value,
                "evidence": list(event_data(outcome, "limit.relaxed").get("evidence", [])),
            },
            f"{what} tile limit relaxed to {limit}",
        ),
    )


def _present(outcome: StepResult) -> tuple[dict[str, Any], str]:
    data = event_data(outcome, "target.set")
    base, goal = data.get("baseline_us"), data.get("target_us")
    speedup = base / goal if base and goal else None
    human = (
        f"target sheet written: baseline {fmt_time_us(base)}, target "
        f"{fmt_time_us(goal)}, required speedup {speedup or 0:.2f}x (Baseline/Target)"
    )
    return {"baseline_us": base, "target_us": goal, "required_speedup": speedup}, human


COMMANDS = (target, relax)
