"""The key of the measurement cache (ledger/shell/measure_cache.py): its material is everything
that determines the verifier's result (the full config with the manifest's defaults filled in,
the digests of the kernel and of every other file of the op folder, subfolders included, that
the kernel can import or read, SPEC.md's front matter, the verifier's template, the P0 shape,
and the tool versions: tune-ledger, python, pypto, torch, numpy, the adapter's sources and any
script the command runs). The ledger's own files in the op folder (`events.jsonl`, its lock and
quarantine files, MEMORY.md, the report and its chart, `__pycache__`) are not part of it, nor
SPEC.md's prose. When the folder holds something the key cannot vouch for (a link leading out of
the root, a FIFO, a file over the bound), the run is not cached. The interpreter's tools are
probed by ledger/shell/tool_versions.py."""

from __future__ import annotations

import contextlib
import os
import re
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ledger import __version__
from ledger.domain.manifest import Manifest
from ledger.errors import LedgerError
from ledger.log import codec, safe_files
from ledger.log.files import LEDGER_NAME, MEMORY_NAME, lock_path
from ledger.log.quarantine import QUARANTINE_SUFFIX
from ledger.shell import kernels, tool_versions
from ledger.shell.manifest_file import SPEC_NAME, read_spec

# Bumped when the key material or the entry's layout changes meaning: older entries then miss.
# 2: the op folder's files are keyed recursively (`op_files`), not only its top-level *.py.
# 3: the device the run measures on (`device_material`), not only ASCEND_HOME_PATH.
FORMAT = 3
# The device this environment measures on, as a person or a launcher states it (e.g. the part of
# a host in a cluster of mixed parts): part of the key, so entries of two parts never meet.
DEVICE_ENV = "TUNE_LEDGER_DEVICE"
# Not the kernel's: byte code, anywhere; the disposable caches beside the ledger.
_NOT_THE_KERNELS = frozenset({"__pycache__"})
# The ledger's kept kernels (copies of what was measured, never imported) and the cache folder
# of older releases: keying on them would miss the cache after every kernel the ledger keeps.
_OWN_FOLDERS = frozenset({kernels.FOLDER, ".tune-ledger-cache"})
# The temporary file of an atomic replace (safe_files.replace_file), seen mid-write.
_TEMPORARY = re.compile(r"^\..+\.[0-9a-f]{12}\.tmp$")


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
    tools = tool_versions.probe(python, tool_versions.module_of(verifier.argv), cwd, env)
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
