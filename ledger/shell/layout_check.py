"""Running an op's layout check as the op-folder contract calls it (docs/OP_FOLDER.md):
`python custom/<op>/layout_check.py --config JSON --before-tuning`, with the PyPTO adapter
importable, since the checks the scaffold writes use its rules.

One way to run it for `check-op`, `evidence layout --from-spec` and the autopilot, through the
one process runner (ledger/processes.py): its own process group, killed at the time limit.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ledger import processes
from ledger.domain.configs import canonical_config
from ledger.log import codec

FILE_NAME = "layout_check.py"
TIMEOUT_S = 120.0  # a static check; a manifest's verifier limit applies where one is declared


def adapter_folder() -> tuple[str, Path] | None:
    """The importable package holding the PyPTO adapter (the wheel's `tune_ledger_tools`, else
    this checkout's `tools`) and its own folder; top-level lookups import nothing."""
    for name in ("tune_ledger_tools", "tools"):
        found = importlib.util.find_spec(name)
        for folder in list(found.submodule_search_locations or []) if found else []:
            if (Path(folder) / "pypto" / "run.py").is_file():
                return name, Path(folder).resolve()
    return None


def adapter_package() -> tuple[str, Path] | None:
    """The adapter's package name and the folder to put on PYTHONPATH for it."""
    found = adapter_folder()
    return None if found is None else (found[0], found[1].parent)


def environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """`env` (default: this process's) with the adapter's folder first on PYTHONPATH."""
    base = dict(os.environ if env is None else env)
    package = adapter_package()
    folders = [str(package[1])] if package else []
    folders += [p for p in base.get("PYTHONPATH", "").split(os.pathsep) if p and p not in folders]
    if folders:
        base["PYTHONPATH"] = os.pathsep.join(folders)
    return base


def run(
    op_dir: Path,
    config: Mapping[str, Any],
    *,
    cwd: Path | None = None,
    python: str = sys.executable,
    env: Mapping[str, str] | None = None,
    timeout_s: float = TIMEOUT_S,
) -> processes.Finished:
    """The op's layout check on `config` before tuning, run in `cwd` (default: this
    process's); OSError when it cannot start."""
    argv = (
        python,
        os.fspath(op_dir / FILE_NAME),
        "--config",
        codec.canonical_json(canonical_config(config)),
        "--before-tuning",
    )
    return processes.run(
        argv, cwd=cwd, env=environment(env), limits=processes.Limits(wall_s=timeout_s)
    )
