"""What every `tune-ledger` command shares: global options, output, and running one step.

A state-changing command is a `build` (parse, measure: turn the arguments into one command of
`stages.commands`) and a `present` (turn the events it appended into the output). `run_step`
looks up the idempotency key before `build`, so a retried `verify --run` returns the original
verdict without running the verifier again (DESIGN §5).
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ledger.domain import hints
from ledger.errors import BadInput
from ledger.log import codec

# Every command imports this module, `status` included: what it needs from the API (which
# imports the events, the store and the stage machines) it imports when it runs.
if TYPE_CHECKING:
    from ledger.shell.api import OpLedger, StepResult
    from ledger.shell.workflows import Invocation

    Present = Callable[[StepResult], tuple[dict[str, Any], str]]


def _existing_folder(root: str) -> Path:
    """--root must name a folder that exists: a typo must not create a new campaign root."""
    path = Path(root)
    if not path.is_dir():
        what = "is not a folder" if path.exists() else "does not exist"
        raise BadInput(
            f"--root {root} {what}",
            hint="give the folder that holds custom/ (or set TUNE_LEDGER_ROOT); "
            "create it first for a new project",
        )
    return path


# Not subscripted: click's types are generic only since 8.2 (pyproject allows 8.1).
class OpName(click.ParamType):  # type: ignore[type-arg]
    """An op's name, checked (`check_op_name`) as the command line is parsed: before anything
    reads a file or runs, so a name such as `../x` never becomes a path."""

    name = "op"

    def convert(self, value: str, param: click.Parameter | None, ctx: click.Context | None) -> str:
        """The name, or BadInput (exit 2) saying which names are allowed."""
        from ledger.domain.units import check_op_name

        return check_op_name(value)


OP = OpName()

# Integer options are bounded, so that a value such as 2**63 is bad input (exit 2) where it is
# parsed, never an overflow deep inside (a slice, a C integer, an exit status).
INT_LIMIT = 2**31 - 1


def count_option(low: int = 1) -> click.IntRange:
    """An integer option counting something (at least `low`, at most INT_LIMIT)."""
    return click.IntRange(low, INT_LIMIT)


# `--person NAME`: who takes a decision that lowers a guard (DESIGN §3.3). The MCP server's
# tools never pass it, so an agent is refused with the command a person runs.
person_option = click.option(
    "--person",
    metavar="NAME",
    help="The person who decides this (lowering a guard is a person's decision; recorded).",
)


# A process's exit status as Python reports it: 0-255, or minus the signal that killed it.
EXIT_STATUS = click.IntRange(-255, 255)


# A caller that runs several commands, or keeps its state to the end (the MCP server,
# ledger/mcp; the console script, `ledger.cli.run`), keeps each op's OpLedger between them, so
# that its replayed state is reused; set while it runs a command. None: one per command.
open_ledgers: ContextVar[Callable[[Path, str], OpLedger] | None] = ContextVar(
    "open_ledgers", default=None
)


class KeptLedgers:
    """The OpLedger of each (root, op) used so far, opened on first use and kept (what a
    caller sets as `open_ledgers`)."""

    def __init__(self) -> None:
        self._kept: dict[tuple[Path, str], OpLedger] = {}

    def __call__(self, root: Path, op: str) -> OpLedger:
        from ledger.shell.api import OpLedger

        key = (root.resolve(), op)
        ledger = self._kept.get(key)
        if ledger is None:
            ledger = OpLedger(root, op)  # refuses an unsafe op name before it is kept
            self._kept[key] = ledger
        return ledger


class Ctx:
    """Global options shared by every command, and the arguments the process was given."""

    def __init__(
        self, root: str, as_json: bool, key: str | None, argv: Sequence[str] | None = None
    ) -> None:
        self.root = _existing_folder(root)
        self.as_json = as_json
        self.key = key
        self.argv = list(sys.argv[1:] if argv is None else argv)
        self.ledgers = open_ledgers.get()

    def op(self, name: str, *, must_exist: bool = True) -> OpLedger:
        """The op's ledger, refusing an unknown or unsafe op name (exit 2)."""
        from ledger.shell.api import OpLedger

        ledger = (
            OpLedger(self.root, name) if self.ledgers is None else self.ledgers(self.root, name)
        )
        if must_exist:
            ledger.require()
        return ledger

    def command_line(self) -> str:
        """The command as typed, recorded in each event's provenance."""
        return shlex.join(["tune-ledger", *self.argv])

    def emit(self, data: dict[str, Any], human: str) -> None:
        """Print one JSON object (with --json) or human text, its hints in the caller's terms
        (ledger/domain/hints.py)."""
        if self.as_json:
            click.echo(codec.canonical_json(hints.render(data)))
        else:
            click.echo(hints.render_text(human))

    def warn(self, warnings: Sequence[str]) -> None:
        """Warnings of a read-only command: on stderr for humans (JSON carries them inline)."""
        if not self.as_json:
            for warning in warnings:
                click.echo(f"warning: {hints.render_text(warning)}", err=True)


pass_ctx = click.make_pass_decorator(Ctx)


def request_of(context: click.Context) -> str:
    """A digest of the command's name and arguments: what an idempotency key stands for."""
    names = []
    node: click.Context | None = context
    while node is not None and node.parent is not None:
        names.append(node.info_name or "")
        node = node.parent
    body = {"command": " ".join(reversed(names)), "params": context.params}
    return codec.digest(codec.canonical_json(body).encode("utf-8"))[:32]


