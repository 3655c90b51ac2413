"""The `tune-ledger` command line: parse, call the library, print, map errors to exit codes.

This module holds the group, its global options and the entry point; the commands live in
`campaign` (setup and protocol steps), `attempts` (attempts and verdicts), `status` (status,
resume), `inspect` (log, audit, check, render, report), `git` and `priors`, each listing its
commands in `COMMANDS`. A command's module is imported only when that command runs: a process
lives for one command, and importing them all (the events' classes, the stage machines,
cattrs) took most of a `status`.
"""

from __future__ import annotations

import importlib
import io
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

import click

from ledger import __version__
from ledger.cli.base import Ctx, KeptLedgers, StrictGroup, open_ledgers, pass_ctx
from ledger.domain import hints
from ledger.errors import EXIT_CODES, BadInput, LedgerError, StorageError
from ledger.log import codec

__all__ = ["COMMAND_MODULES", "Ctx", "cli", "main", "pass_ctx", "run"]

_HELP_EPILOG = "Exit codes: " + "; ".join(f"{k} {v}" for k, v in sorted(EXIT_CODES.items()))
_GLOBAL_WITH_VALUE = ("--root", "--idempotency-key")
_GLOBAL_OPTIONS = ("--json", *_GLOBAL_WITH_VALUE)

# The module of each command, so that a command is found without importing the others' modules
# (a test keeps this equal to each module's COMMANDS).
COMMAND_MODULES: Mapping[str, tuple[str, ...]] = {
    "ledger.cli.activation": ("init", "evidence", "activate"),
    "ledger.cli.campaign": (
        "skill",
        "stage",
        "point",
        "stop",
        "note",
        "policy",
    ),
    "ledger.cli.target": ("target", "relax"),
    "ledger.cli.manifest": ("manifest",),
    "ledger.cli.attempts": ("candidate", "try", "verify", "fail", "abandon", "measure"),
    "ledger.cli.status": ("status", "resume"),
    "ledger.cli.campaign_end": ("handback", "resume-campaign"),
    "ledger.cli.inspect": ("log", "render", "check", "audit", "report"),
    "ledger.cli.git": (
        "merge-driver",
        "memory-merge-driver",
        "git-setup",
        "normalize",
        "conflicts",
        "resolve",
    ),
    "ledger.cli.priors": ("priors",),
    "ledger.cli.mcp": ("mcp",),
    "ledger.cli.agent_setup": ("agent-setup",),
    "ledger.cli.rollback": ("accept-rollback",),
    "ledger.cli.kernel": ("kernel",),
    "ledger.cli.onboarding": ("new-op", "check-op"),
    "ledger.cli.dashboard": ("dashboard",),
}


