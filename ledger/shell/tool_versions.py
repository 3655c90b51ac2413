"""The tools that run the kernel, as the key of the measurement cache names them: the versions
of python, pypto, torch, numpy and tune-ledger in the verifier's interpreter, and a digest of
the adapter package its template runs (ledger/shell/measure_key.py)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ledger import processes
from ledger.shell import runner

PROBE_TIMEOUT_S = 60.0

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


def module_of(template: tuple[str, ...]) -> str:
    """The module a `python -m MODULE` template runs ('' when it runs a script)."""
    for flag, module in itertools.pairwise(template):
        if flag == "-m":
            return module
    return ""


def probe(
    python: str, module: str, cwd: Path, env: Mapping[str, str] | None
) -> dict[str, Any] | None:
    """The versions `python` reports in `cwd` and `env`, with the digest of the adapter
    `module` (None: the interpreter cannot be probed); probed again only when a path it read
    has changed."""
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
    return runner.last_json_object(done.text())
