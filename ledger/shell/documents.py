"""Where a measurement document comes from: a JSON file (`--from-json`), a perf folder
(`--perf-dir`: its measurement.json, or a raw PyPTO output folder the adapter parses), or the
output of a command the ledger ran (`--run`); each with its provenance (R11)."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Any

from ledger import processes
from ledger.domain import inputs
from ledger.errors import BadInput
from ledger.log import codec, safe_files
from ledger.shell import runner


def file_document(path: str) -> runner.Document:
    """A measurement or evidence document read from a JSON file (provenance "artefact")."""
    doc, digest = inputs.read_json_file(path)
    if not isinstance(doc, dict):
        raise BadInput(f"{path} must hold a JSON object", hint="see `tune-ledger verify --help`")
    return runner.Document(doc=doc, origin=runner.origin_of_file(path, digest, doc), source=path)


def given_document(
    from_json: str | None, run: str | None, root: Path, what: str
) -> runner.Document:
    """The document read from the JSON file `from_json`, else the one the command `run`
    printed, run in `root` (it must hold `what`)."""
    if from_json:
        return file_document(from_json)
    return run_document(runner.run_command(run or "", root), what)


def dir_document(directory: str, root: Path | None = None) -> runner.Document:
    """`DIR/measurement.json`, or a raw PyPTO output folder parsed by the adapter (provenance
    "artefact": the digest recorded is the measurement's)."""
    if not (Path(directory) / "measurement.json").is_file() and _is_pypto_folder(directory):
        return _parsed_pypto_folder(directory, root or Path.cwd())
    doc, path, digest = perf_dir_document(directory)
    return runner.Document(doc=doc, origin=runner.origin_of_file(path, digest, doc), source=path)


def _is_pypto_folder(directory: str) -> bool:
    folder = Path(directory)
    return folder.is_dir() and (
        any(folder.rglob("CostModelSimulationOutput")) or any(folder.rglob("bubble_analysis.log"))
    )


def _parsed_pypto_folder(directory: str, root: Path) -> runner.Document:
    # The adapter is the shell's tool (tools/pypto), run as a process: the ledger never imports
    # pypto. Its document names the artefacts' digests; the one recorded is its own bytes'.
    argv = [sys.executable, "-m", "tools.pypto.run", "--perf-dir", os.fspath(directory), "--json"]
    try:
        run = runner.command_run(processes.run(argv, cwd=root))
    except OSError as e:
        raise BadInput(f"cannot run {shlex.join(argv)!r}: {e}") from e
    doc = runner.last_json_object(run.output)
    if doc is None or runner.reported_error(doc) is not None:
        raise BadInput(
            f"{directory} looks like a PyPTO output folder, but the adapter could not parse it "
            f"(exit {run.exit_code}): {runner.tail(run.output, 300)}",
            hint="install the adapter (`pip install 'tune-ledger[pypto]'`), or write "
            "DIR/measurement.json yourself",
        )
    digest = codec.digest(codec.canonical_json(doc).encode("utf-8"))
    return runner.Document(
        doc=doc, origin=runner.origin_of_file(os.fspath(directory), digest, doc), source=directory
    )


def perf_dir_document(directory: str) -> tuple[dict[str, Any], str, str]:
    """Read `measurement.json` from a perf folder: (document, its path, its digest)."""
    path = Path(directory) / "measurement.json"
    if not path.is_file():
        raise BadInput(
            f"{directory} has no measurement.json",
            hint="parse the artefacts first: python -m tools.pypto.run --perf-dir DIR --json "
            "> DIR/measurement.json",
        )
    data = safe_files.read_bytes(path, limit=safe_files.JSON_BYTES)
    try:
        doc = codec.loads(data)
    except ValueError as e:
        raise BadInput(f"{path} is not valid JSON ({e})") from e
    if not isinstance(doc, dict):
        raise BadInput(f"{path} must hold a JSON object")
    return doc, os.fspath(path), codec.digest(data)


def run_document(run: runner.CommandRun, what: str) -> runner.Document:
    """The JSON object a command the ledger ran printed (provenance "measured").

    Raises BadInput naming the command and its exit code when it printed none.
    """
    doc = runner.last_json_object(run.output)
    if doc is None:
        raise BadInput(
            f"{run.command!r} printed no JSON object with {what} (exit code {run.exit_code})",
            hint=f"the command must print one JSON object with {what} on its last line; "
            f"output tail: {runner.tail(run.output, 200)!r}",
        )
    runner.refuse_reported_error(doc, run.command)
    return runner.Document(doc=doc, origin=runner.origin_of_run(run, doc), source=run.command)
