"""Running a verifier and sorting what it did three ways (R8, R11); `measure` and `verify --run`
share this one classification:
- a harness error (the verifier could not start, exit 126/127; its usage error, exit 2; its own
  bug, exit 1 without a result; a result that reports an error and measured nothing): refused
  as bad input (exit 2), nothing written, the attempt stays pending;
- a failure of the kernel, the only failure of the idea (the result names compile, timeout,
  oom, accuracy, layout or runtime, or the verifier ran past its wall-time limit or was killed
  by a signal): recorded;
- a measurement: recorded with the config and implementation digest the verifier says it ran,
  which the stage machine compares with the attempt's (bound).
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

from ledger.errors import BadInput
from ledger.schema.vocabulary import OriginLevel
from ledger.shell import runner
from stages import commands as cmd


def run_verifier(
    attempt: str, command: str, cwd: Path, timeout_s: float | None
) -> cmd.Verify | cmd.Fail:
    """Run the verifier through the shell; classify what it did (R8, R11)."""
    run = runner.run_command(command, cwd, timeout_s)
    # Through a shell, a program killed by signal N exits 128 + N.
    killed = run.exit_code - 128 if 128 < run.exit_code < 128 + 65 else None
    fix = "fix the --run command (run it by hand to see why), then verify again"
    return command_result(attempt, run, killed, timeout_s, fix)


# Exit codes that mean the verifier itself did not run as meant (POSIX shells and click).
NOT_FOUND, NOT_EXECUTABLE, USAGE, BUG = 127, 126, 2, 1


def command_result(
    attempt: str,
    run: runner.CommandRun,
    killed_by: int | None,
    timeout_s: float | None,
    fix: str,
    *,
    level: OriginLevel = "ran",
) -> cmd.Verify | cmd.Fail:
    """The Verify or Fail a verifier's run gives, or a harness error (R8, R11: sorted as the
    module says); `level` is the provenance of the run ("measured": the manifest's declared
    verifier; "ran": `--run CMD`)."""
    if run.timed_out:
        return cmd.Fail(
            attempt=attempt,
            category="timeout",
            detail=f"no result within {timeout_s:g} s",
            origin=runner.origin_of_run(run, level=level),
        )
    doc = runner.last_json_object(run.output)
    if doc is None and killed_by is not None:
        name = _signal_name(killed_by)
        return cmd.Fail(
            attempt=attempt,
            category="oom" if name == "SIGKILL" else "runtime",
            detail=f"exit {run.exit_code} (killed by {name}): {run.output[-runner.OUTPUT_TAIL :]}",
            origin=runner.origin_of_run(run, level=level),
        )
    doc = result_document(run, doc, fix, pending=attempt)
    return runner.verify_command(
        attempt,
        runner.Document(
            doc=doc,
            origin=runner.origin_of_run(run, doc, level=level),
            source=run.command,
        ),
    )


def result_document(
    run: runner.CommandRun, doc: dict[str, Any] | None, fix: str, *, pending: str | None
) -> dict[str, Any]:
    """The verifier's result document (`doc`, parsed from the run's output), or the harness
    error of a verifier that printed none or reported its own error (R11)."""
    if doc is None:
        raise harness_error(exit_cause(run.exit_code), fix, run.output, pending=pending)
    error = runner.reported_error(doc)
    if error is not None:
        raise harness_error(f"the verifier reported an error: {error}", fix, pending=pending)
    return doc


def harness_error(cause: str, fix: str, output: str = "", *, pending: str | None) -> BadInput:
    """A verifier that did not do its job: nothing is written (the attempt stays pending)."""
    tail = output.strip()[-600:]
    kept = f" and attempt {pending} stays pending" if pending else ""
    return BadInput(
        f"harness error, not a failure of the idea: {cause}; nothing was written{kept}",
        rule="R11",
        hint=fix + (f"; its output ends: {tail!r}" if tail else ""),
    )


def exit_cause(code: int) -> str:
    """What a verifier's exit code says when it printed no result (a harness error)."""
    if code == NOT_FOUND:
        return "the verifier's program was not found (exit 127)"
    if code == NOT_EXECUTABLE:
        return "the verifier's program is not executable (exit 126)"
    if code == USAGE:
        return "the verifier refused its arguments (exit 2, a usage error) and printed no result"
    if code == BUG:
        return "the verifier failed (exit 1) and printed no result: a bug of the verifier"
    return f"the verifier exited {code} and printed no measurement JSON"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
