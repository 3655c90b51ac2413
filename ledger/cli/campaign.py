"""The frame of the search: skills, stages and points, and the bookkeeping commands (stop, note,
policy); the steps before it are in `activation`, the target sheet in `target`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from ledger.cli.base import (
    OP,
    Ctx,
    StrictGroup,
    event_data,
    pass_ctx,
    person_option,
    run_step,
)
from ledger.domain import inputs
from ledger.errors import BadInput
from ledger.schema.events import SKILLS, STAGES
from ledger.shell.api import OpLedger, StepResult
from stages import commands as cmd

SKILL = click.Choice(list(SKILLS))
STAGE = click.Choice(list(STAGES))


def _record(ctx: Ctx, op: str, command: Any, data: dict[str, Any], human: str) -> None:
    """`run_step` for a command built from the arguments alone, printed as `data` and `human`
    whatever it appended."""
    run_step(ctx, op, lambda _ledger: command, lambda _outcome: (data, human))


# --- skills, stages, points ---------------------------------------------------------------------


@click.group(cls=StrictGroup)
def skill() -> None:
    """Load and unload skills (R2: 2 base + 1 tune at most)."""


@skill.command("load")
@click.argument("op", type=OP)
@click.argument("name", type=SKILL, metavar="SKILL")
@pass_ctx
def skill_load(ctx: Ctx, op: str, name: str) -> None:
    """Load a skill (R2): pypto-op-perf-tune, perf-analyzer, tune-frontend|swimlane|incore."""
    _record(ctx, op, cmd.LoadSkill(name=name), {"skill": name, "loaded": True}, f"loaded {name}")


@skill.command("unload")
@click.argument("op", type=OP)
@click.argument("name", type=SKILL, metavar="SKILL")
@pass_ctx
def skill_unload(ctx: Ctx, op: str, name: str) -> None:
    """Unload a skill (R2)."""
    _record(
        ctx, op, cmd.UnloadSkill(name=name), {"skill": name, "loaded": False}, f"unloaded {name}"
    )


@click.group(cls=StrictGroup)
def stage() -> None:
    """Enter and exit stages: frontend -> swimlane -> incore -> algorithm (R4)."""


@stage.command("enter")
@click.argument("op", type=OP)
@click.argument("name", type=STAGE, metavar="STAGE")
@pass_ctx
def stage_enter(ctx: Ctx, op: str, name: str) -> None:
    """Enter the next stage (R4): frontend, swimlane, incore, algorithm."""
    _record(ctx, op, cmd.EnterStage(stage=name), {"stage": name}, f"entered {name}")


@stage.command("exit")
@click.argument("op", type=OP)
@click.argument("name", type=STAGE, metavar="STAGE")
@click.option("--reason", default="", help="Why the stage ends.")
@click.option("--user-stop", is_flag=True, help="Exit because the user said stop (R4).")
@click.option(
    "--hand-back",
    is_flag=True,
    help="Leave the algorithm stage by handing the result back with the report (R4).",
)
@pass_ctx
def stage_exit(ctx: Ctx, op: str, name: str, reason: str, user_stop: bool, hand_back: bool) -> None:
    """Exit the current stage when an exit condition holds (R4)."""

    def present(outcome: StepResult) -> tuple[dict[str, Any], str]:
        condition = event_data(outcome, "stage.exited").get("condition")
        return {"stage": name, "condition": condition}, f"exited {name} ({condition})"

    run_step(
        ctx,
        op,
        lambda _ledger: cmd.ExitStage(
            stage=name, reason=reason, by_user=user_stop, hand_back=hand_back
        ),
        present,
    )


@click.group(cls=StrictGroup)
def point() -> None:
    """Open and close optimization points of the current stage (R7)."""


@point.command("open")
@click.argument("op", type=OP)
@click.argument("name")
@click.option(
    "--knob",
    "knobs",
    multiple=True,
    metavar="K",
    help="A knob of the op manifest the point tunes (repeat; default: the knob NAME).",
)
@pass_ctx
def point_open(ctx: Ctx, op: str, name: str, knobs: tuple[str, ...]) -> None:
    """Open an optimization point in the current stage for named knobs (R5, R7)."""
    _record(ctx, op, cmd.OpenPoint(name=name, knobs=knobs), {"point": name}, f"opened point {name}")


@point.command("close")
@click.argument("op", type=OP)
@click.argument("name")
@click.option("--reason", required=True, help="Why the point is closed.")
@click.option("--not-applicable", is_flag=True, help="The point does not apply to this op.")
@pass_ctx
def point_close(ctx: Ctx, op: str, name: str, reason: str, not_applicable: bool) -> None:
    """Close an optimization point (R7)."""

    def present(outcome: StepResult) -> tuple[dict[str, Any], str]:
        outcome_name = event_data(outcome, "point.closed").get("outcome")
        return {"point": name, "outcome": outcome_name}, f"closed point {name} ({outcome_name})"

    run_step(
        ctx,
        op,
        lambda _ledger: cmd.ClosePoint(name=name, reason=reason, not_applicable=not_applicable),
        present,
    )


# --- bookkeeping --------------------------------------------------------------------------------


@click.command()
@click.argument("op", type=OP)
@click.option("--reason", required=True, help="The user's reason to stop.")
@pass_ctx
def stop(ctx: Ctx, op: str, reason: str) -> None:
    """Stop the campaign at the user's request (R10); tuning steps are refused afterwards."""
    _record(
        ctx,
        op,
        cmd.Stop(reason=reason),
        {"stopped": "user"},
        "campaign stopped by the user; status, log, report and audit still work",
    )


