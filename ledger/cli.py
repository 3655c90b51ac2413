"""The `tune-ledger` command line: parse, call the library, print, map errors to exit codes.

This module holds the group, its global options and the entry point; the commands live in
`cli_steps` (setup and protocol steps), `cli_attempts` (attempts and verdicts) and
`cli_views` (read-only views, audit, report), each adding itself with `register(cli)`.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

import click

from ledger import __version__, cli_attempts, cli_git, cli_steps, cli_views, codec
from ledger.cli_base import Ctx, pass_ctx
from ledger.errors import EXIT_CODES, BadInput, LedgerError

__all__ = ["Ctx", "cli", "main", "pass_ctx"]

_HELP_EPILOG = "Exit codes: " + "; ".join(f"{k} {v}" for k, v in sorted(EXIT_CODES.items()))
_GLOBAL_WITH_VALUE = ("--root", "--idempotency-key")
_GLOBAL_OPTIONS = ("--json", *_GLOBAL_WITH_VALUE)


@click.group(epilog=_HELP_EPILOG)
@click.option("--root", envvar="TUNE_LEDGER_ROOT", default=".", show_default=True,
              help="Folder that holds custom/ (env TUNE_LEDGER_ROOT).")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object on stdout (also when refusing).")
@click.option("--idempotency-key", "key", default=None, metavar="KEY",
              help="Retry-safe key: a repeated command with the same key returns the original "
              "result without appending again; the same key with other arguments is refused.")
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


cli_steps.register(cli)
cli_attempts.register(cli)
cli_views.register(cli)

# --- commands defined in their own modules -----------------------------------------------------
# Each module adds its commands to `cli` with a register(cli) function (one line each here).
cli_git.register(cli)
__import__("ledger.cli_priors", fromlist=["register"]).register(cli)

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
    as_json = _wants_json(args)
    try:
        cli.main(args=args, prog_name="tune-ledger", standalone_mode=False, obj=list(args))
    except click.exceptions.Exit as e:
        raise SystemExit(e.exit_code) from None
    except click.exceptions.NoArgsIsHelpError as e:
        _fail(as_json, BadInput("no command given",
                                hint=f"see `{e.ctx.command_path} --help`" if e.ctx else None))
    except click.UsageError as e:
        _fail(as_json, BadInput(e.format_message(), hint=_usage_hint(e)))
    except (click.Abort, KeyboardInterrupt):
        _fail(as_json, LedgerError("interrupted; an append is atomic, so run `tune-ledger "
                                   "status OP` to see what was recorded"))
    except BadInput as e:
        if e.hint is None:  # every error says what to do next
            e.hint = f"fix the value, then run it again (see `{_command_path(args)} --help`)"
        _fail(as_json, e)
    except LedgerError as e:
        _fail(as_json, e)
    except SystemExit:
        raise
    except BrokenPipeError:  # the reader went away (`| head`): nothing left to tell it
        _silence_stdout()
        raise SystemExit(1) from None
    except Exception as e:  # a bug: one line of cause, never a bare traceback
        cause = " ".join(str(e).split())
        _fail(as_json, LedgerError(f"unexpected error (a bug): {type(e).__name__}: {cause}",
                                   hint="please report it with the command line"))


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
        command = group.commands.get(arg)
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
        return ("global options go before the command: "
                "tune-ledger [--json] [--root DIR] [--idempotency-key KEY] COMMAND ...")
    path = error.ctx.command_path if error.ctx else "tune-ledger"
    return f"see `{path} --help`"


def _wants_json(args: list[str]) -> bool:
    """True when the arguments ask for JSON output (also when `--json` was misplaced)."""
    return "--json" in args
