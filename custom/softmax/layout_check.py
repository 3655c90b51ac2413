"""Layout check of this op folder: the generic rules of tools/pypto/layout.py on its kernel.

    python layout_check.py [--config JSON] [--before-tuning]

Exit 0 when no rule fails, 1 otherwise, 2 for bad arguments (docs/OP_FOLDER.md). The folder
checked is the one this file lives in; the rules know no op's name.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from tools.pypto import layout

HERE = Path(__file__).resolve().parent


def check(impl: Path, spec: Path, config: dict[str, Any], before_tuning: bool) -> Any:
    """The findings of every rule on `impl` (a variant of this op's kernel) and `config`."""
    return layout.check(HERE, config, before_tuning, impl=impl, spec=spec)


def main(argv: list[str] | None = None) -> int:
    """Check this folder's kernel; the exit code."""
    return layout.main(argv, op_dir=HERE)


if __name__ == "__main__":
    sys.exit(main())
