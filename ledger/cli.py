"""The `tune-ledger` command line: parse, call the library, print, map errors to exit codes."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import click

from ledger import __version__, codec, inputs, runner, views
from ledger.api import OpLedger, Outcome, list_ops
from ledger.errors import EXIT_CODES, BadInput, LedgerError
from ledger.events import FAILURES, SKILLS, STAGES, Origin
from ledger.units import parse_time_us
from stages import commands as cmd

_HELP_EPILOG = "Exit codes: " + "; ".join(f"{k} {v}" for k, v in sorted(EXIT_CODES.items()))


class Ctx:
    """Global options shared by every command."""

    def __init__(self, root: str, as_json: bool, key: str | None) -> None:
        self.root = Path(root)
        self.as_json = as_json
        self.key = key

    def op(self, name: str, *, must_exist: bool = True) -> OpLedger:
        """The op's ledger, refusing an unknown op (exit 2)."""
        ledger = OpLedger(self.root, name)
        if must_exist:
            ledger.require()
        return ledger

    def emit(self, data: dict[str, Any], human: str) -> None:
        """Print one JSON object (with --json) or human text."""
        if self.as_json:
            click.echo(codec.canonical_json(data))
        else:
            click.echo(human)


pass_ctx = click.make_pass_decorator(Ctx)


