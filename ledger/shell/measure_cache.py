"""The measurement cache: a verifier's run kept outside the op folder, so a config measured once
is never simulated again (issue 19), across new roots, resumes, branches and campaigns.

An entry is content-addressed by its key material (ledger/shell/measure_key.py). An entry is
trusted only when its material equals the material asked for; one that cannot be read or does
not match is ignored and measured again. Writes are atomic (a temporary file renamed, never
through a link), and one lock per key makes a second process wait for a run in flight instead of
simulating the same config twice.

What is kept is the run itself (command, exit code, output, duration) and where and when it
ran, so a hit is recorded with the provenance of the run that produced it. Only runs whose
result the simulator determines are kept: a measurement, or a compile, accuracy or layout
failure. A timeout, a kill by a signal (a crash, the OOM killer), an `oom`, `timeout` or
`runtime` failure the verifier reports, and every harness error depend on the machine at that
moment: they are not cached, and the next measure runs the config for real.

Where: `$TUNE_LEDGER_MEASURE_CACHE` (a folder; `off` disables the cache), else
`$XDG_CACHE_HOME/tune-ledger/measurements`, else `~/.cache/tune-ledger/measurements`. Deleting
the folder clears it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from attrs import frozen

from ledger.errors import LedgerError
from ledger.log import codec, safe_files
from ledger.schema.values import CachedRun
from ledger.shell import provenance, runner
from ledger.shell.measure_key import FORMAT, key_of

ENV = "TUNE_LEDGER_MEASURE_CACHE"
DISABLED = ("off", "0", "no", "false", "none", "disabled")
# Failures the simulator decides by itself; every other failure depends on the machine.
DETERMINISTIC_FAILURES = ("compile", "accuracy", "layout")


@frozen
class Entry:
    """A cached run: what the verifier did, and when and where it really ran."""

    key: str
    run: runner.CommandRun
    signal: int | None
    source: CachedRun


def folder(environ: Mapping[str, str] | None = None) -> Path | None:
    """The cache folder, or None when the cache is disabled (`TUNE_LEDGER_MEASURE_CACHE=off`)."""
    env = os.environ if environ is None else environ
    chosen = env.get(ENV)
    if chosen is not None:
        if not chosen.strip() or chosen.strip().lower() in DISABLED:
            return None
        return Path(chosen).expanduser()
    home = env.get("HOME") or os.path.expanduser("~")
    base = env.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    return Path(base) / "tune-ledger" / "measurements"


class MeasurementCache:
    """Entries under one folder: `<key[:2]>/<key>.json`, with `<key>.lock` held while a run
    for the key is in flight."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, key: str) -> Path:
        """Where the entry of `key` lives."""
        return self.root / key[:2] / f"{key}.json"

    @contextlib.contextmanager
    def claim(self, key: str) -> Iterator[None]:
        """Hold the key's lock: one run per key at a time, across processes (none when the
        folder cannot be written: the cache is only an optimization)."""
        lock = self.path(key).with_suffix(".lock")
        try:  # never through a link, never a FIFO (ledger/log/safe_files.py)
            safe_files.make_dirs(lock.parent, root=self.root)
            fd = safe_files.open_regular(lock, os.O_RDWR | os.O_CREAT)
        except (OSError, LedgerError):
            yield
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def lookup(self, key: str, material: Mapping[str, Any]) -> Entry | None:
        """The entry of `key` when it is whole and made for exactly `material`, else None."""
        try:
            data = safe_files.read_bytes(
                self.path(key), limit=safe_files.JSON_BYTES, root=self.root, follow=False
            )
            return _entry(json.loads(data), key, material)
        except (OSError, ValueError, TypeError, KeyError, LedgerError):
            return None  # missing, torn, edited, a link or a FIFO: measured again

    def store(
        self, key: str, material: Mapping[str, Any], run: runner.CommandRun, signal: int | None
    ) -> bool:
        """Keep a run whose result the simulator determined; True when it was kept."""
        if not cacheable(run, signal):
            return False
        record = {
            "format": FORMAT,
            "key": key,
            "material": dict(material),
            "run": {
                "command": run.command,
                "exit_code": run.exit_code,
                "output": run.output,
                "output_digest": run.output_digest,
                "duration_s": run.duration_s,
                "timed_out": run.timed_out,
                "signal": signal,
            },
            "produced": {"at": provenance.utc_now(), "host": socket.gethostname()},
        }
        body = codec.canonical_json(record)
        record["check"] = codec.digest(body.encode("utf-8"))
        data = codec.canonical_json(record).encode("utf-8")
        try:  # atomic, never through a link (ledger/log/safe_files.py)
            safe_files.replace_file(self.path(key), data, root=self.root, durable_rename=False)
        except (OSError, LedgerError):
            return False  # a read-only or full disk, a link: the result is recorded all the same
        return True


def cacheable(run: runner.CommandRun, signal: int | None) -> bool:
    """A run whose printed result the simulator alone decided (see the module docstring)."""
    if run.timed_out or signal is not None:
        return False
    doc = runner.last_json_object(run.output)
    if doc is None or runner.reported_error(doc) is not None:
        return False
    try:
        failure = runner.failure_of(doc)
    except LedgerError:
        return False
    return failure is None or failure[0] in DETERMINISTIC_FAILURES


def _entry(record: Any, key: str, material: Mapping[str, Any]) -> Entry | None:
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        return None
    check = record.pop("check", None)
    if check != codec.digest(codec.canonical_json(record).encode("utf-8")):
        return None
    # Never trusted over a mismatched key: the name, the stored key and the material all agree.
    if record["key"] != key or key_of(record["material"]) != key:
        return None
    if codec.canonical_json(record["material"]) != codec.canonical_json(dict(material)):
        return None
    run, produced = record["run"], record["produced"]
    command_run = runner.CommandRun(
        command=str(run["command"]),
        exit_code=int(run["exit_code"]),
        output=str(run["output"]),
        output_digest=str(run["output_digest"]),
        duration_s=float(run["duration_s"]),
        timed_out=bool(run["timed_out"]),
    )
    signal = run["signal"]
    if not cacheable(command_run, signal):
        return None
    return Entry(
        key=key,
        run=command_run,
        signal=signal,
        source=CachedRun(key=key, at=str(produced["at"]), host=str(produced["host"])),
    )
