"""Reading an op's manifest from `custom/<op>/SPEC.md` (the shell side of the manifest)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ledger.domain.manifest import Manifest, parse_manifest, read_front_matter
from ledger.errors import BadInput
from ledger.log import safe_files

if TYPE_CHECKING:
    from ledger.shell.api import OpLedger


SPEC_NAME = "SPEC.md"


def spec_path(op_dir: Path) -> Path:
    """Where an op's SPEC.md lives."""
    return op_dir / SPEC_NAME


def read_spec(op_dir: Path) -> str | None:
    """SPEC.md's text (None when there is none): a regular UTF-8 file, bounded, which a link
    may not lead out of the root holding `custom/` (ledger/log/safe_files.py); BadInput
    naming the file otherwise."""
    path = spec_path(op_dir)
    try:
        return safe_files.read_text(path, limit=safe_files.TEXT_BYTES, root=op_dir.parent.parent)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise BadInput(f"cannot read {path}: {e}", hint="SPEC.md must be a UTF-8 text file") from e


def read_manifest(op_dir: Path) -> Manifest | None:
    """The manifest of SPEC.md's front matter; None when the op has no SPEC.md or its SPEC.md
    has no front matter (an op without a manifest keeps the protocol's generic behaviour)."""
    found = _spec_text(op_dir)
    return None if found is None else parse_manifest(found[0], found[1])


def read_front_matter_of(op_dir: Path) -> dict[str, Any] | None:
    """SPEC.md's whole front matter as plain data (priors read keys the manifest does not
    declare); None when there is no SPEC.md or no front matter. BadInput names file:line."""
    found = _spec_text(op_dir)
    return None if found is None else read_front_matter(found[0], found[1])


def _spec_text(op_dir: Path) -> tuple[str, str] | None:
    """SPEC.md's text and name when it has a front matter (the only reader of the file)."""
    path = spec_path(op_dir)
    text = read_spec(op_dir)
    if text is None or not text.startswith("---"):
        return None
    return text, str(path)


def declared(manifest: Manifest) -> dict[str, Any]:
    """The manifest as the plain data a `manifest.recorded` event keeps."""
    return {
        "op_name": manifest.op_name,
        "p0_shapes": [list(shape) for shape in manifest.p0_shapes],
        "perf_target": None
        if manifest.target_us is None
        else {"time_us": manifest.target_us, "metric": manifest.metric, "tool": manifest.tool},
        "tolerance": None
        if manifest.rtol is None
        else {"rtol": manifest.rtol, "atol": manifest.atol},
        "baseline_config": manifest.baseline_config,
        "knobs": {
            name: {
                "stage": knob.stage,
                "kind": knob.kind,
                "default": knob.default,
                **({"domain": list(knob.domain)} if knob.domain is not None else {}),
                **({"min": knob.minimum} if knob.minimum is not None else {}),
                **({"max": knob.maximum} if knob.maximum is not None else {}),
            }
            for name, knob in manifest.knobs.items()
        },
        "verifier": None
        if manifest.verifier is None
        else {
            "command": list(manifest.verifier.argv),
            "timeout_s": manifest.verifier.timeout_s,
            "memory_mb": manifest.verifier.memory_mb,
        },
    }


def record_if_changed(ledger: OpLedger, manifest: Manifest) -> bool:
    """Record SPEC.md's manifest when it is not the one the ledger uses; True if it recorded."""
    from stages import commands as cmd

    recorded = ledger.load().state.manifest
    if recorded is not None and recorded.digest == manifest.digest:
        return False
    ledger.execute(
        cmd.RecordManifest(
            digest=manifest.digest,
            source=os.path.relpath(manifest.source, ledger.root),
            declared=declared(manifest),
        )
    )
    return True
