"""The measurement cache: a verifier's run kept outside the op folder, so a config measured once
is never simulated again (issue 19), across new roots, resumes, branches and campaigns.

An entry is content-addressed by its key material: everything that determines the verifier's
result (the full config with the manifest's defaults filled in, the digests of the kernel and of
every other file of the op folder, subfolders included, that the kernel can import or read,
SPEC.md's front matter, the verifier's template, the P0 shape, and the tool versions:
tune-ledger, python, pypto, torch, numpy, the adapter's sources and any script the command
runs). The ledger's own files in the op folder (`events.jsonl`, its lock and quarantine files,
MEMORY.md, the report and its chart, `__pycache__`) are not part of it, nor SPEC.md's prose.
When the folder holds something the key cannot vouch for (a link leading out of the root, a
FIFO, a file over the bound), the run is not cached. An entry is trusted only when its
material equals the material asked for; one that cannot be read or does not match is ignored
and measured again. Writes are atomic (a temporary file renamed, never through a link), and one
lock per key makes a second process wait for a run in flight instead of simulating the same
config twice.

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
import itertools
import json
import os
import re
import socket
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from attrs import frozen

from ledger import __version__, processes
from ledger.domain.manifest import Manifest
from ledger.errors import LedgerError
from ledger.log import codec, safe_files
from ledger.log.files import LEDGER_NAME, MEMORY_NAME, lock_path
from ledger.log.quarantine import QUARANTINE_SUFFIX
from ledger.schema.values import CachedRun
from ledger.shell import kernels, provenance, runner
from ledger.shell.manifest_file import SPEC_NAME, read_spec

ENV = "TUNE_LEDGER_MEASURE_CACHE"
DISABLED = ("off", "0", "no", "false", "none", "disabled")
# Bumped when the key material or the entry's layout changes meaning: older entries then miss.
# 2: the op folder's files are keyed recursively (`op_files`), not only its top-level *.py.
# 3: the device the run measures on (`device_material`), not only ASCEND_HOME_PATH.
FORMAT = 3
# The device this environment measures on, as a person or a launcher states it (e.g. the part of
# a host in a cluster of mixed parts): part of the key, so entries of two parts never meet.
DEVICE_ENV = "TUNE_LEDGER_DEVICE"
# Failures the simulator decides by itself; every other failure depends on the machine.
DETERMINISTIC_FAILURES = ("compile", "accuracy", "layout")
PROBE_TIMEOUT_S = 60.0
# Not the kernel's: byte code, anywhere; the disposable caches beside the ledger.
_NOT_THE_KERNELS = frozenset({"__pycache__"})
# The ledger's kept kernels (copies of what was measured, never imported) and the cache folder
# of older releases: keying on them would miss the cache after every kernel the ledger keeps.
_OWN_FOLDERS = frozenset({kernels.FOLDER, ".tune-ledger-cache"})
# The temporary file of an atomic replace (safe_files.replace_file), seen mid-write.
_TEMPORARY = re.compile(r"^\..+\.[0-9a-f]{12}\.tmp$")

# Run by the verifier's interpreter, in the verifier's folder and environment: the versions
# that run the kernel, and a digest of the adapter package the template's `-m MODULE` names
# (finding it imports only its parent packages' __init__ modules, never pypto).
_PROBE = r"""
import hashlib, importlib.metadata as md, importlib.util, json, os, sys
def version(name):
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return None
adapter = None
if sys.argv[1]:
    try:
        spec = importlib.util.find_spec(sys.argv[1])
    except Exception:
        spec = None
    if spec is not None and spec.origin:
        folder = os.path.dirname(spec.origin)
        total = hashlib.sha256()
        for base, dirs, files in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(f for f in files if f.endswith(".py")):
                path = os.path.join(base, name)
                total.update(os.path.relpath(path, folder).encode() + b"\0")
                with open(path, "rb") as stream:
                    total.update(hashlib.sha256(stream.read()).digest())
        adapter = {"module": sys.argv[1], "sources": total.hexdigest()}
