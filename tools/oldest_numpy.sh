#!/usr/bin/env bash
# The verdict tests on the oldest NumPy pyproject.toml allows (issue 27 item 9): a verdict
# recorded on one NumPy must re-derive on every other, so CI runs them at the floor as well as
# on the current release. The floor is read from pyproject.toml, so the two cannot drift.
# The environment (.venv-numpy-floor, or $FLOOR_VENV) is made once and reused while the floor
# stays the same; it holds this checkout (editable), its runtime dependencies, pytest and
# hypothesis. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
floor=$(sed -n 's/^ *"numpy>=\([0-9.]*\)",*$/\1/p' pyproject.toml)
if [ -z "$floor" ]; then
    echo "tools/oldest_numpy.sh: no \"numpy>=X\" dependency in pyproject.toml" >&2
    exit 2
fi
venv=${FLOOR_VENV:-.venv-numpy-floor}
py="$venv/bin/python"
if [ "$(cat "$venv/numpy-floor" 2>/dev/null)" != "$floor" ]; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    # The pin keeps NumPy at the floor while pip resolves the project's other dependencies.
    "$py" -m pip install -q "numpy==$floor" -e . pytest hypothesis
    echo "$floor" >"$venv/numpy-floor"
fi
"$py" -c 'import numpy; print("verdict tests on NumPy", numpy.__version__)'
# No cache: this run's failures must not become the main run's --last-failed.
"$py" -m pytest -p no:cacheprovider tests/test_bootstrap_draw.py tests/test_rule_r8_verdict.py "$@"
