"""`tune-ledger dashboard`: audit every op under the root and write the static site of them.

Each op is read and replayed by audit itself (`audit.audited`), so the site shows the numbers
audit stands behind, and an op whose ledger cannot be read becomes a damaged row with audit's
message while the others still render. The site is written only inside its folder: index.html
and ops/<op>.html, each replaced atomically (a link planted in their place is replaced, never
written through), and op pages of ops that no longer exist removed. A folder that holds other
files than a dashboard's is refused, so `--out` can never overwrite someone's files.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

from attrs import frozen

from ledger.domain.state import State
from ledger.errors import BadInput, LedgerError
from ledger.log.safe_files import replace_file
from ledger.projections.dashboard_assets import GENERATOR
from ledger.projections.dashboard_index_html import render_index
from ledger.projections.dashboard_markup import INDEX_NAME, PAGES, page_name
from ledger.projections.dashboard_page import kernel_chain, op_page
from ledger.projections.dashboard_page_html import render_op_page
from ledger.projections.dashboard_rows import OpView, op_view
from ledger.projections.kernels import DIGEST
from ledger.shell import audit, kernels
from ledger.shell.api import OpLedger, list_ops

DEFAULT_OUT = "tune-ledger-dashboard"  # under the root; named for what wrote it
_MARK = f'<meta name="generator" content="{GENERATOR}">'.encode()
_MARK_BYTES = 2048  # the mark sits in the head, well within this many bytes


@frozen
class Site:
    """A written dashboard: where its index is, and each op's row."""

    out: Path
    index: Path
    views: tuple[OpView, ...]

    @property
    def clean(self) -> bool:
        """True when audit found nothing in any op (as `audit --all` would exit 0)."""
        return all(view.health == "clean" for view in self.views)


def build(root: Path, out: Path) -> Site:
    """Audit every op under `root` and write the dashboard into `out`."""
    _check_out(out)
    to_root = os.path.relpath(root, out)
    views: list[OpView] = []
    files: dict[str, str] = {}
    for name in list_ops(root):
        view, page = _render_op(root, name, to_root)
        views.append(view)
        if page is not None:
            files[page_name(name)] = page
    files[INDEX_NAME] = render_index(views)
    _write_site(out, files)
    return Site(out=out, index=out / INDEX_NAME, views=tuple(views))


def _render_op(root: Path, name: str, to_root: str) -> tuple[OpView, str | None]:
    """The op's row and page, from audit's replay (no page for a folder that is no op)."""
    try:
        ledger = OpLedger(root, name)
    except BadInput as e:
        report = {"findings": [e.message]}
        return op_view(name, None, report, (e.code, e.rule), has_page=False), None
    result = audit.audited(ledger)
    error = (result.error.code, result.error.rule) if result.error is not None else None
    report = {**result.report, "findings": [_relative(f, root) for f in result.report["findings"]]}
    view = op_view(name, result.state, report, error)
    texts = _kernel_texts(ledger, result.state) if result.state is not None else {}
    page = op_page(view, result.state, report, texts)
    return view, render_op_page(page, to_root)


def _kernel_texts(ledger: OpLedger, state: State) -> dict[str, str]:
    """The text of each kept kernel of the adopted chain, checked against its name (a kernel
    not kept, or whose file does not match, is left out: audit reports the mismatch)."""
    texts = {}
    for _attempt, digest in kernel_chain(state):
        if not DIGEST.fullmatch(digest):
            continue  # no kept file can have this name
        try:
            texts[digest] = kernels.kept(ledger, digest).decode("utf-8", errors="replace")
        except (LedgerError, OSError):
            continue
    return texts


def _relative(message: str, root: Path) -> str:
    """Audit's message with the root's own path left out: paths in the site are relative to
    the root, so the same ledgers give the same bytes wherever the repository is."""
    return message.replace(f"{root}{os.sep}", "") if str(root) != "." else message


def _check_out(out: Path) -> None:
    """Refuse an output folder that is a link, not a folder, or holds other files."""
    for path in (out, out / PAGES):
        if path.is_symlink():
            raise BadInput(
                f"{path} is a symbolic link; the dashboard is never written through a link",
                hint="give --out a real folder (or a new name)",
            )
    if out.exists() and not out.is_dir():
        raise BadInput(f"--out {out} is not a folder", hint="give --out a folder or a new name")
    if out.is_dir() and any(out.iterdir()) and not _is_dashboard(out / INDEX_NAME):
        raise BadInput(
            f"--out {out} holds files that are not a tune-ledger dashboard",
            hint="give --out an empty folder, a new name, or a folder this command wrote",
        )


def _is_dashboard(index: Path) -> bool:
    if index.is_symlink() or not index.is_file():
        return False
    with open(index, "rb") as f:
        return _MARK in f.read(_MARK_BYTES)


def _write_site(out: Path, files: dict[str, str]) -> None:
    pages = out / PAGES
    pages.mkdir(parents=True, exist_ok=True)
    for relative, text in sorted(files.items()):
        _write_if_changed(out, out / relative, text.encode("utf-8"))
    kept = {Path(relative).name for relative in files if relative.startswith(PAGES + "/")}
    for stale in _stale_pages(pages, kept):
        with contextlib.suppress(FileNotFoundError):
            stale.unlink()  # a link is removed itself, never its target


def _stale_pages(pages: Path, kept: set[str]) -> Sequence[Path]:
    return sorted(p for p in pages.iterdir() if p.name.endswith(".html") and p.name not in kept)


def _write_if_changed(out: Path, path: Path, data: bytes) -> None:
    """Replace `path` by `data` unless it is a regular file that holds them already; a link
    planted in its place is removed itself (never written through)."""
    if path.is_symlink():
        path.unlink()
    elif path.is_file():
        with contextlib.suppress(OSError):
            if path.read_bytes() == data:
                return
    replace_file(path, data, root=out, durable_rename=False)


def summary_line(site: Site) -> str:
    """One line for people: where the site is and what it found."""
    damaged = sum(1 for v in site.views if v.health == "damaged")
    findings = sum(1 for v in site.views if v.health == "findings")
    return (
        f"dashboard of {len(site.views)} op(s) written: {site.index.resolve()} "
        f"({damaged} damaged, {findings} with audit findings)"
    )


def problems(site: Site) -> list[str]:
    """Each op's first problem, as `op: message`, for the exit code's error."""
    return [f"{v.op}: {v.problems[0]}" for v in site.views if v.problems]
