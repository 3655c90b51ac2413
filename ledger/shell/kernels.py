"""Kernels kept (issue 27.6): every kernel the ledger binds a measurement or evidence to is
stored in the op folder, content-addressed, so the campaign can always go back to it.

`custom/<op>/kernels/<sha256>.py` holds the bytes whose sha256 is the name. They are written
once (never over an existing name: a stored kernel is evidence, and a file edited by hand is
caught by `audit`, not repaired behind its back), atomically, never through a link
(ledger/log/safe_files.py), right after the events that bind them were appended; committed
beside events.jsonl, a review shows each kernel the campaign measured, and `git diff` of two
of them is the change an algorithm attempt made. `kernel restore` writes one back to
`<op>_impl.py`, `kernel diff` compares two attempts' kernels, and `audit` checks every stored
file against its name. Nothing here appends to the ledger.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ledger.domain.hints import Fill, Step
from ledger.errors import BadInput, LedgerDamaged
from ledger.log import safe_files
from ledger.log.record import Event
from ledger.projections.kernels import DIGEST, attempt_kernels, bound_digests, kernel_diff
from stages.binding import best_impl_digest

if TYPE_CHECKING:
    from ledger.domain.state import State
    from ledger.shell.api import OpLedger

FOLDER = "kernels"
SUFFIX = ".py"


def folder(op_dir: Path) -> Path:
    """Where an op's kernels are kept."""
    return op_dir / FOLDER


def stored_path(op_dir: Path, digest: str) -> Path:
    """The file that keeps the kernel `digest`."""
    return folder(op_dir) / f"{digest}{SUFFIX}"


def shown(ledger: OpLedger, path: Path) -> str:
    """A path as messages name it: relative to the root."""
    return Path(os.path.relpath(path, ledger.root)).as_posix()


# --- keeping ---------------------------------------------------------------------------------


def keep(ledger: OpLedger, events: Sequence[Event], before: State) -> tuple[str, ...]:
    """Store the kernels `events` (just appended) bind, from the files they came from (the
    op's `<op>_impl.py`, an evidence's `impl_path` under the root) when a file still holds
    those bytes; return warnings (the events are durable: keeping never fails the command)."""
    wanted = [d for d in bound_digests(events, before) if not stored_path(ledger.dir, d).exists()]
    if not wanted:
        return ()
    sources = [ledger.impl_file]
    for event in events:
        recorded = event.data.get("impl_path")
        if isinstance(recorded, str) and not os.path.isabs(recorded):
            sources.append(ledger.root / recorded)
    found: dict[str, bytes] = {}
    for source in dict.fromkeys(sources):
        try:
            data = safe_files.read_bytes(source, limit=safe_files.TEXT_BYTES, root=ledger.root)
        except (OSError, BadInput):
            continue
        found.setdefault(hashlib.sha256(data).hexdigest(), data)
    warnings = []
    for digest in wanted:
        if digest not in found:
            continue  # the file changed since: nothing to keep that holds these bytes
        try:
            store(ledger, digest, found[digest])
        except (OSError, BadInput) as e:
            cause = e.message if isinstance(e, BadInput) else (e.strerror or str(e))
            warnings.append(
                f"kernel {digest[:12]} was not kept in custom/{ledger.op}/{FOLDER}/ ({cause}); "
                "`tune-ledger kernel restore` cannot bring it back"
            )
    return tuple(warnings)


def store(ledger: OpLedger, digest: str, data: bytes) -> bool:
    """Write the kernel `data` (whose sha256 is `digest`) to the store unless it is there."""
    if hashlib.sha256(data).hexdigest() != digest:
        raise ValueError("the kernel's bytes do not have its digest")
    path = stored_path(ledger.dir, digest)
    if os.path.lexists(path):
        return False
    safe_files.replace_file(path, data, root=ledger.root)
    return True


# --- reading back ----------------------------------------------------------------------------


