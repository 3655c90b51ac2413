#!/usr/bin/env bash
# The project's checks, in the order that fails fastest: lint, types (strict on the core), tests.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-.venv/bin/python}
"$py" -m ruff check ledger stages tools tests
"$py" -m mypy
# -m "" would deselect nothing; slow tests (real processes, real PyPTO) run here too.
"$py" -m pytest -q "$@"
