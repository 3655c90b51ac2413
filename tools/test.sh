#!/usr/bin/env bash
# The project's checks, in the order that fails fastest: lint, types (strict on the core), tests.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-.venv/bin/python}
"$py" -m ruff check ledger stages tools tests
"$py" -m ruff format --check ledger stages tools tests
# The layers (pyproject.toml, [tool.importlinter]): an upward import fails here.
"$py" -c "import sys; from importlinter.cli import lint_imports_command as run; sys.exit(run())"
"$py" -m mypy
# Every test runs here, the slow ones (real processes, real PyPTO) included; -rs names skips.
"$py" -m pytest -rs "$@"
