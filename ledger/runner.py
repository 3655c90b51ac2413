"""Running a verifier command for the ledger (`--run`) and reading measurement documents.

A measurement document is the JSON object a verifier prints (the PyPTO adapter in tools/ does):
`times_us` (list) or `time_us`, optional `util_pct`, `bubble_pct`, `metrics` {name: number},
`outputs` [{name, all_close, max_diff}], `layout_exit`, `failure` (null or a category, or
{category, detail}), `tool`, `tool_version`, `artefacts` {name: sha256}.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

from attrs import frozen

from ledger import codec
from ledger.errors import BadInput
from ledger.events import FAILURES, Origin

OUTPUT_TAIL = 2000  # characters of a failed command's output kept in the failure detail


@frozen
class CommandRun:
    """A command the ledger ran: its real exit code, output, digest and duration."""

    command: str
    exit_code: int
    output: str
    output_digest: str
    duration_s: float
    timed_out: bool


def run_command(command: str, cwd: Path, timeout_s: float | None = None) -> CommandRun:
    """Run `command` through the shell in `cwd` and record what really happened (R11)."""
    started = time.monotonic()
    try:
        done = subprocess.run(
            command, shell=True, cwd=cwd, capture_output=True, timeout=timeout_s, check=False
        )
        out, exit_code, timed_out = done.stdout + done.stderr, done.returncode, False
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"") + (e.stderr or b"")
        exit_code, timed_out = -9, True
    except OSError as e:
        raise BadInput(f"cannot run {command!r}: {e}") from e
    duration = time.monotonic() - started
    return CommandRun(
        command=command,
        exit_code=exit_code,
        output=out.decode("utf-8", errors="replace"),
        output_digest=codec.digest(out),
        duration_s=round(duration, 6),
        timed_out=timed_out,
    )


def origin_of_run(run: CommandRun, doc: dict[str, Any] | None = None) -> Origin:
    """Provenance level "measured": the ledger ran the command itself."""
    doc = doc or {}
    return Origin(
        level="measured",
        command=run.command,
        tool=_opt_str(doc.get("tool")),
        tool_version=_opt_str(doc.get("tool_version")),
        exit_code=run.exit_code,
        output_digest=run.output_digest,
        duration_s=run.duration_s,
    )


def origin_of_file(path: str, file_digest: str, doc: dict[str, Any] | None = None) -> Origin:
    """Provenance level "artefact": parsed from a file whose digest is recorded."""
    doc = doc or {}
    return Origin(
        level="artefact",
        command=f"file:{path}",
        tool=_opt_str(doc.get("tool")),
        tool_version=_opt_str(doc.get("tool_version")),
        output_digest=file_digest,
    )


def last_json_object(output: str) -> dict[str, Any] | None:
    """The last line of `output` that is a JSON object (verifiers may log before it)."""
    for line in reversed(output.splitlines()):
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                value = codec.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    return None


def failure_of(doc: dict[str, Any]) -> tuple[str, str] | None:
    """(category, detail) when the document reports a failed run, else None."""
    failure = doc.get("failure")
    if failure in (None, False, ""):
        return None
    if isinstance(failure, dict):
        category, detail = failure.get("category"), str(failure.get("detail", ""))
    else:
        category, detail = failure, str(doc.get("detail", ""))
    if category not in FAILURES:
        raise BadInput(f"measurement reports unknown failure {category!r}",
                       hint=f"use one of {', '.join(FAILURES)}")
    return str(category), detail


def times_of(doc: dict[str, Any], source: str) -> tuple[float, ...]:
    """The time samples (µs) of a measurement document."""
    raw = doc.get("times_us")
    if raw is None and doc.get("time_us") is not None:
        raw = [doc["time_us"]]
    if not isinstance(raw, list) or not raw:
        raise BadInput(f"{source} has no times_us list or time_us value")
    try:
        return tuple(float(t) for t in raw)
    except (TypeError, ValueError) as e:
        raise BadInput(f"{source} has a non-numeric time ({e})") from e


def perf_dir_document(directory: str) -> tuple[dict[str, Any], str, str]:
    """Read `measurement.json` from a perf folder: (document, its path, its digest)."""
    path = Path(directory) / "measurement.json"
    if not path.is_file():
        raise BadInput(
            f"{directory} has no measurement.json",
            hint="parse the artefacts first: python -m tools.pypto.run --perf-dir DIR --json "
            "> DIR/measurement.json",
        )
    data = path.read_bytes()
    try:
        doc = codec.loads(data)
    except ValueError as e:
        raise BadInput(f"{path} is not valid JSON ({e})") from e
    if not isinstance(doc, dict):
        raise BadInput(f"{path} must hold a JSON object")
    return doc, os.fspath(path), codec.digest(data)


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)
