"""`status` and `resume`: where the campaign stands, served from the view cache.

Both are pure functions of the ledger's bytes, run before and after nearly every step, and
must not cost more on a long ledger than on a short one: they read
`ledger.projections.view_cache` first and replay the ledger only on a miss. This module
imports nothing heavy at its top, so a hit loads neither the events' classes nor the stage machines.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import click

from ledger.cli.base import OP, Ctx, load_state, pass_ctx
from ledger.domain import hints
from ledger.domain.units import check_op_name
from ledger.log import codec, safe_files
from ledger.log.files import ledger_path
from ledger.projections import view_cache


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
    """Print one of the op's views, cached or replayed from its ledger, and its warnings."""
    path = ledger_path(ctx.root, check_op_name(op))

    def replayed() -> tuple[view_cache.Rendered, list[str]]:
        # Also the path taken when there is no ledger: `ctx.op` refuses it as it always did.
        state, warnings = load_state(ctx, op)
        return view_cache.render(state, warnings), warnings

    rendered, warnings = view_cache.cached_views(path, op, replayed)
    status_json = rendered["status"]["json"]
    found = [
        w
        for w in (
            _impl_warning(path.parent, op, status_json),
            _manifest_warning(path.parent, op, status_json),
        )
        if w is not None
    ]
    if not found:
        ctx.warn(warnings)
        ctx.echo_rendered(rendered[view])
        return
    ctx.warn([*warnings, *found])
    if ctx.as_json:  # rare: only then is the cached JSON decoded, to carry the warning inline
        data = codec.loads(rendered[view]["json"])
        data["warnings"] = [*data.get("warnings", []), *found]
        click.echo(codec.canonical_json(hints.render(data)))
    else:
        click.echo(hints.render_text(rendered[view]["text"]))


def _manifest_warning(folder: Path, op: str, status_json: str) -> str | None:
    """The warning that SPEC.md's manifest is not the one the ledger recorded, or None; SPEC.md
    is parsed only for an op whose ledger recorded a manifest."""
    if '"manifest":{"digest":' not in status_json:
        return None
    recorded = codec.loads(status_json)["manifest"]["digest"]
    spec = folder / "SPEC.md"
    try:
        seen = spec.stat()
    except OSError:
        return None
    # Parsing YAML on every `status` would cost more than the cached view itself: the digest of
    # SPEC.md as last parsed is kept beside the view cache, keyed by the file's identity, size
    # and mtime, and trusted only while they match (a disposable cache, never evidence).
    memo = folder / view_cache.CACHE_DIR / "spec-manifest.json"
    key = [seen.st_ino, seen.st_size, seen.st_mtime_ns]
    try:
        kept = codec.loads(memo.read_bytes())
    except (OSError, ValueError):
        kept = None
    if isinstance(kept, dict) and kept.get("key") == key:
        current = kept.get("digest")
    else:
        from ledger.errors import BadInput
        from ledger.shell.manifest_file import read_manifest

        try:
            manifest = read_manifest(folder)
        except BadInput as e:
            return f"custom/{op}/SPEC.md's manifest no longer parses: {e.message}"
        current = manifest.digest if manifest is not None else None
        with contextlib.suppress(OSError):
            memo.write_text(codec.canonical_json({"key": key, "digest": current}))
    if current is None or current == recorded:
        return None
    return (
        f"custom/{op}/SPEC.md's manifest changed since the ledger recorded it ({recorded} → "
        f"{current}); `tune-ledger manifest {op}` records it (`measure` and `target "
        "--from-spec` do so before they measure)"
    )


def _impl_warning(folder: Path, op: str, status_json: str) -> str | None:
    """The warning that the implementation on disk is not the one the campaign expects (R6),
    or None; one sha256 of one file, and the view is decoded only when they differ."""
    impl = folder / f"{op}_impl.py"
    try:  # a regular file, bounded; a link may not leave the root (BadInput otherwise)
        digest = safe_files.digest(impl, limit=safe_files.TEXT_BYTES, root=folder.parent.parent)
    except OSError:
        return None  # no file (or none readable): `try` and `candidate` name it when it matters
    if f'"impl_digest_expected":"{digest}"' in status_json:
        return None
    data = codec.loads(status_json)
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


# The commands this module adds to `tune-ledger` (ledger.cli names them, to load them lazily).
COMMANDS = (status, resume)