@click.group(epilog=_HELP_EPILOG)
@click.option("--root", envvar="TUNE_LEDGER_ROOT", default=".", show_default=True,
              help="Folder that holds custom/ (env TUNE_LEDGER_ROOT).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
@click.option("--idempotency-key", "key", default=None,
              help="Retry-safe key: a repeated command with the same key returns the original "
              "result without appending again.")
@click.version_option(__version__, prog_name="tune-ledger")
@click.pass_context
def cli(context: click.Context, root: str, as_json: bool, key: str | None) -> None:
    """Event-sourced ledger for PyPTO performance-tuning campaigns (custom/<op>/events.jsonl).

    Every step is an event; the protocol's rules (R1-R11) gate each step; MEMORY.md is
    re-rendered after every change. Start with `tune-ledger init OP`, then follow `status`.
    """
    context.obj = Ctx(root, as_json, key)


def _execute(ctx: Ctx, op: str, command: Any, *, must_exist: bool = True) -> Outcome:
    ledger = ctx.op(op, must_exist=must_exist)
    return ledger.execute(command, key=ctx.key, command_line=_command_line())


def _command_line() -> str:
    return "tune-ledger " + " ".join(sys.argv[1:])


def _report_events(ctx: Ctx, op: str, outcome: Outcome, extra: dict[str, Any], human: str) -> None:
    data: dict[str, Any] = {
        "op": op,
        "events": [{"id": e.id, "type": e.type} for e in outcome.events],
        "warnings": list(outcome.warnings),
        "replayed": outcome.replayed,
    }
    data.update(extra)
    lines = [human, *(f"warning: {w}" for w in outcome.warnings)]
    if outcome.replayed:
        lines.append("(idempotency key seen before: this is the original result)")
    ctx.emit(data, "\n".join(lines))


# --- init, evidence, activation --------------------------------------------------------------


@cli.command()
@click.argument("op")
@pass_ctx
def init(ctx: Ctx, op: str) -> None:
    """Create custom/OP/events.jsonl and MEMORY.md for a new op."""
    outcome = _execute(ctx, op, cmd.Init(op=op), must_exist=False)
    _report_events(ctx, op, outcome, {"created": True},
                   f"initialized {op}: next, record evidence (tune-ledger evidence compare/layout)")


@cli.group()
def evidence() -> None:
    """Record accuracy evidence for the current implementation (R1)."""


def _impl_path(ledger: OpLedger, impl: str | None) -> Path:
    return Path(impl) if impl else ledger.dir / f"{ledger.op}_impl.py"


@evidence.command("compare")
@click.argument("op")
@click.option("--output", "outputs", multiple=True, metavar="NAME=true|false",
              help="One output's all_close (repeat for every output).")
@click.option("--max-diff", "max_diffs", multiple=True, metavar="NAME=X",
              help="An output's largest difference.")
@click.option("--from-json", "from_json", metavar="FILE",
              help="Read outputs [{name, all_close, max_diff}] from a JSON file.")
@click.option("--run", "run_cmd", metavar="CMD",
              help="Run CMD; it prints a JSON object with outputs (its exit code is recorded).")
@click.option("--impl", metavar="PATH", help="Implementation file (default custom/OP/OP_impl.py).")
@pass_ctx
def evidence_compare(ctx: Ctx, op: str, outputs: Sequence[str], max_diffs: Sequence[str],
                     from_json: str | None, run_cmd: str | None, impl: str | None) -> None:
    """Record an E2E tensor compare: every output's all_close (R1)."""
    ledger = ctx.op(op)
    impl_path = _impl_path(ledger, impl)
    digest = inputs.file_digest(impl_path)
    _one_source(outputs=bool(outputs), from_json=from_json, run=run_cmd)
    if from_json:
        doc, file_digest = inputs.read_json_file(from_json)
        checks = inputs.outputs_from_document(doc, from_json)
        origin = runner.origin_of_file(from_json, file_digest, doc if isinstance(doc, dict) else {})
    elif run_cmd:
        run = runner.run_command(run_cmd, ctx.root)
        doc = runner.last_json_object(run.output)
        if doc is None:
            raise BadInput(f"{run_cmd!r} printed no JSON object with outputs "
                           f"(exit code {run.exit_code})")
        checks = inputs.outputs_from_document(doc, run_cmd)
        origin = runner.origin_of_run(run, doc)
    else:
        checks = inputs.parse_outputs(outputs, max_diffs)
        origin = Origin(level="reported")
    command = cmd.RecordCompare(outputs=checks, impl_path=str(impl_path), impl_digest=digest,
                                origin=origin)
    outcome = ledger.execute(command, key=ctx.key, command_line=_command_line())
    passed = all(c.all_close for c in checks)
    _report_events(ctx, op, outcome, {"passed": passed, "impl_digest": digest},
                   f"compare evidence recorded: {'all_close' if passed else 'NOT all_close'}")


def _one_source(**given: bool | str | None) -> None:
    named = [name for name, value in given.items() if value]
    if len(named) > 1:
        raise BadInput(f"give only one of {', '.join('--' + n.replace('_', '-') for n in named)}")


@evidence.command("layout")
@click.argument("op")
@click.option("--exit-code", "exit_code", type=int, help="The layout check's exit code.")
@click.option("--run", "run_cmd", metavar="CMD", help="Run the layout check; record its exit code.")
@click.option("--impl", metavar="PATH", help="Implementation file (default custom/OP/OP_impl.py).")
@pass_ctx
def evidence_layout(ctx: Ctx, op: str, exit_code: int | None, run_cmd: str | None,
                    impl: str | None) -> None:
    """Record a layout check's exit code (R1)."""
    ledger = ctx.op(op)
    impl_path = _impl_path(ledger, impl)
    digest = inputs.file_digest(impl_path)
    if (exit_code is None) == (run_cmd is None):
        raise BadInput("give exactly one of --exit-code N or --run CMD")
    if run_cmd is not None:
        run = runner.run_command(run_cmd, ctx.root)
        code, origin = run.exit_code, runner.origin_of_run(run)
    else:
        assert exit_code is not None  # narrowed by the check above
        code, origin = exit_code, Origin(level="reported")
    command = cmd.RecordLayout(exit_code=code, impl_path=str(impl_path), impl_digest=digest,
                               origin=origin)
    outcome = ledger.execute(command, key=ctx.key, command_line=_command_line())
    _report_events(ctx, op, outcome, {"exit_code": code, "impl_digest": digest},
                   f"layout evidence recorded: exit {code}")


@cli.command()
@click.argument("op")
@click.option("--impl", metavar="PATH", help="Implementation file (default custom/OP/OP_impl.py).")
@pass_ctx
def activate(ctx: Ctx, op: str, impl: str | None) -> None:
    """Open tuning once both pieces of evidence pass for the current implementation (R1).

    On failure the failed check is recorded and the exit code is 5: hand back to the
    orchestrator.
    """
    ledger = ctx.op(op)
    digest = inputs.file_digest(_impl_path(ledger, impl))
    outcome = ledger.execute(cmd.Activate(impl_digest=digest), key=ctx.key,
                             command_line=_command_line())
    _report_events(ctx, op, outcome, {"activated": True},
                   "activation passed: next, write the target sheet (tune-ledger target)")


# --- target sheet and limits ------------------------------------------------------------------


@cli.command()
@click.argument("op")
@click.option("--baseline", metavar="TIME",
              help="Measured baseline time (71.1us, 0.07ms; bare=ms).")
@click.option("--shape", metavar="SHAPE", required=True, help="The SPEC's P0 shape measured.")
@click.option("--target", "target", metavar="TIME", required=True, help="Target time.")
@click.option("--target-source", type=click.Choice(["spec", "upstream", "torch-eager"]),
              required=True, help="Where the target comes from (precedence: spec, upstream, "
              "torch-eager).")
@click.option("--source-ref", metavar="TEXT", help="The SPEC line or kernel the target cites.")
@click.option("--config", "config", metavar="JSON", default="{}", show_default=True,
              help="The config the baseline was measured with (the first best).")
@click.option("--tool", metavar="NAME", help="The tool that measured the baseline.")
@click.option("--metric", default="time", show_default=True,
              help="Which execution time is compared.")
@click.option("--cube-m", type=int, help="M of the cube problem (selects the cube tile table row).")
@click.option("--util", metavar="PCT", help="Core utilization % of the baseline measurement.")
@click.option("--bubble", metavar="PCT", help="Bubble rate % of the baseline measurement.")
@click.option("--run", "run_cmd", metavar="CMD",
              help="Measure the baseline by running CMD (prints a measurement JSON object).")
@click.option("--from-json", "from_json", metavar="FILE", help="Read the baseline measurement.")
@pass_ctx
def target(ctx: Ctx, op: str, baseline: str | None, shape: str, target: str,
           target_source: str, source_ref: str | None, config: str, tool: str | None,
           metric: str, cube_m: int | None, util: str | None, bubble: str | None,
           run_cmd: str | None, from_json: str | None) -> None:
    """Write the Performance target sheet: baseline, target, source, tile limits (R3)."""
    ledger = ctx.op(op)
    config_value = inputs.parse_json_object(config, "--config")
    _one_source(baseline=baseline, run=run_cmd, from_json=from_json)
    util_pct, bubble_pct = inputs.parse_percent(util, "--util"), inputs.parse_percent(
        bubble, "--bubble")
    if run_cmd or from_json:
        doc, origin = _measurement_document(ctx, run_cmd, from_json)
        samples = runner.times_of(doc, run_cmd or from_json or "")
        util_pct = _doc_percent(doc, "util_pct", util_pct)
        bubble_pct = _doc_percent(doc, "bubble_pct", bubble_pct)
        tool = tool or doc.get("tool")
    elif baseline is not None:
        samples = (parse_time_us(baseline, "--baseline"),)
        origin = Origin(level="reported", tool=tool)
    else:
        raise BadInput("give the baseline: --baseline TIME, --run CMD or --from-json FILE")
    median = views.median(samples)
    command = cmd.SetTarget(
        baseline_us=median, shape=shape, target_us=parse_time_us(target, "--target"),
        target_source=target_source, source_ref=source_ref, config=config_value,
        origin=origin, metric=metric, cube_m=cube_m, baseline_samples_us=samples,
        util_pct=util_pct, bubble_pct=bubble_pct,
    )
    outcome = ledger.execute(command, key=ctx.key, command_line=_command_line())
    speedup = median / command.target_us
    _report_events(
        ctx, op, outcome,
        {"baseline_us": median, "target_us": command.target_us, "required_speedup": speedup},
        f"target sheet written: baseline {views.fmt_us(median)}, target "
        f"{views.fmt_us(command.target_us)}, required speedup {speedup:.2f}x (Baseline/Target)",
    )


def _doc_percent(doc: dict[str, Any], key: str, given: float | None) -> float | None:
    value = doc.get(key)
    return given if value is None else inputs.parse_percent(str(value), key)


def _measurement_document(ctx: Ctx, run_cmd: str | None, from_json: str | None
                          ) -> tuple[dict[str, Any], Origin]:
    if run_cmd:
        run = runner.run_command(run_cmd, ctx.root)
        doc = runner.last_json_object(run.output)
        if doc is None:
            raise BadInput(f"{run_cmd!r} printed no measurement JSON (exit code {run.exit_code})",
                           hint="the command must print a JSON object with times_us")
        return doc, runner.origin_of_run(run, doc)
    assert from_json is not None  # the caller checked one source is given
    doc_any, digest = inputs.read_json_file(from_json)
    if not isinstance(doc_any, dict):
        raise BadInput(f"{from_json} must hold a JSON object")
    return doc_any, runner.origin_of_file(from_json, digest, doc_any)


@cli.command()
@click.argument("op")
@click.option("--what", type=click.Choice(["vec", "cube"]), required=True)
@click.option("--limit", "limit", metavar="VALUE", required=True,
              help="New limit: an int for vec (per axis), a JSON cube tile list for cube.")
@click.option("--basis", metavar="TEXT", required=True,
              help="The profiling data that justifies the relaxation.")
@pass_ctx
def relax(ctx: Ctx, op: str, what: str, limit: str, basis: str) -> None:
    """Relax a tile-shape upper limit, recording its basis (R3)."""
    value = inputs.parse_json_value(limit, "--limit")
    outcome = _execute(ctx, op, cmd.Relax(what=what, limit=value, basis=basis))
    _report_events(ctx, op, outcome, {"what": what, "limit": value},
                   f"{what} tile limit relaxed to {limit}")


# --- skills, stages, points ---------------------------------------------------------------------


@cli.group()
def skill() -> None:
    """Load and unload skills (R2: 2 base + 1 tune at most)."""


_SKILL = click.Choice(list(SKILLS))


@skill.command("load")
@click.argument("op")
@click.argument("name", type=_SKILL)
@pass_ctx
def skill_load(ctx: Ctx, op: str, name: str) -> None:
    """Load a skill (R2)."""
    outcome = _execute(ctx, op, cmd.LoadSkill(name=name))
    _report_events(ctx, op, outcome, {"skill": name, "loaded": True}, f"loaded {name}")


@skill.command("unload")
@click.argument("op")
@click.argument("name", type=_SKILL)
@pass_ctx
def skill_unload(ctx: Ctx, op: str, name: str) -> None:
    """Unload a skill (R2)."""
    outcome = _execute(ctx, op, cmd.UnloadSkill(name=name))
    _report_events(ctx, op, outcome, {"skill": name, "loaded": False}, f"unloaded {name}")


@cli.group()
def stage() -> None:
    """Enter and exit stages: frontend -> swimlane -> incore -> algorithm (R4)."""


_STAGE = click.Choice(list(STAGES))


@stage.command("enter")
@click.argument("op")
@click.argument("name", type=_STAGE)
@pass_ctx
def stage_enter(ctx: Ctx, op: str, name: str) -> None:
    """Enter the next stage (R4)."""
    outcome = _execute(ctx, op, cmd.EnterStage(stage=name))
    _report_events(ctx, op, outcome, {"stage": name}, f"entered {name}")


@stage.command("exit")
@click.argument("op")
@click.argument("name", type=_STAGE)
@click.option("--reason", default="", help="Why the stage ends.")
@click.option("--user-stop", is_flag=True, help="Exit because the user said stop (R4).")
@pass_ctx
def stage_exit(ctx: Ctx, op: str, name: str, reason: str, user_stop: bool) -> None:
    """Exit the current stage when an exit condition holds (R4)."""
    outcome = _execute(ctx, op, cmd.ExitStage(stage=name, reason=reason, by_user=user_stop))
    condition = outcome.events[-1].data.get("condition") if outcome.events else None
    _report_events(ctx, op, outcome, {"stage": name, "condition": condition},
                   f"exited {name} ({condition})")


@cli.group()
def point() -> None:
    """Open and close optimization points of the current stage (R7)."""


@point.command("open")
@click.argument("op")
@click.argument("name")
@pass_ctx
def point_open(ctx: Ctx, op: str, name: str) -> None:
    """Open an optimization point in the current stage (R7)."""
    outcome = _execute(ctx, op, cmd.OpenPoint(name=name))
    _report_events(ctx, op, outcome, {"point": name}, f"opened point {name}")


@point.command("close")
@click.argument("op")
@click.argument("name")
@click.option("--reason", required=True, help="Why the point is closed.")
@click.option("--not-applicable", is_flag=True, help="The point does not apply to this op.")
@pass_ctx
def point_close(ctx: Ctx, op: str, name: str, reason: str, not_applicable: bool) -> None:
    """Close an optimization point (R7)."""
    outcome = _execute(ctx, op, cmd.ClosePoint(name=name, reason=reason,
                                               not_applicable=not_applicable))
    _report_events(ctx, op, outcome, {"point": name}, f"closed point {name}")


# --- attempts -----------------------------------------------------------------------------------


def _attempt_id(outcome: Outcome) -> str:
    for event in outcome.events:
        if event.type == "attempt.started":
            return views.attempt_id(event.id)
    raise LedgerError("the command appended no attempt (bug)")


@cli.command()
@click.argument("op")
@click.option("--config", "config", metavar="JSON", required=True, help="The full config.")
@click.option("--prior", metavar="SOURCE", required=True,
              help="Where the candidate comes from (a kernel file:line, another op's ledger...).")
@click.option("--override-retry", metavar="REASON", help="Measure a config again anyway (R9).")
@pass_ctx
def candidate(ctx: Ctx, op: str, config: str, prior: str, override_retry: str | None) -> None:
    """Start a candidate: a full config from a prior (R7 candidate phase)."""
    value = inputs.parse_json_object(config, "--config")
    outcome = _execute(ctx, op, cmd.ProposeCandidate(config=value, prior=prior,
                                                      override=override_retry))
    attempt = _attempt_id(outcome)
    _report_events(ctx, op, outcome, {"attempt": attempt},
                   f"attempt {attempt} started: measure it, then tune-ledger verify {op} {attempt}")


@cli.command("try")
@click.argument("op")
@click.option("--set", "assignment", metavar="PARAM=VALUE",
              help="Change one parameter of the best config (VALUE is JSON).")
@click.option("--algorithm", metavar="TEXT", help="Describe an algorithm change (algorithm stage).")
@click.option("--impl", metavar="PATH", help="The changed implementation (algorithm changes).")
@click.option("--override-retry", metavar="REASON", help="Try an idea again anyway (R9).")
@pass_ctx
def try_(ctx: Ctx, op: str, assignment: str | None, algorithm: str | None, impl: str | None,
         override_retry: str | None) -> None:
    """Start one change: a single-parameter mutation or an algorithm change (R5, R6)."""
    if (assignment is None) == (algorithm is None):
        raise BadInput("give exactly one of --set PARAM=VALUE or --algorithm TEXT")
    command: Any
    if assignment is not None:
        param, text = inputs.split_assignment(assignment, "--set")
        command = cmd.TryMutation(param=param, value=inputs.parse_json_value(text, "--set"),
                                  override=override_retry)
    else:
        assert algorithm is not None  # narrowed by the check above
        ledger = ctx.op(op)
        digest = inputs.file_digest(_impl_path(ledger, impl)) if impl else None
        command = cmd.TryAlgorithm(description=algorithm, impl_digest=digest,
                                   override=override_retry)
    outcome = _execute(ctx, op, command)
    attempt = _attempt_id(outcome)
    _report_events(ctx, op, outcome, {"attempt": attempt},
                   f"attempt {attempt} started: measure it, then tune-ledger verify {op} {attempt}")


@cli.command()
@click.argument("op")
@click.argument("attempt")
@click.option("--output", "outputs", multiple=True, metavar="NAME=true|false")
@click.option("--max-diff", "max_diffs", multiple=True, metavar="NAME=X")
@click.option("--layout-exit", type=int, help="The layout check's exit code.")
@click.option("--time", "times", multiple=True, metavar="TIME",
              help="A measured time (repeat for samples; 71.1us, 0.07ms; bare=ms).")
@click.option("--util", metavar="PCT", help="Core utilization %.")
@click.option("--bubble", metavar="PCT", help="Bubble rate %.")
@click.option("--perf-dir", metavar="DIR", help="Read DIR/measurement.json (the adapter's output).")
@click.option("--from-json", "from_json", metavar="FILE", help="Read a measurement JSON file.")
@click.option("--run", "run_cmd", metavar="CMD", help="Run the verifier; it prints a measurement.")
@click.option("--timeout", "timeout_s", type=float, help="Wall-time limit for --run (seconds).")
@pass_ctx
def verify(ctx: Ctx, op: str, attempt: str, outputs: Sequence[str], max_diffs: Sequence[str],
           layout_exit: int | None, times: Sequence[str], util: str | None, bubble: str | None,
           perf_dir: str | None, from_json: str | None, run_cmd: str | None,
           timeout_s: float | None) -> None:
    """Record the verifier's result; the ledger computes the verdict (R8)."""
    ledger = ctx.op(op)
    attempt_id = views.resolve_attempt(ledger.load().state, attempt)
    _one_source(output=bool(outputs or times), perf_dir=perf_dir, from_json=from_json,
                run=run_cmd)
    command: Any
    if run_cmd or perf_dir or from_json:
        command = _verify_from_document(ctx, attempt_id, run_cmd, perf_dir, from_json, timeout_s)
    else:
        if layout_exit is None:
            raise BadInput("give --layout-exit N (the layout check's exit code)")
        command = cmd.Verify(
            attempt=attempt_id, outputs=inputs.parse_outputs(outputs, max_diffs),
            layout_exit=layout_exit, times_us=inputs.parse_times(times),
            origin=Origin(level="reported"), util_pct=inputs.parse_percent(util, "--util"),
            bubble_pct=inputs.parse_percent(bubble, "--bubble"),
        )
    outcome = ledger.execute(command, key=ctx.key, command_line=_command_line())
    _report_result(ctx, op, attempt_id, outcome)


def _verify_from_document(ctx: Ctx, attempt: str, run_cmd: str | None, perf_dir: str | None,
                          from_json: str | None, timeout_s: float | None) -> Any:
    if run_cmd:
        run = runner.run_command(run_cmd, ctx.root, timeout_s)
        origin = runner.origin_of_run(run)
        if run.timed_out:
            return cmd.Fail(attempt=attempt, category="timeout",
                            detail=f"no result within {timeout_s} s", origin=origin)
        doc = runner.last_json_object(run.output)
        if doc is None:
            return cmd.Fail(attempt=attempt, category="runtime", origin=origin,
                            detail=f"exit {run.exit_code}: {run.output[-runner.OUTPUT_TAIL:]}")
        origin = runner.origin_of_run(run, doc)
        source = run_cmd
    elif perf_dir:
        doc, path, digest = runner.perf_dir_document(perf_dir)
        origin, source = runner.origin_of_file(path, digest, doc), path
    else:
        assert from_json is not None  # one source was given
        doc_any, digest = inputs.read_json_file(from_json)
        if not isinstance(doc_any, dict):
            raise BadInput(f"{from_json} must hold a JSON object")
        doc, origin, source = doc_any, runner.origin_of_file(from_json, digest, doc_any), from_json
    failure = runner.failure_of(doc)
    if failure is not None and failure[0] not in ("accuracy", "layout"):
        return cmd.Fail(attempt=attempt, category=failure[0], detail=failure[1], origin=origin)
    layout = doc.get("layout_exit")
    if not isinstance(layout, int):
        raise BadInput(f"{source} has no integer layout_exit")
    return cmd.Verify(
        attempt=attempt, outputs=inputs.outputs_from_document(doc, source), layout_exit=layout,
        times_us=runner.times_of(doc, source), origin=origin,
        util_pct=_doc_percent(doc, "util_pct", None),
        bubble_pct=_doc_percent(doc, "bubble_pct", None),
        metrics={k: float(v) for k, v in (doc.get("metrics") or {}).items()
                 if isinstance(v, int | float) and not isinstance(v, bool)},
    )


def _report_result(ctx: Ctx, op: str, attempt: str, outcome: Outcome) -> None:
    result = views.attempt_result(outcome.events)
    result["attempt"] = attempt
    human = views.describe_result(attempt, result)
    _report_events(ctx, op, outcome, result, human)


@cli.command()
@click.argument("op")
@click.argument("attempt")
@click.option("--category", type=click.Choice(list(FAILURES)), required=True)
@click.option("--detail", default="", help="What failed (error message, log excerpt).")
@pass_ctx
def fail(ctx: Ctx, op: str, attempt: str, category: str, detail: str) -> None:
    """Record that the pending attempt failed; the verdict is rollback (R8)."""
    ledger = ctx.op(op)
    attempt_id = views.resolve_attempt(ledger.load().state, attempt)
    outcome = ledger.execute(cmd.Fail(attempt=attempt_id, category=category, detail=detail),
                             key=ctx.key, command_line=_command_line())
    _report_result(ctx, op, attempt_id, outcome)


@cli.command()
@click.argument("op")
@click.argument("attempt")
@click.option("--reason", required=True, help="Why the attempt is given up (e.g. interrupted).")
@pass_ctx
def abandon(ctx: Ctx, op: str, attempt: str, reason: str) -> None:
    """Give up the pending attempt without a result (e.g. after a crash) (R6)."""
    ledger = ctx.op(op)
    attempt_id = views.resolve_attempt(ledger.load().state, attempt)
    outcome = ledger.execute(cmd.Abandon(attempt=attempt_id, reason=reason), key=ctx.key,
                             command_line=_command_line())
    _report_events(ctx, op, outcome, {"attempt": attempt_id, "abandoned": True},
                   f"attempt {attempt_id} abandoned")


@cli.command()
@click.argument("op")
@click.option("--reason", required=True, help="The user's reason to stop.")
@pass_ctx
def stop(ctx: Ctx, op: str, reason: str) -> None:
    """Stop the campaign at the user's request (R10); tuning steps are refused afterwards."""
    outcome = _execute(ctx, op, cmd.Stop(reason=reason))
    _report_events(ctx, op, outcome, {"stopped": "user"}, "campaign stopped by the user")


@cli.command()
@click.argument("op")
@click.option("--text", required=True, help="The note.")
@pass_ctx
def note(ctx: Ctx, op: str, text: str) -> None:
    """Record a free-text note in the ledger."""
    outcome = _execute(ctx, op, cmd.AddNote(text=text))
    _report_events(ctx, op, outcome, {}, "note recorded")


@cli.command()
@click.argument("op")
@click.argument("key")
@click.argument("value")
@click.option("--reason", default="", help="Why the policy changes.")
@pass_ctx
def policy(ctx: Ctx, op: str, key: str, value: str, reason: str) -> None:
    """Set a policy threshold of this op (VALUE is JSON); later decisions apply it."""
    parsed = inputs.parse_json_value(value, "VALUE")
    outcome = _execute(ctx, op, cmd.SetPolicy(key=key, value=parsed, reason=reason))
    _report_events(ctx, op, outcome, {"key": key, "value": parsed}, f"policy {key} = {value}")


# --- views ----------------------------------------------------------------------------------


@cli.command()
@click.argument("op")
@pass_ctx
def status(ctx: Ctx, op: str) -> None:
    """Show where the campaign stands and which commands are allowed next."""
    state = ctx.op(op).load().state
    data = views.status(state)
    ctx.emit(data, views.status_text(data))


@cli.command()
@click.argument("op")
@pass_ctx
def resume(ctx: Ctx, op: str) -> None:
    """Tell an interrupted agent exactly where it stopped, what to reload and what to run next."""
    state = ctx.op(op).load().state
    data = views.resume(state)
    ctx.emit(data, views.resume_text(data))


@cli.command()
@click.argument("op")
@click.option("--stage", "stage_name", type=_STAGE, help="Only this stage.")
@click.option("--verdict", type=click.Choice(["rollback", "no-gain", "adopt", "target-reached"]))
@click.option("--failure", type=click.Choice(list(FAILURES)))
@click.option("--limit", type=click.IntRange(min=1), help="Only the last N attempts.")
@pass_ctx
def log(ctx: Ctx, op: str, stage_name: str | None, verdict: str | None, failure: str | None,
        limit: int | None) -> None:
    """List the attempts of the campaign, filterable by stage, verdict and failure."""
    state = ctx.op(op).load().state
    rows = views.attempt_rows(state, stage=stage_name, verdict=verdict, failure=failure,
                              limit=limit)
    ctx.emit({"op": op, "attempts": rows}, views.log_text(rows))


@cli.command()
@click.argument("op")
@pass_ctx
def render(ctx: Ctx, op: str) -> None:
    """Re-render MEMORY.md's managed sections from the ledger (e.g. after a merge)."""
    changed = ctx.op(op).render_memory()
    ctx.emit({"op": op, "changed": changed},
             "MEMORY.md updated" if changed else "MEMORY.md already up to date")


@cli.command()
@click.argument("op")
@pass_ctx
def check(ctx: Ctx, op: str) -> None:
    """Fail (exit 7) when MEMORY.md is stale or a managed section was edited by hand."""
    from ledger import audit

    findings = audit.check_memory_file(ctx.op(op))
    _emit_findings(ctx, op, findings, "MEMORY.md is up to date")


@cli.command()
@click.argument("op", required=False)
@click.option("--all", "all_ops", is_flag=True, help="Audit every op under custom/.")
@pass_ctx
def audit(ctx: Ctx, op: str | None, all_ops: bool) -> None:
    """Verify integrity, legality of every step, every verdict and MEMORY.md (exit 7 if not)."""
    from ledger import audit as audit_mod

    if (op is None) == (not all_ops):
        raise BadInput("give OP or --all")
    names = list_ops(ctx.root) if all_ops else [op or ""]
    reports: list[dict[str, Any]] = []
    show_progress = not ctx.as_json and sys.stderr.isatty() and len(names) > 1
    with click.progressbar(names, label="auditing", file=sys.stderr,
                           hidden=not show_progress) as bar:
        for name in bar:
            reports.append(audit_mod.audit_op(ctx.op(name)))
    findings = [f"{r['op']}: {f}" for r in reports for f in r["findings"]]
    data = {"ops": reports, "clean": not findings}
    human = "\n".join([views.audit_text(r) for r in reports])
    if findings:
        if ctx.as_json:
            click.echo(codec.canonical_json({**data, "error": "audit found problems",
                                             "code": 7, "rule": None}))
        else:
            click.echo(human)
        raise SystemExit(7)
    ctx.emit(data, human)


def _emit_findings(ctx: Ctx, op: str, findings: list[str], clean: str) -> None:
    if findings:
        if ctx.as_json:
            click.echo(codec.canonical_json({"op": op, "findings": findings, "code": 7,
                                             "error": findings[0], "rule": None}))
        else:
            click.echo("\n".join(findings))
        raise SystemExit(7)
    ctx.emit({"op": op, "findings": []}, clean)


@cli.command()
@click.argument("op")
@pass_ctx
def report(ctx: Ctx, op: str) -> None:
    """Write custom/OP/OP_tuning_report.md and its chart, and record the report (R4)."""
    from ledger import reporting

    ledger = ctx.op(op)
    written = reporting.write_report(ledger, key=ctx.key, command_line=_command_line())
    ctx.emit({"op": op, **written}, f"report written: {written['path']}")


# --- entry point ---------------------------------------------------------------------------


def _fail(as_json: bool, error: LedgerError) -> NoReturn:
    if as_json:
        click.echo(codec.canonical_json(error.to_json()))
    else:
        click.echo(error.human(), err=True)
    raise SystemExit(error.code)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the CLI; every failure becomes one message and an exit code of DESIGN §5."""
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in args[: _first_command_index(args)]
    try:
        cli.main(args=args, prog_name="tune-ledger", standalone_mode=False)
    except click.exceptions.Exit as e:
        raise SystemExit(e.exit_code) from None
    except click.UsageError as e:
        _fail(as_json, BadInput(e.format_message(),
                                hint="see `tune-ledger COMMAND --help`"))
    except click.Abort:
        _fail(as_json, LedgerError("interrupted"))
    except LedgerError as e:
        _fail(as_json, e)
    except SystemExit:
        raise
    except Exception as e:  # a bug: one line of cause, never a bare traceback
        _fail(as_json, LedgerError(f"unexpected error (a bug): {type(e).__name__}: {e}"))


def _first_command_index(args: list[str]) -> int:
    names = set(cli.commands)
    for i, arg in enumerate(args):
        if arg in names:
            return i
    return len(args)