watch = [p for p in sys.path if p and os.path.isdir(p)]
if adapter is not None:
    for base, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        watch += [base] + [os.path.join(base, f) for f in files if f.endswith(".py")]
print(json.dumps({
    "python": sys.version.split()[0] + " " + sys.implementation.name,
    "pypto": version("pypto"), "torch": version("torch"), "numpy": version("numpy"),
    "tune-ledger (interpreter)": version("tune-ledger"), "adapter": adapter, "watch": watch,
}, sort_keys=True))
"""
# What the probe found, per interpreter, module, folder and environment, with the stat of every
# path whose change could change the answer (the interpreter's import folders: an install or
# upgrade adds and removes dist-info folders there; the adapter's sources). Probing costs an
# interpreter start (~0.5 s, a real share of a campaign's ledger time); checking the stats
# costs microseconds, so a process probes again only when something it read has changed.
_probed: dict[tuple[Any, ...], tuple[tuple[tuple[str, int, int], ...], dict[str, Any]]] = {}


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


def key_material(
    manifest: Manifest,
    config: Mapping[str, Any],
    argv: tuple[str, ...],
    *,
    op_dir: Path,
    op: str,
    python: str,
    cwd: Path,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any] | None:
    """Everything that determines what the verifier prints for `config`; None when it cannot
    be told (the interpreter cannot be probed), so the run is not cached."""
    verifier = manifest.verifier
    if verifier is None:
        return None
    tools = _probe(python, _module_of(verifier.argv), cwd, env)
    if tools is None:
        return None
    impl = f"{op}_impl.py"
    files = op_files(op_dir, op, cwd)
    if files is None:
        return None
    return {
        "format": FORMAT,
        "config": manifest.filled(config),
        "impl_digest": files.pop(impl, None),
        "op_files": files,
        "spec_front_matter": _front_matter_digest(op_dir),
        "verifier": {
            "command": list(verifier.argv),
            "timeout_s": verifier.timeout_s,
            "memory_mb": verifier.memory_mb,
        },
        "p0_shape": list(manifest.p0_shape) if manifest.p0_shape else None,
        "scripts": _scripts(verifier.argv, argv, python, cwd),
        "tools": {"tune-ledger": __version__, **tools},
        "device": device_material(os.environ if env is None else env),
    }


def device_material(environ: Mapping[str, str]) -> dict[str, Any]:
    """What the key knows, before the run, of the device it will measure on (issue 29): the
    CANN toolkit (its presence turns the simulator into a real NPU run, PYPTO.md), on an NPU
    this host (an NPU result is never served to another host), and the device the environment
    states (`TUNE_LEDGER_DEVICE`). The NPU's number is left out: the NPUs of one host are one
    part. What the run then names is checked against the best's device on a hit (measure.py)."""
    home = environ.get("ASCEND_HOME_PATH") or None
    return {
        "ascend_home": home,
        "host": socket.gethostname() if home else None,
        "stated": environ.get(DEVICE_ENV) or None,
    }


def key_of(material: Mapping[str, Any]) -> str:
    """The entry's address: sha256 of the canonical key material."""
    return codec.digest(codec.canonical_json(dict(material)).encode("utf-8"))


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


def _module_of(template: tuple[str, ...]) -> str:
    """The module a `python -m MODULE` template runs ('' when it runs a script)."""
    for flag, module in itertools.pairwise(template):
        if flag == "-m":
            return module
    return ""


def _probe(
    python: str, module: str, cwd: Path, env: Mapping[str, str] | None
) -> dict[str, Any] | None:
    memo = (python, module, str(cwd), None if env is None else tuple(sorted(env.items())))
    known = _probed.get(memo)
    if known is not None and _stamp(path for path, _, _ in known[0]) == known[0]:
        return dict(known[1])
    found = _run_probe(python, module, cwd, env)
    if found is None:
        return None
    watched = found.pop("watch", None)
    if isinstance(watched, list) and all(isinstance(p, str) for p in watched):
        _probed[memo] = (_stamp(watched), dict(found))
    return found