class LazyGroup(StrictGroup):
    """A group that imports a command's module when the command is first looked up (click's
    "lazily loading subcommands" pattern). Listing the commands (`--help`) and a name that is
    not a command (click then suggests close ones from every command) import them all."""

    def __init__(self, *args: Any, modules: Mapping[str, Sequence[str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.module_of = {name: module for module, names in modules.items() for name in names}

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command's name, sorted (for help)."""
        return sorted({*self.commands, *self.module_of})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command `cmd_name`, importing its module first if needed."""
        if cmd_name not in self.commands:
            module = self.module_of.get(cmd_name)
            if module is None:
                self.load_all()
            else:
                self._load(module)
        return self.commands.get(cmd_name)

    def load_all(self) -> None:
        """Import every command's module (help, completion, tests that walk the commands)."""
        for module in dict.fromkeys(self.module_of.values()):
            self._load(module)

    def _load(self, module: str) -> None:
        for command in importlib.import_module(module).COMMANDS:
            self.add_command(command)


@click.group(cls=LazyGroup, modules=COMMAND_MODULES, epilog=_HELP_EPILOG)
@click.option(
    "--root",
    envvar="TUNE_LEDGER_ROOT",
    default=".",
    show_default=True,
    help="Folder that holds custom/ (env TUNE_LEDGER_ROOT).",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON object on stdout (also when refusing)."
)
@click.option(
    "--idempotency-key",
    "key",
    default=None,
    metavar="KEY",
    help="Retry-safe key: a repeated command with the same key returns the original "
    "result without appending again; the same key with other arguments is refused.",
)
@click.version_option(__version__, prog_name="tune-ledger")
@click.pass_context
def cli(context: click.Context, root: str, as_json: bool, key: str | None) -> None:
    """Event-sourced ledger for PyPTO performance-tuning campaigns (custom/<op>/events.jsonl).

    Every step is an event; the protocol's rules (R1-R11) gate each step; MEMORY.md is
    re-rendered after every change. Start with `tune-ledger init OP`, then follow `status`.
    Global options (--json, --root, --idempotency-key) go before the command.
    """
    argv = context.obj if isinstance(context.obj, list) else None
    context.obj = Ctx(root, as_json, key, argv)


# --- entry point ---------------------------------------------------------------------------


def _fail(as_json: bool, error: LedgerError) -> NoReturn:
    if as_json:
        click.echo(codec.canonical_json(hints.render(error.to_json())))
    else:
        click.echo(hints.render_text(error.human()), err=True)
    raise SystemExit(error.code)


def run() -> None:
    """The console script (and `python -m ledger`): `main`, keeping each op's OpLedger for the
    command's duration, so that its steps (look up a retried key, resolve an attempt, decide)
    share one replay, as the MCP server's calls do."""
    token = open_ledgers.set(KeptLedgers())
    try:
        main()
    finally:
        open_ledgers.reset(token)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the CLI; every failure becomes one message and an exit code of DESIGN §5."""
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = _wants_json(args)
    try:
        _refuse_undecodable(args)
        cli.main(args=args, prog_name="tune-ledger", standalone_mode=False, obj=list(args))
    except click.exceptions.Exit as e:
        raise SystemExit(e.exit_code) from None
    except click.exceptions.NoArgsIsHelpError as e:
        _fail(
            as_json,
            BadInput(
                "no command given", hint=f"see `{e.ctx.command_path} --help`" if e.ctx else None
            ),
        )
    except click.UsageError as e:
        _fail(as_json, BadInput(e.format_message(), hint=_usage_hint(e)))
    except (click.Abort, KeyboardInterrupt):
        _fail(
            as_json,
            LedgerError(
                "interrupted; an append is atomic, so run `tune-ledger "
                "status OP` to see what was recorded"
            ),
        )
    except BadInput as e:
        if e.hint is None:  # every error says what to do next
            e.hint = f"fix the value, then run it again (see `{_command_path(args)} --help`)"
        _fail(as_json, e)
    except LedgerError as e:
        _fail(as_json, e)
    except RecursionError:
        _fail(
            as_json,
            BadInput(
                "a JSON value is nested too deeply to be a config or a measurement",
                hint="give a config of plain values (lists and objects a few levels deep)",
            ),
        )
    except OSError as e:
        _fail(as_json, _storage_error(e))
    except SystemExit:
        raise
    except BrokenPipeError:  # the reader went away (`| head`): nothing left to tell it
        _silence_stdout()
        raise SystemExit(1) from None
    except Exception as e:  # noqa: BLE001 - a bug: one line of cause, never a bare traceback
        cause = " ".join(str(e).split())
        _fail(
            as_json,
            LedgerError(
                f"unexpected error (a bug): {type(e).__name__}: {cause}",
                hint="please report it with the command line",
            ),
        )


def _refuse_undecodable(args: list[str]) -> None:
    # Python hands over bytes that are not UTF-8 as lone surrogates; they cannot be written
    # into a UTF-8 ledger, so they are bad input here rather than an encoding bug later.
    for index, arg in enumerate(args, start=1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            shown = arg.encode("utf-8", errors="backslashreplace").decode("ascii", "replace")
            raise BadInput(
                f"argument {index} is not valid UTF-8: {shown[:80]!r}",
                hint="give every argument as UTF-8 text",
            ) from None


def _storage_error(error: OSError) -> StorageError:
    where = f" ({error.filename})" if error.filename else ""
    reason = error.strerror or str(error)
    return StorageError(
        f"the file system refused a write: {reason}{where}; appends are atomic, so nothing "
        "of this command was written",
        hint="free space or fix the permissions of custom/<op>/, then run the command again "
        "(`tune-ledger status OP` shows what is recorded)",
        details={"errno": error.errno},
    )


def _silence_stdout() -> None:
    # Python flushes stdout at exit; a closed pipe would make that flush print a traceback.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        pass


def _command_path(args: list[str]) -> str:
    """`tune-ledger COMMAND [SUBCOMMAND]` as named in `args` (global options skipped)."""
    words: list[str] = []
    group: click.Group = cli
    index = 0
    while index < len(args):
        arg = args[index]
        if arg in _GLOBAL_WITH_VALUE:
            index += 2
            continue
        if arg.startswith("-"):
            index += 1
            continue
        command = group.get_command(click.Context(group), arg)
        if command is None:
            break
        words.append(arg)
        if not isinstance(command, click.Group):
            break
        group, index = command, index + 1
    return " ".join(["tune-ledger", *words])


def _usage_hint(error: click.UsageError) -> str:
    message = error.format_message()
    if "No such option" in message and any(o in message for o in _GLOBAL_OPTIONS):
        return (
            "global options go before the command: "
            "tune-ledger [--json] [--root DIR] [--idempotency-key KEY] COMMAND ..."
        )
    path = error.ctx.command_path if error.ctx else "tune-ledger"
    return f"see `{path} --help`"


def _wants_json(args: list[str]) -> bool:
    """True when the arguments ask for JSON output (also when `--json` was misplaced)."""
    return "--json" in args
