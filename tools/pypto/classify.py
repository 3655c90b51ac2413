"""Sorting a failed run into the ledger's failure categories (DESIGN §2 "failure").

Pure: decides from what the parent observed (limits hit, exit status) and the error text the
child reported. Order matters: a limit the parent enforced is the cause, whatever the child
printed while it was being killed.
"""

from __future__ import annotations

import re
import signal

from attrs import frozen

# The compiler's own words for a pass that cannot place the config (PYPTO.md).
COMPILE_MARKERS = ("Run pass failed",)
# pypto's error codes of the compiler (`Errcode: FFFFFF!`, any `F...` code).
_ERRCODE = re.compile(r"Errcode: (F[0-9A-F]*)!")
# One line of pypto's own log: `[ERROR] PYPTO(pid):date time [file:line][PASS]:[Where]:message`.
_LOG_ERROR = re.compile(
    r"^\[ERROR\] PYPTO\(\d+\):\S+ \S+ \[[^\]]*\](?:\[[^\]]*\])?:(?:\[[^\]]*\]:)?(.*)$"
)
OOM_MARKERS = ("MemoryError", "std::bad_alloc", "Cannot allocate memory", "out of memory")


@frozen
class Failure:
    """A classified failure: one of compile, timeout, oom, accuracy, runtime."""

    category: str
    detail: str


def first_log_error(log_text: str) -> str | None:
    """The first `[ERROR]` message of pypto's own log, without its prefix: the line that says
    why (e.g. an operand over the UB size); the lines after it are consequences."""
    for line in log_text.splitlines():
        match = _LOG_ERROR.match(line.strip())
        if match and match.group(1).strip():
            return match.group(1).strip()
    return None


def classify(
    *,
    timed_out: bool,
    over_memory: bool,
    returncode: int | None,
    error_text: str,
    wall_limit_s: float,
    memory_limit_mb: float,
    peak_rss_mb: float,
    log_text: str = "",
) -> Failure | None:
    """The failure of a run that did not complete normally, or None when it did.

    `log_text` is pypto's own log of the run: its first error names the cause of a compile
    failure, where the exception carries only an error code and a C++ stack.
    """
    text = error_text.strip()
    if timed_out:
        return Failure("timeout", f"no result within the wall-time limit of {wall_limit_s:g} s")
    if over_memory:
        return Failure(
            "oom",
            f"resident memory reached {peak_rss_mb:.0f} MB, over the limit "
            f"of {memory_limit_mb:.0f} MB; the run was stopped",
        )
    code = _ERRCODE.search(text)
    if code or any(marker in text for marker in COMPILE_MARKERS):
        return Failure("compile", _compile_detail(text, code, log_text))
    if any(marker in text for marker in OOM_MARKERS):
        return Failure("oom", _excerpt(text, OOM_MARKERS))
    if returncode == -signal.SIGKILL:
        # We did not send it (no limit was hit): on Linux that is the kernel's OOM killer.
        return Failure(
            "oom",
            f"the run was killed by SIGKILL (kernel OOM killer?) at {peak_rss_mb:.0f} MB resident",
        )
    if returncode not in (0, None) or text:
        return Failure("runtime", _excerpt(text, ()) or f"the run exited with {returncode}")
    return None


def _compile_detail(text: str, code: re.Match[str] | None, log_text: str) -> str:
    cause = first_log_error(log_text)
    where = f"Errcode {code.group(1)}" if code else "compiler"
    if cause:
        return f"{cause} ({where}: Run pass failed)"
    # No log: the first line of the error that is not a stack frame.
    for line in text.splitlines():
        line = line.strip()
        if line and "Errcode" not in line and not re.search(r"\(\+?0x|\[0x", line):
            return f"{line} ({where})"
    return _excerpt(text, COMPILE_MARKERS)


def _excerpt(text: str, markers: tuple[str, ...], width: int = 600) -> str:
    """The part of a long error text around the first marker (or its end)."""
    for marker in markers:
        at = text.find(marker)
        if at >= 0:
            start = max(0, text.rfind("\n", 0, max(0, at - 200)) + 1)
            return text[start : start + width].strip()
    return text[-width:].strip()
