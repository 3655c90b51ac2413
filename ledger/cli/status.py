"""`status` and `resume`: where the campaign stands, replayed from the ledger, with warnings
about the files beside it (the implementation, SPEC.md's manifest).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ledger.cli.base import OP, Ctx, load_state, pass_ctx
from ledger.domain import hints
from ledger.log import safe_files
from ledger.log.files import ledger_path


@click.command()
@click.argument("op", type=OP)
@pass_ctx
def status(ctx: Ctx, op: str) -> None:
    """Show where the campaign stands and which commands are allowed next."""
    _show(ctx, op, "status")


@click.command()
@click.argument("op", type=OP)
@pass_ctx
def resume(ctx: Ctx, op: str) -> None:
    """Tell an interrupted agent exactly where it stopped, what to reload and what to run next."""
    _show(ctx, op, "resume")


def _show(ctx: Ctx, op: str, view: str) -> None:
    """Print one of the op's views, replayed from its ledger, and its warnings."""
    from ledger.projections import resume_view, status_view

    state, warnings = load_state(ctx, op)
    folder = ledger_path(ctx.root, op).parent
    data = status_view.json_safe({**status_view.status(state), "warnings": warnings})
    text = status_view.status_text(data)
    if view == "resume":
        data = {**data, **status_view.json_safe(resume_view.resume_fields(state))}
        text = resume_view.resume_text(data)
    found = [
        w
        for w in (_impl_warning(folder, op, data), _manifest_warning(folder, op, data))
        if w is not None
    ]
    data["warnings"] = [*warnings, *found]
    ctx.warn(data["warnings"])
    ctx.emit(data, text)


def _manifest_warning(folder: Path, op: str, status: dict[str, Any]) -> str | None:
    """The warning that SPEC.md's manifest is not the one the ledger recorded, or None; SPEC.md
    is parsed only for an op whose ledger recorded a manifest."""
    if not status.get("manifest"):
        return None
    recorded = status["manifest"]["digest"]
    if not (folder / "SPEC.md").exists():
        return None
    from ledger.errors import BadInput
    from ledger.shell.manifest_file import read_manifest

    try:
        manifest = read_manifest(folder)
    except BadInput as e:
        return f"custom/{op}/SPEC.md's manifest no longer parses: {e.message}"
    current = manifest.digest if manifest is not None else None
    if current is None or current == recorded:
        return None
    return (
        f"custom/{op}/SPEC.md's manifest changed since the ledger recorded it ({recorded} → "
        f"{current}); `tune-ledger manifest {op}` records it (`measure` and `target "
        "--from-spec` do so before they measure)"
    )


def _impl_warning(folder: Path, op: str, data: dict[str, Any]) -> str | None:
    """The warning that the implementation on disk is not the one the campaign expects (R6),
    or None."""
    impl = folder / f"{op}_impl.py"
    try:  # a regular file, bounded; a link may not leave the root (BadInput otherwise)
        digest = safe_files.digest(impl, limit=safe_files.TEXT_BYTES, root=folder.parent.parent)
    except OSError:
        return None  # no file (or none readable): `try` and `candidate` name it when it matters
    expected = data.get("impl_digest_expected")
    if not expected or expected == digest:
        return None
    where = f"custom/{op}/{impl.name}"
    whose = (
        f"the pending attempt {data['pending']} runs"
        if data.get("pending")
        else ("the best was measured with")
    )
    algorithm = (
        f", or record the change: {hints.Step('try', op, algorithm=hints.TEXT, impl=where)}"
        if data.get("stage") == "algorithm" and not data.get("pending")
        else ""
    )
    # The ledger kept that kernel (ledger/shell/kernels.py): one command brings it back, also
    # after a rolled-back algorithm attempt whose file was never committed.
    how = (
        f"`{hints.Step('kernel restore', op, attempt=data.get('pending'))}`"
        if (folder / "kernels" / f"{expected}.py").is_file()
        else f"`git restore {where}` or `git checkout -- {where}` when git tracks it"
    )
    return (
        f"R6: {where} has digest {digest[:12]}, {whose} {expected[:12]}; restore {where} "
        f"({how}) before the next attempt, which starts from the best{algorithm}"
    )


COMMANDS = (status, resume)
