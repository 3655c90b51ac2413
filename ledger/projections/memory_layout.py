"""The layout of MEMORY.md's managed sections: their order, titles and Markdown blocks.

The section modules (`memory_activation`, `memory_target`, `memory_status`, `memory_history`)
build each body from these pieces; `memory_sections` assembles them and `memory_file` splices
them into the file.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

SECTION_ORDER = ("header", "activation", "target-sheet", "status", "adopted", "failed", "history")
TITLES = {
    "header": "tune-ledger header",
    "activation": "Activation evidence",
    "target-sheet": "Performance target sheet",
    "status": "Tuning status",
    "adopted": "Adopted changes",
    "failed": "Failed attempts — do not retry",
    "history": "Recent history",
}
# What may stand for the op in the header and in the commands shown (one token, no spaces).
_OP_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


def op_name(op: str | None) -> str:
    """The op as MEMORY.md names it: unsafe characters become `_`, no op is `OP`."""
    return _OP_SAFE.sub("_", op) if op else "OP"


def heading(name: str) -> str:
    """The Markdown heading of section `name`."""
    return f"## {TITLES[name]}\n"


def join_blocks(parts: Sequence[str]) -> str:
    """Markdown blocks separated by one blank line, ending in one newline."""
    return "\n".join(part.rstrip("\n") + "\n" for part in parts if part)
