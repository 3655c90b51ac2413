#!/usr/bin/env bash
# The project's checks, in the order that fails fastest: lint, format, layers and types first
# (they need only the `test` extra), then the `pypto` extra (torch: the slow install) and the
# `farm` extra (Ray: tests/test_farm.py starts a local cluster) with the same interpreter's pip,
# then every test, the slow ones (real processes, real PyPTO, Ray) included,
# then the verdict tests again on the oldest NumPy we support (tools/oldest_numpy.sh).
# Extra arguments go to the full pytest run. $PYTHON picks the interpreter (default
# .venv/bin/python).
#
# The same fast checks can run before each commit (.pre-commit-config.yaml, local hooks in the
# project's environment, nothing fetched):
#   .venv/bin/pip install pre-commit && .venv/bin/pre-commit install
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-.venv/bin/python}
"$py" -m ruff check ledger stages tools tests setup.py
"$py" -m ruff format --check ledger stages tools tests setup.py
# The layers (pyproject.toml, [tool.importlinter]): an upward import fails here.
"$py" -c "import sys; from importlinter.cli import lint_imports_command as run; sys.exit(run())"
# Strict everywhere; pypto, torch and ray are untyped to mypy, so it needs no extra here.
"$py" -m mypy
"$py" -m pip install -q -e '.[pypto,farm]'
# -rs names skips.
"$py" -m pytest -rs "$@"
bash tools/oldest_numpy.sh
