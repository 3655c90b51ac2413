"""An op folder as the adapter sees it: SPEC.md's front matter and the op's Python files.

The front matter is YAML, read by the ledger's manifest parser (ledger/domain/manifest.py), so
the adapter and the ledger read one SPEC.md the same way. Pure apart from reading SPEC.md.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from attrs import frozen

from ledger.domain.front_matter import read_front_matter
from ledger.errors import BadInput


class SpecError(ValueError):
    """SPEC.md or the op folder does not follow the documented layout."""


@frozen
class OpSpec:
    """What the adapter needs from an op folder."""

    op_dir: Path
    op_name: str
    p0_shape: list[int]
    dtype: str
    rtol: float
    atol: float
    front_matter: dict[str, Any]

    @property
    def impl_path(self) -> Path:
        return self.op_dir / f"{self.op_name}_impl.py"

    @property
    def golden_path(self) -> Path:
        return self.op_dir / f"{self.op_name}_golden.py"

    @property
    def layout_check_path(self) -> Path:
        return self.op_dir / "layout_check.py"

    def io_names(self) -> tuple[list[str], list[str]]:
        """INPUT_NAMES and OUTPUT_NAMES of the impl, read statically (no pypto import)."""
        values = {}
        tree = ast.parse(self.impl_path.read_text(encoding="utf-8"))
        for node in tree.body:
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id in ("INPUT_NAMES", "OUTPUT_NAMES")
            ):
                values[node.targets[0].id] = list(ast.literal_eval(node.value))
        if set(values) != {"INPUT_NAMES", "OUTPUT_NAMES"}:
            raise SpecError(f"{self.impl_path}: needs literal INPUT_NAMES and OUTPUT_NAMES")
        return values["INPUT_NAMES"], values["OUTPUT_NAMES"]


def parse_front_matter(text: str, source: str = "SPEC.md") -> dict[str, Any]:
    """The `---`-delimited YAML front matter at the top of `text` as a dict."""
    try:
        return read_front_matter(text, source)
    except BadInput as e:
        raise SpecError(str(e)) from e


def load_spec(op_dir: Path, shape: list[int] | None = None, dtype: str | None = None) -> OpSpec:
    """Read `op_dir/SPEC.md`; the P0 shape and dtype are the first listed unless given."""
    path = op_dir / "SPEC.md"
    if not path.is_file():
        raise SpecError(f"{op_dir} has no SPEC.md")
    front = parse_front_matter(path.read_text(encoding="utf-8"), str(path))
    try:
        op_name = str(front["op_name"])
        shapes = front["p0_shapes"]
        dtypes = front["supported_dtypes"]
        tolerance = front["tolerance"]
        rtol, atol = float(tolerance["rtol"]), float(tolerance["atol"])
    except (KeyError, TypeError, ValueError) as e:
        raise SpecError(
            f"{path}: front matter needs op_name, p0_shapes, supported_dtypes and "
            f"tolerance {{rtol, atol}} ({e!r})"
        ) from e
    chosen_shape = shape if shape is not None else shapes[0]
    chosen_dtype = dtype if dtype is not None else dtypes[0]
    if not isinstance(chosen_shape, list) or not all(
        isinstance(d, int) and d > 0 for d in chosen_shape
    ):
        raise SpecError(f"{path}: shape {chosen_shape!r} is not a list of positive ints")
    if chosen_dtype not in dtypes:
        raise SpecError(f"{path}: dtype {chosen_dtype!r} not in supported_dtypes {dtypes}")
    spec = OpSpec(
        op_dir=op_dir,
        op_name=op_name,
        p0_shape=list(chosen_shape),
        dtype=str(chosen_dtype),
        rtol=rtol,
        atol=atol,
        front_matter=front,
    )
    for needed in (spec.impl_path, spec.golden_path):
        if not needed.is_file():
            raise SpecError(f"{op_dir} has no {needed.name}")
    return spec