def run_step(
    ctx: Ctx,
    op: str,
    build: Callable[[OpLedger], Any],
    present: Present,
    *,
    must_exist: bool = True,
) -> None:
    """Build one command, append its events (or find the original result of a retried key),
    and print what happened."""
    ledger = ctx.op(op, must_exist=must_exist)
    request = request_of(click.get_current_context())
    outcome = ledger.earlier(ctx.key, request) if ctx.key is not None else None
    if outcome is None:
        command = build(ledger)
        outcome = ledger.execute(
            command, key=ctx.key, request=request, command_line=ctx.command_line()
        )
    extra, human = present(outcome)
    report_events(ctx, op, outcome, extra, human)


def run_workflow(
    ctx: Ctx, op: str, call: Callable[[OpLedger, Invocation], StepResult], present: Present
) -> None:
    """Run one of the API's workflows (it looks up the idempotency key before it runs
    anything, ledger/shell/workflows.py) and print what happened."""
    from ledger.shell.workflows import Invocation

    asked = Invocation(
        key=ctx.key,
        request=request_of(click.get_current_context()),
        command_line=ctx.command_line(),
    )
    outcome = call(ctx.op(op), asked)
    extra, human = present(outcome)
    report_events(ctx, op, outcome, extra, human)


def report_events(
    ctx: Ctx, op: str, outcome: StepResult, extra: dict[str, Any], human: str
) -> None:
    """Print a state-changing command's result: its events, warnings and own fields."""
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


def event_data(outcome: StepResult, type_name: str) -> dict[str, Any]:
    """The data of the outcome's first event of `type_name` (empty when there is none)."""
    for event in outcome.events:
        if event.type == type_name:
            return event.data
    return {}


def one_source(**given: object) -> None:
    """Refuse more than one of several mutually exclusive options (exit 2)."""
    named = [name for name, value in given.items() if value]
    if len(named) > 1:
        raise BadInput(
            f"give only one of {', '.join('--' + n.replace('_', '-') for n in named)}",
            hint="each measurement has one source",
        )


def load_state(ctx: Ctx, op: str) -> tuple[Any, list[str]]:
    """The op's replayed state and warnings about the file (a torn tail awaiting repair, a
    rollback behind MEMORY.md's back)."""
    from ledger.shell import rollback

    ledger = ctx.op(op)
    loaded = ledger.load()
    torn = loaded.position.torn
    warnings = (
        [] if torn is None else [torn_warning(ledger.path, torn.line, torn.byte_count, torn.reason)]
    )
    found = ledger.rolled_back()
    if found is not None:
        warnings.append(rollback.warning(found, op))
    return loaded.state, warnings


def _value_options(command: click.Command) -> dict[str, click.Option]:
    """Each spelling of `command`'s options that take a value, flags excluded."""
    spelled: dict[str, click.Option] = {}
    for param in command.params:
        if isinstance(param, click.Option) and not (param.is_flag or param.count):
            for name in (*param.opts, *param.secondary_opts):
                spelled[name] = param
    return spelled


def repeated_options(command: click.Command, args: Sequence[str]) -> None:
    """Refuse a single-valued option given twice (exit 2): click would keep only the last.

    `args` are the command's own arguments; a group's scan stops at its subcommand's name.
    A silently dropped `--set` is a lost change (R6), so naming both values is the point.
    """
    spelled = _value_options(command)
    seen: dict[str, list[tuple[str, str]]] = {}
    index = 0
    while index < len(args):
        token = args[index]
        index += 1
        if token == "--":
            break
        name, _, inline = token.partition("=")
        param = spelled.get(name) if token.startswith("--") else spelled.get(token)
        if param is None:
            if isinstance(command, click.Group) and not token.startswith("-"):
                break  # the subcommand: its options are its own
            continue
        if "=" in token and token.startswith("--"):
            value = inline
        else:
            value = " ".join(args[index : index + param.nargs])
            index += param.nargs
        if not param.multiple:
            seen.setdefault(param.name or name, []).append((name, value))
    for given in seen.values():
        if len(given) > 1:
            shown = " and ".join(f"{n} {v!r}" for n, v in given)
            option = given[0][0]
            raise BadInput(
                f"{option} was given {len(given)} times ({shown}); it takes one value and "
                "nothing was recorded",
                hint=f"give {option} once"
                + (": a mutation changes one parameter (R6)" if option == "--set" else ""),
            )


class StrictGroup(click.Group):
    """A group whose commands refuse a repeated single-valued option (see repeated_options)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Check the group's own options, then parse as click does."""
        repeated_options(self, args)
        return super().parse_args(ctx, args)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """Find the subcommand and check its options before click parses them."""
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None and not isinstance(command, click.Group):
            repeated_options(command, rest)
        return name, command, rest


F = TypeVar("F", bound=Callable[..., Any])


def output_options(command: F) -> F:
    """The accuracy evidence of an E2E compare, one option per output (compare and verify)."""
    command = click.option(
        "--max-diff",
        "max_diffs",
        multiple=True,
        metavar="NAME=X",
        help="An output's largest difference.",
    )(command)
    return click.option(
        "--output",
        "outputs",
        multiple=True,
        metavar="NAME=true|false",
        help="One output's all_close (repeat for every output).",
    )(command)


def torn_warning(path: object, line: int, byte_count: int, reason: str) -> str:
    """The warning about a torn tail awaiting repair (none torn: a newline to restore)."""
    if byte_count == 0:
        return f"{path}:{line}: {reason}"
    return (
        f"{path}:{line}: torn tail of {byte_count} bytes ({reason}); the next "
        "state-changing command quarantines it"
    )
