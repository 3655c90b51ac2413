"""Run one `tune-ledger` command in a fresh interpreter and see every module it imported
(what a whole process pays for: issue 19's start-up goals)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_SCRIPT = """
import json, sys
sys.argv[0] = "tune-ledger"
from ledger.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print("MODULES " + json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def imported(root: Path, *args: str) -> tuple[str, set[str]]:
    """The output of `tune-ledger --root ROOT ARGS...` run in a fresh interpreter (no root
    from the environment), and every module it imported."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("TUNE_LEDGER_ROOT", None)
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, "--root", str(root), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    line = next(x for x in done.stderr.splitlines() if x.startswith("MODULES "))
    return done.stdout, set(json.loads(line[len("MODULES ") :]))
