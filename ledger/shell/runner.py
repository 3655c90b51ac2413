"""Running a command for the ledger (`--run`), and reading a measurement document into the
command it records (where a document comes from: ledger/shell/documents.py).

A measurement document is the JSON object a verifier prints (the PyPTO adapter in tools/ does):
`times_us` (list) or `time_us`, optional `util_pct`, `bubble_pct`, `metrics` {name: number},
`outputs` [{name, all_close, max_diff}], `layout_exit`, `failure` (null or a category, or
{category, detail}), `tool`, `tool_version`, `artefacts` {name: sha256}.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
from attrs import frozen

from ledger import processes
from ledger.domain import inputs
from ledger.errors import BadInput
from ledger.log import codec
from ledger.schema.events import FAILURES, Binding, Device, Origin, OriginLevel, OutputCheck
from stages import commands as cmd

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


@frozen
class Document:
    """A measurement document, its provenance, and where it came from (for messages)."""

    doc: dict[str, Any]
    origin: Origin
    source: str


def run_command(
    command: str, cwd: Path, timeout_s: float | None = None, env: Mapping[str, str] | None = None
) -> CommandRun:
    """Run `command` through the shell in `cwd` and record what really happened (R11)."""
    try:
        done = processes.run(
            ("/bin/sh", "-c", command), cwd=cwd, env=env, limits=processes.Limits(wall_s=timeout_s)
        )
    except OSError as e:
        raise BadInput(f"cannot run {command!r}: {e}") from e
    return command_run(done, command)


def command_run(done: processes.Finished, command: str | None = None) -> CommandRun:
    """The record of a finished run (`command`: how it is shown, default its argv quoted); a
    run killed at its wall time has exit code -9."""
    return CommandRun(
        command=done.command if command is None else command,
        exit_code=-9 if done.timed_out else done.exit_code,
        output=done.text(),
        output_digest=done.output_digest,
        duration_s=done.duration_s,
        timed_out=done.timed_out,
    )


def origin_of_run(
    run: CommandRun, doc: dict[str, Any] | None = None, *, level: OriginLevel = "ran"
) -> Origin:
    """Provenance of a command the ledger ran itself: "ran" for an ad-hoc `--run CMD` nobody
    declared, "measured" (`level`) for the op's declared verifier or layout check."""
    doc = doc or {}
    return Origin(
        level=level,
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
        raise BadInput(
            f"measurement reports unknown failure {category!r}",
            hint=f"use one of {', '.join(FAILURES)}",
        )
    return str(category), detail


def times_of(doc: dict[str, Any], source: str) -> tuple[float, ...]:
    """The time samples (µs) of a measurement document."""
    raw = doc.get("times_us")
    if raw is None and doc.get("time_us") is not None:
        raw = [doc["time_us"]]
    if not isinstance(raw, list) or not raw:
        raise BadInput(
            f"{source} has no times_us list or time_us value",
            hint="a measurement gives times_us: [µs, ...] (or time_us: µs)",
        )
    for sample in raw:
        # Strict types (R11): a JSON number; its range is the event schema's check.
        if not _is_number(sample):
            raise BadInput(
                f"{source} has a non-numeric time in times_us: {codec.canonical_json(sample)}",
                rule="R11",
                hint="times_us must hold JSON numbers of microseconds, finite and > 0",
            )
    return tuple(float(t) for t in raw)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def split_verify_command(
    attempt: str, perf: Document, outputs: tuple[OutputCheck, ...], layout_exit: int
) -> cmd.Verify:
    """Verify from two runs: the accuracy evidence given by hand (reported), the times from a
    perf folder (artefact); each piece keeps its own provenance (R11)."""
    times = times_of(perf.doc, perf.source)
    return cmd.Verify(
        attempt=attempt,
        outputs=outputs,
        layout_exit=layout_exit,
        times_us=times,
        origin=perf.origin,
        accuracy_origin=Origin(level="reported"),
        util_pct=percent_of(perf.doc, "util_pct"),
        bubble_pct=percent_of(perf.doc, "bubble_pct"),
        metrics=_metrics(perf.doc, perf.source),
        binding=binding_of(perf.doc),
        device=device_of(perf.doc, perf.source),
    )


def reported_error(doc: dict[str, Any]) -> str | None:
    """The error a document reports instead of a result (the adapter's bad arguments)."""
    if "error" in doc and not any(k in doc for k in ("times_us", "time_us", "failure")):
        return str(doc["error"])
    return None


def refuse_reported_error(doc: dict[str, Any], source: str) -> None:
    """Raise BadInput when the document reports an error instead of a result."""
    error = reported_error(doc)
    if error is not None:
        raise BadInput(
            f"{source} reported an error: {error}",
            hint="fix the verifier's arguments and run it again",
        )


def percent_of(doc: dict[str, Any], key: str, given: float | None = None) -> float | None:
    """A percentage from a document (R11: within [0, 100]), else `given`."""
    value = doc.get(key)
    if value is None:
        return given
    if not _is_number(value) or not math.isfinite(value) or not 0 <= value <= 100:
        raise BadInput(
            f"{key} is {codec.canonical_json(value)}, not a percentage within [0, 100]",
            rule="R11",
            hint=f"{key} must be a JSON number within [0, 100]",
        )
    return float(value)


def verify_command(attempt: str, document: Document) -> cmd.Verify | cmd.Fail:
    """The Verify (or Fail, for a run failure) command a measurement document gives (R8)."""
    doc, source, origin = document.doc, document.source, document.origin
    refuse_reported_error(doc, source)
    failure = failure_of(doc)
    if failure is not None and failure[0] not in ("accuracy", "layout"):
        return cmd.Fail(attempt=attempt, category=failure[0], detail=failure[1], origin=origin)
    layout = doc.get("layout_exit")
    if not isinstance(layout, int) or isinstance(layout, bool):
        raise BadInput(
            f"{source} has no integer layout_exit",
            hint="the measurement needs layout_exit (the layout check's exit code)",
        )
    binding = binding_of(doc)
    if origin.level == "measured" and binding is None:  # an ad-hoc run stays "ran"
        # The ledger ran it, but cannot tell which config or kernel it measured (R11).
        origin = attrs.evolve(origin, level="unbound")
    return cmd.Verify(
        attempt=attempt,
        binding=binding,
        outputs=inputs.outputs_from_document(doc, source),
        layout_exit=layout,
        times_us=times_of(doc, source),
        origin=origin,
        util_pct=percent_of(doc, "util_pct"),
        bubble_pct=percent_of(doc, "bubble_pct"),
        metrics=_metrics(doc, source),
        device=device_of(doc, source),
    )


def device_of(doc: dict[str, Any], source: str = "the measurement") -> Device | None:
    """The device a measurement document names (`device: {run_mode, soc, id, cann, driver}`);
    None when it names none (device unknown). BadInput when `device` is not such an object."""
    raw = doc.get("device")
    if raw is None:
        return None
    unknown = sorted(set(raw) - set(_DEVICE_FIELDS)) if isinstance(raw, dict) else []
    if not isinstance(raw, dict) or unknown:
        raise BadInput(
            f"{source}: device must be an object with {', '.join(_DEVICE_FIELDS)}"
            + (f" (unknown fields {', '.join(unknown)})" if unknown else f", got {raw!r}"),
            rule="R11",
            hint="the verifier names the device it ran on as "
            '{"run_mode": "sim|npu", "soc": ..., "id": ..., "cann": ..., "driver": ...}, '
            "each null when unknown, or leaves `device` out",
        )
    try:
        return Device(**{name: raw.get(name) for name in _DEVICE_FIELDS})
    except ValueError as e:
        raise BadInput(f"{source}: device: {e}", rule="R11") from e


_DEVICE_FIELDS = ("run_mode", "soc", "id", "cann", "driver")


def binding_of(doc: dict[str, Any]) -> Binding | None:
    """What a measurement document says it ran: its config and kernel digest (R11)."""
    config, digest = doc.get("config"), doc.get("impl_digest")
    config = config if isinstance(config, dict) else None
    digest = digest if isinstance(digest, str) else None
    if config is None and digest is None:
        return None
    return Binding(config=config, impl_digest=digest)


def _metrics(doc: dict[str, Any], source: str) -> dict[str, float]:
    raw = doc.get("metrics") or {}
    if not isinstance(raw, dict):
        raise BadInput(f"{source}: metrics must be an object of numbers")
    return {
        str(k): float(v)
        for k, v in raw.items()
        if isinstance(v, int | float) and not isinstance(v, bool)
    }


def tail(text: str, size: int) -> str:
    """The last `size` characters of a command's output."""
    return text[-size:]
