"""Portable records (issue 27.7): nothing the ledger records names a path of the machine.

A committed ledger is read on other machines, in other folders: a command recorded with this
machine's root or interpreter would mean nothing there, and two clones of one campaign would
differ. So, before anything is recorded, a command is written as its template plus values:
the root (as given, absolute, or with its links resolved) becomes `{root}`, the op folder
`{root}/custom/<op>`, and this process's interpreter `{python}`, the placeholders of the
verifier template (docs/OP_FOLDER.md); every other value (the config, the shape, the limits)
is kept as it was. Files under the root are already named relative to it
(`inputs.recorded_path`). Applied in one place for every command: the provenance of each
event (`provenance.capture`) and each `Origin.command` of a command before it is decided
(`OpLedger.execute`), so the deciders, audit and every view see the portable form only.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any, TypeVar

import attrs

from ledger.schema.values import Origin

ROOT = "{root}"
PYTHON = "{python}"
# A path ends where a path separator, a quote, a blank or the text does.
_END = r"(?=$|[/\s'\"=:;,)])"
_START = r"(?:(?<=^)|(?<=[\s'\"=:;,(]))"

C = TypeVar("C")


def roots(root: Path | str) -> list[str]:
    """The spellings of `root` a command may hold, longest first ("/" alone is none)."""
    spelled = {os.path.abspath(root), os.path.realpath(root)}
    return sorted((s for s in spelled if s not in ("/", "")), key=len, reverse=True)


def portable(text: str, root: Path | str, python: str | None = None) -> str:
    """`text` with the root's absolute path as `{root}` and the interpreter as `{python}`."""
    interpreter = python if python is not None else sys.executable
    if interpreter:
        text = re.sub(_START + re.escape(interpreter) + _END, PYTHON, text)
    for spelled in roots(root):
        text = re.sub(_START + re.escape(spelled) + _END, ROOT, text)
    return text


def origin(value: Origin | None, root: Path | str) -> Origin | None:
    """An origin whose command is portable."""
    if value is None or value.command is None:
        return value
    command = portable(value.command, root)
    return value if command == value.command else attrs.evolve(value, command=command)


def command(step: C, root: Path | str) -> C:
    """A protocol command whose origins (the data's and the accuracy's) are portable."""
    kind: Any = type(step)
    if not attrs.has(kind):
        return step
    changes: dict[str, Any] = {}
    for field in attrs.fields(kind):
        value = getattr(step, field.name)
        if isinstance(value, Origin):
            moved = origin(value, root)
            if moved is not value:
                changes[field.alias or field.name] = moved
    return attrs.evolve(step, **changes) if changes else step  # type: ignore[misc]
