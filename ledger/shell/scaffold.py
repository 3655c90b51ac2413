"""`new-op`: write `custom/<op>/` following docs/OP_FOLDER.md, with a kernel that runs as is.

The kernel is an elementwise placeholder (`y = x + x`) on a small 4-D fp32 input; the person
replaces its body and the manifest's numbers. Every name in the files is derived from the op's
name; the adapter's package is the one importable where the scaffold runs.
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path
from string import Template

from ledger.errors import BadInput
from ledger.log import safe_files
from ledger.shell.layout_check import adapter_package

NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
# The templates are kernel code (they import pypto and torch), so they ship with the adapter,
# in its `pypto/scaffold/` folder, never in the ledger's packages.
TEMPLATES = {
    "SPEC.md": "SPEC.md.tmpl",
    "{op}_impl.py": "impl.py.tmpl",
    "{op}_golden.py": "golden.py.tmpl",
    "layout_check.py": "layout_check.py.tmpl",
}


def write_op(root: Path, op: str, package: str | None = None) -> list[Path]:
    """Write `root/custom/op/` from the templates; refuse a bad name or an existing folder."""
    if not NAME.match(op):
        raise BadInput(
            f"op name {op!r} is not a lowercase identifier",
            hint="use letters, digits and underscores, starting with a letter (e.g. layer_norm)",
        )
    op_dir = root / "custom" / op
    if os.path.lexists(op_dir):
        raise BadInput(
            f"{op_dir} exists already",
            hint=f"check it with `tune-ledger check-op {op}`, or pick another name",
        )
    found = adapter_package()
    if found is None:
        raise BadInput(
            "the PyPTO adapter (its scaffold templates) is not installed",
            hint="pip install 'tune-ledger[pypto]', then run new-op again",
        )
    name = found[0]
    templates = _template_folder(name)
    values = {"op": op, "package": package or name}
    # Never through a link (`custom/` may be one in a cloned repository): ledger/log/safe_files.
    safe_files.make_dirs(op_dir, root=root)
    written = []
    for target, template in TEMPLATES.items():
        path = op_dir / target.format(op=op)
        text = (templates / template).read_text(encoding="utf-8")  # shipped with the package
        safe_files.write_new(path, Template(text).substitute(values).encode("utf-8"), root=root)
        written.append(path)
    return written


def _template_folder(package: str) -> Path:
    """The adapter's `pypto/scaffold/` folder, wherever the package maps (an installed wheel
    maps `tune_ledger_tools` onto a folder of another name in an editable install)."""
    spec = importlib.util.find_spec(package)
    for location in list(spec.submodule_search_locations or []) if spec else []:
        folder = Path(location) / "pypto" / "scaffold"
        if (folder / "SPEC.md.tmpl").is_file():
            return folder
    raise BadInput(
        f"the adapter package {package} has no scaffold templates (pypto/scaffold/*.tmpl)",
        hint="reinstall tune-ledger with the pypto extra: pip install 'tune-ledger[pypto]'",
    )
