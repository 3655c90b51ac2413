"""Reading an op's manifest from `custom/<op>/SPEC.md` (the shell side of the manifest)."""

from __future__ import annotations

from pathlib import Path

from ledger.domain.manifest import Manifest, parse_manifest
from ledger.errors import BadInput


def spec_path(op_dir: Path) -> Path:
    """Where an op's SPEC.md lives."""
    return op_dir / "SPEC.md"


def read_manifest(op_dir: Path) -> Manifest | None:
    """The manifest of SPEC.md's front matter; None when the op has no SPEC.md or its SPEC.md
    has no front matter (an op without a manifest keeps the protocol's generic behaviour)."""
    path = spec_path(op_dir)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise BadInput(f"cannot read {path}: {e}", hint="SPEC.md must be a UTF-8 text file") from e
    if not text.startswith("---"):
        return None
    return parse_manifest(text, str(path))