def _stamp(paths: Iterable[str]) -> tuple[tuple[str, int, int], ...]:
    """Each path with its modification time and size (-1, -1 once it is gone)."""
    stamped = []
    for path in paths:
        try:
            status = os.stat(path)
        except OSError:
            stamped.append((path, -1, -1))
        else:
            stamped.append((path, status.st_mtime_ns, status.st_size))
    return tuple(stamped)


def _run_probe(
    python: str, module: str, cwd: Path, env: Mapping[str, str] | None
) -> dict[str, Any] | None:
    try:
        done = processes.run(
            [python, "-c", _PROBE, module],
            cwd=cwd,
            env=env,
            limits=processes.Limits(wall_s=PROBE_TIMEOUT_S),
            separate_stderr=True,
        )
    except OSError:
        return None
    if done.timed_out or done.exit_code != 0:
        return None
    found = runner.last_json_object(done.text())
    return found


def _scripts(
    template: tuple[str, ...], argv: tuple[str, ...], python: str, cwd: Path
) -> dict[str, str]:
    """Digests of the files the command names (a verifier script), the interpreter aside,
    each under its template token, so a script in another root with the same bytes matches."""
    found = {}
    for token, value in zip(template, argv, strict=False):
        if value == python or not value or value.startswith("-"):
            continue
        path = Path(value) if os.path.isabs(value) else cwd / value
        with contextlib.suppress(OSError, ValueError, LedgerError):
            if path.is_file():  # a regular file, bounded (ledger/log/safe_files.py)
                found[token] = safe_files.digest(path, limit=safe_files.LEDGER_BYTES)
    return found


def op_files(op_dir: Path, op: str, root: Path) -> dict[str, str] | None:
    """The digest of every file of the op folder the kernel can import or read, by its path
    relative to the folder (subfolders and links inside the root followed), the ledger's own
    files left out; None when one cannot be vouched for (a link leading out of `root`, a
    FIFO or device, a file over the bound, one that cannot be read): such a run is not
    cached."""
    from ledger.projections.report import chart_name, report_name

    own = {LEDGER_NAME, lock_path(Path(LEDGER_NAME)).name, MEMORY_NAME, report_name(op)}
    own |= {chart_name(op), SPEC_NAME}  # SPEC.md: its front matter is keyed on its own
    real_root = os.path.realpath(root)
    seen = {os.path.realpath(op_dir)}
    found: dict[str, str] = {}
    try:
        for base, dirs, names in os.walk(op_dir, followlinks=True, onerror=_raise):
            top = base == str(op_dir)
            for name in list(dirs):
                real = os.path.realpath(os.path.join(base, name))
                if os.path.commonpath([real, real_root]) != real_root:
                    return None
                if name in _NOT_THE_KERNELS or real in seen or (top and name in _OWN_FOLDERS):
                    dirs.remove(name)  # a loop of links, or nothing the kernel reads
                seen.add(real)
            dirs.sort()
            for name in sorted(names):
                if (top and (name in own or QUARANTINE_SUFFIX in name)) or _TEMPORARY.match(name):
                    continue
                path = os.path.join(base, name)
                relative = os.path.relpath(path, op_dir).replace(os.sep, "/")
                found[relative] = safe_files.digest(path, limit=safe_files.LEDGER_BYTES, root=root)
    except (OSError, LedgerError):
        return None
    return found


def _raise(error: OSError) -> None:
    raise error


def _front_matter_digest(op_dir: Path) -> str | None:
    """sha256 of SPEC.md's front matter (the adapter reads all of it; the prose is not read)."""
    try:
        text = read_spec(op_dir)
    except LedgerError:
        return None
    lines = (text or "").splitlines()
    if not lines or lines[0].strip() != "---":
        return None
    end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), len(lines))
    return codec.digest("\n".join(lines[:end]).encode("utf-8"))