@click.command()
@click.argument("op", type=OP)
@click.option("--text", required=True, help="The note.")
@pass_ctx
def note(ctx: Ctx, op: str, text: str) -> None:
    """Record a free-text note in the ledger."""
    _record(ctx, op, cmd.AddNote(text=text), {}, "note recorded")


# `policy`'s budget options (R10, stages/budget.py) and the policy key each sets.
_BUDGET_OPTIONS = (
    ("max_evaluations", "max_evaluations"),
    ("max_device_seconds", "max_device_seconds"),
    ("max_wall_seconds", "max_wall_seconds"),
)


@click.command()
@click.argument("op", type=OP)
@click.argument("key", required=False)
@click.argument("value", required=False)
@click.option("--reason", default="", help="Why the policy changes.")
@click.option(
    "--max-evaluations",
    metavar="N|off",
    help="R10 budget: stop the campaign after N verifier results (measured or failed).",
)
@click.option(
    "--max-device-seconds",
    metavar="S|off",
    help="R10 budget: stop after S seconds of verifier runs (their recorded durations).",
)
@click.option(
    "--max-wall-seconds",
    metavar="S|off",
    help="R10 budget: stop S seconds after the target sheet (recorded event times).",
)
@person_option
@pass_ctx
def policy(
    ctx: Ctx,
    op: str,
    key: str | None,
    value: str | None,
    reason: str,
    max_evaluations: str | None,
    max_device_seconds: str | None,
    max_wall_seconds: str | None,
    person: str | None,
) -> None:
    """Set a policy threshold of this op (KEY VALUE, VALUE as JSON), or its budgets (R10:
    `--max-evaluations N --max-device-seconds S --max-wall-seconds S`, `off` to remove one;
    defaults off); later decisions apply it.

    Lowering a guard (require_measured false, a larger noise_threshold, a lower
    bootstrap_confidence, a larger budget or one off) is a person's decision: give --person
    NAME and --reason TEXT.
    """
    given = {"max_evaluations": max_evaluations, "max_device_seconds": max_device_seconds}
    given["max_wall_seconds"] = max_wall_seconds
    settings: list[tuple[str, Any]] = []
    if key is not None:
        if value is None:
            raise BadInput(
                "give the policy's VALUE after its KEY", hint="e.g. policy OP noise_threshold 0.02"
            )
        settings.append((key, inputs.parse_json_value(value, "VALUE")))
    for option, policy_key in _BUDGET_OPTIONS:
        text = given[option]
        if text is not None:
            flag = "--" + option.replace("_", "-")
            parsed = None if text.strip().lower() == "off" else inputs.parse_json_value(text, flag)
            settings.append((policy_key, parsed))
    if not settings:
        raise BadInput(
            "nothing to set: give KEY VALUE or a budget option",
            hint="e.g. policy OP noise_threshold 0.02, or policy OP --max-evaluations 300",
        )
    if len(settings) > 1 and ctx.key is not None:
        raise BadInput("an idempotency key stands for one setting: give one per command")
    commands = [
        cmd.SetPolicy(key=name, value=parsed, reason=reason, person=person)
        for name, parsed in settings
    ]
    ledger = ctx.op(op)
    if len(commands) > 1:
        _refuse_any(ledger, commands)
    earlier = [ledger.execute(c, command_line=ctx.command_line()) for c in commands[:-1]]

    def present(outcome: StepResult) -> tuple[dict[str, Any], str]:
        if earlier:  # each setting is its own batch: report every one's events
            events = tuple(e for step in earlier for e in step.events) + outcome.events
            outcome = StepResult(events=events, warnings=outcome.warnings, state=outcome.state)
        values = {c.key: c.value for c in commands}
        data = {"key": key, "value": values[key]} if len(commands) == 1 and key else {}
        return {**data, "set": values}, "; ".join(f"policy {k} = {v!r}" for k, v in values.items())

    run_step(ctx, op, lambda _ledger: commands[-1], present)


def _refuse_any(ledger: OpLedger, commands: Sequence[cmd.SetPolicy]) -> None:
    """Decide every setting before any is written: when one is refused, none is (its rule and
    exit code as the CLI reports any refusal). The settings are of distinct keys, each decided
    on the state before them all (a budget's check reads only its own key)."""
    from stages.decide import decide
    from stages.refusal import Refusal

    state = ledger.load().state
    for command in commands:
        decision = decide(state, command)
        if isinstance(decision, Refusal):
            raise decision.to_error()


# The commands this module adds to `tune-ledger` (ledger.cli names them, to load them lazily).
COMMANDS = (skill, stage, point, stop, note, policy)
