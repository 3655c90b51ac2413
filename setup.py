"""The wheel's package list, discovered rather than written by hand (pyproject.toml holds the
rest of the build's configuration).

A package added under ledger/, stages/ or tools/ ships without an edit here. tools/ ships as
`tune_ledger_tools` (pyproject.toml's `package-dir`), so it never shadows a kernel repository's
own `tools` package, and a discovery in pyproject.toml cannot rename a folder; tools/bench
stays in this checkout. tests/test_wheel.py builds and installs the wheel to check all this.
"""

from setuptools import find_packages, setup

setup(
    packages=[
        *find_packages(include=["ledger", "ledger.*", "stages", "stages.*"]),
        "tune_ledger_tools",
        *(
            f"tune_ledger_tools.{name}"
            for name in find_packages("tools", exclude=["bench", "bench.*"])
        ),
    ]
)