def stored_findings(ledger: OpLedger) -> list[str]:
    """Audit's findings on the kept kernels: a file whose bytes are not its name's digest, a
    name that is no digest, or anything but a regular file."""
    where = folder(ledger.dir)
    if not where.is_dir() or where.is_symlink():
        return [f"{shown(ledger, where)}: not a folder"] if os.path.lexists(where) else []
    findings = []
    for path in sorted(where.iterdir()):
        name = shown(ledger, path)
        digest = path.name[: -len(SUFFIX)] if path.name.endswith(SUFFIX) else ""
        if not DIGEST.fullmatch(digest):
            findings.append(f"{name}: not a kept kernel (a name is <sha256>{SUFFIX})")
            continue
        try:
            actual = safe_files.digest(
                path, limit=safe_files.TEXT_BYTES, root=ledger.root, follow=False
            )
        except (OSError, BadInput) as e:
            findings.append(f"{name}: cannot be read ({getattr(e, 'message', e)})")
            continue
        if actual != digest:
            findings.append(
                f"{name}: its bytes have digest {actual[:12]}, not its name's: the kept kernel "
                "was edited; restore it from git (`git checkout -- " + name + "`)"
            )
    return findings


def kept(ledger: OpLedger, digest: str) -> bytes:
    """The kept kernel `digest`, checked against its name (LedgerDamaged, exit 7, when not)."""
    path = stored_path(ledger.dir, digest)
    name = shown(ledger, path)
    data = safe_files.read_optional(
        path, limit=safe_files.TEXT_BYTES, root=ledger.root, follow=False
    )
    if data is None:
        raise BadInput(
            f"kernel {digest[:12]} is not kept ({name} is missing): it was measured before "
            "the ledger kept kernels, or the file was not committed",
            hint="restore it from git history if it was committed, or `git log -p "
            f"custom/{ledger.op}/{ledger.op}_impl.py`",
        )
    if hashlib.sha256(data).hexdigest() != digest:
        raise LedgerDamaged(
            f"{name}: its bytes are not kernel {digest[:12]}: the kept kernel was edited",
            hint=f"restore it from git (`git checkout -- {name}`), then run the command again",
        )
    return data


def kernel_of(ledger: OpLedger, attempt: str | None) -> tuple[str, str]:
    """(what is named, kernel digest): the attempt `attempt` names, or the best's (None)."""
    log = ledger.store.read()
    state = ledger.load().state
    if attempt is None:
        digest = best_impl_digest(state)
        label = (
            "baseline" if state.best is None or state.best.attempt is None else (state.best.attempt)
        )
        if digest is None:
            raise BadInput(
                "no kernel is bound to the best yet",
                hint="activation binds the first kernel (`tune-ledger evidence compare OP`)",
            )
        return label, digest
    from ledger.projections.attempt_rows import resolve_attempt  # `keep` runs on each step

    attempt_id = resolve_attempt(state, attempt)
    digest = attempt_kernels(log.events).get(attempt_id)
    if digest is None:
        raise BadInput(
            f"attempt {attempt_id} is bound to no kernel",
            hint=f"see {Step('log', Fill('OP'), attempt=attempt_id)}; only measured attempts "
            "and evidence name the kernel they ran",
        )
    return attempt_id, digest


def restore(ledger: OpLedger, attempt: str | None = None) -> dict[str, Any]:
    """Write the kept kernel of `attempt` (default: the best's) back to `<op>_impl.py`."""
    ledger.require()
    label, digest = kernel_of(ledger, attempt)
    data = kept(ledger, digest)
    target = ledger.impl_file
    before = safe_files.read_optional(
        target, limit=safe_files.TEXT_BYTES, root=ledger.root, follow=False
    )
    changed = before != data
    if changed:
        safe_files.replace_file(target, data, root=ledger.root)
    return {
        "op": ledger.op,
        "attempt": label,
        "impl_digest": digest,
        "path": shown(ledger, target),
        "changed": changed,
    }


def diff(ledger: OpLedger, first: str, second: str) -> dict[str, Any]:
    """The unified diff of two attempts' kept kernels (`best` names the best's)."""
    ledger.require()
    sides = []
    for name in (first, second):
        label, digest = kernel_of(ledger, None if name == "best" else name)
        text = kept(ledger, digest).decode("utf-8", errors="replace")
        sides.append((label, digest, text))
    (a, a_digest, a_text), (b, b_digest, b_text) = sides
    return {
        "op": ledger.op,
        "a": {"attempt": a, "impl_digest": a_digest},
        "b": {"attempt": b, "impl_digest": b_digest},
        "same": a_digest == b_digest,
        "diff": "".join(kernel_diff(a_text, b_text, (a, a_digest), (b, b_digest))),
    }
