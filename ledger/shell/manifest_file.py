"""Reading an op's manifest from `custom/<op>/SPEC.md` (the shell side of the manifest), and
recording it when it is in force."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ledger.domain.front_matter import read_front_matter
from ledger.domain.manifest import Manifest, parse_manifest
from ledger.domain.replay import evolve
from ledger.domain.state import State
from ledger.errors import BadInput, LedgerError
from ledger.log import codec, safe_files
from ledger.log.file_store import FileStore
from ledger.log.record import Event, unstructure_payload

if TYPE_CHECKING:
    from ledger.schema.events import Payload
    from ledger.shell.api import OpLedger
    from stages.commands import RecordManifest
    from stages.outcome import Decision
    from stages.refusal import Refusal


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


def recording(ledger: OpLedger, manifest: Manifest) -> RecordManifest:
    """The command that records `manifest` as the one in force (by its presence, issue 27)."""
    from stages import commands as cmd

    return cmd.RecordManifest(
        digest=manifest.digest,
        source=os.path.relpath(manifest.source, ledger.root),
        declared=declared(manifest),
    )


def record_if_changed(ledger: OpLedger, manifest: Manifest) -> bool:
    """Record SPEC.md's manifest when it is not the one the ledger uses; True if it recorded."""
    if _in_use(ledger, manifest):
        return False
    ledger.execute(recording(ledger, manifest))
    return True


def _in_use(ledger: OpLedger, manifest: Manifest) -> bool:
    """True when `manifest` is the one the ledger recorded last."""
    recorded = ledger.load().state.manifest
    return recorded is not None and recorded.digest == manifest.digest


# The manifest is in force by its presence (issue 27): SPEC.md's, when it is not the one the
# ledger recorded, is recorded before a command that stands under it (after it, for `init`);
# a command it refuses writes nothing, the manifest included (ledger/shell/api.py).


def spec_manifest_command(ledger: OpLedger) -> Any:
    """RecordManifest of custom/OP/SPEC.md's manifest when it declares a verifier or knobs
    and is not the one the ledger uses (a ledger on file only), else None. A SPEC.md that
    does not parse is bad input naming file:line."""
    if not isinstance(ledger.store, FileStore) or not ledger.exists():
        return None
    manifest = read_manifest(ledger.dir)
    # A front matter that declares neither a verifier nor knobs (only what priors read:
    # op_family, dtypes, shapes) governs nothing: it is recorded only when asked.
    if manifest is None or (manifest.verifier is None and not manifest.knobs):
        return None
    return None if _in_use(ledger, manifest) else recording(ledger, manifest)


def refuse_under(
    trial: State,
    recording: Any,
    command: Any,
    decide_step: Callable[[State, Any], Decision | Refusal],
) -> None:
    """Raise what refuses `recording` on `trial`, or `command` on `trial` with the manifest
    folded in (`trial` is changed: the caller drops it)."""
    from stages.decide import decide
    from stages.refusal import Refusal

    manifest = decide(trial, recording)
    if isinstance(manifest, Refusal):
        raise manifest.to_error()
    for payload in manifest.events:
        evolve(trial, _trial_event(payload))
    decision = decide_step(trial, command)
    if isinstance(decision, Refusal) and not decision.events:
        raise decision.to_error()


def _trial_event(payload: Payload) -> Event:
    """A payload as an event that was never written, to fold into a trial state."""
    data = unstructure_payload(payload)
    return Event("(trial)", 0, (), (0, 1), payload.TYPE, payload.SCHEMA, data, {})


def verifier_digest(manifest: Manifest, root: Path, op: str) -> str | None:
    """The digest of the op's declared verifier as it stands (R11): its declaration in the
    manifest (command template and limits) and the bytes of every file it names (a script), a
    `-m MODULE` as the module's sources under `root` (a package: every .py file under it);
    `{op_dir}` and `{root}` alone are arguments, not its code. A measurement
    records it, and a verdict compares only measurements made under one digest (R8). None
    when the manifest declares no verifier."""
    verifier = manifest.verifier
    if verifier is None:
        return None
    op_dir = root / "custom" / op
    files: dict[str, str] = {}
    argv = verifier.argv
    for index, token in enumerate(argv):
        if index and argv[index - 1] == "-m":
            named = [root / Path(*token.split("."))]
            paths = [named[0].with_suffix(".py"), named[0]]
        else:
            # `{op_dir}` or `{root}` alone hands the verifier the op folder (the kernel is
            # bound by its own digest); a script path under them names the verifier's code.
            if token in ("{op_dir}", "{root}"):
                continue
            text = token.replace("{root}", os.fspath(root)).replace("{op_dir}", os.fspath(op_dir))
            if "{" in text or not text or text.startswith("-"):
                continue
            path = Path(text) if os.path.isabs(text) else root / text
            if not path.is_file():  # only a file it names: a folder is an argument
                continue
            paths = [path]
        for path in paths:
            files.update(_source_digests(path, root))
    declared_part = {
        "command": list(argv),
        "timeout_s": verifier.timeout_s,
        "memory_mb": verifier.memory_mb,
    }
    body = codec.canonical_json({"verifier": declared_part, "files": files})
    return codec.digest(body.encode("utf-8"))


def file_digest_of(path: Path, root: Path) -> str | None:
    """The digest of one declared check (the layout check) with its name, None if absent."""
    found = _source_digests(path, root)
    if not found:
        return None
    return codec.digest(codec.canonical_json(found).encode("utf-8"))


def _source_digests(path: Path, root: Path) -> dict[str, str]:
    """A file's digest, or every .py file's under a folder, by path relative to `root`."""
    found: dict[str, str] = {}
    try:
        if path.is_file():
            chosen = [path]
        elif path.is_dir():
            chosen = sorted(
                p for p in path.rglob("*.py") if "__pycache__" not in p.parts and p.is_file()
            )
        else:
            return found
        for each in chosen:
            name = os.path.relpath(each, root) if each.is_relative_to(root) else each.name
            found[name] = safe_files.digest(each, limit=safe_files.LEDGER_BYTES)
    except (OSError, ValueError, LedgerError):
        return {}
    return found
