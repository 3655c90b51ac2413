"""Managed sections of a merged MEMORY.md, rendered from the merged ledger (DESIGN §8).

git runs the drivers of one merge (or one picked commit) before it writes anything to the work
tree, in reverse path order, so `custom/<op>/events.jsonl` is merged before
`custom/<op>/MEMORY.md`. The ledger driver leaves its result in `$GIT_DIR/tune-ledger/merged/`
and the MEMORY.md driver takes it from there and renders from it: the merge commit holds a
current MEMORY.md with no manual step. When git merged the ledger without the driver (only one
side changed it), the merged ledger is one side's, and that side's MEMORY.md was rendered from
it. Whatever cannot be told for sure keeps our sections, which `check` reports stale.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path, PurePosixPath

from ledger.domain.replay import replay
from ledger.errors import LedgerError
from ledger.log import chain, safe_files
from ledger.log.files import LEDGER_NAME
from ledger.projections import memory_file, splice
from ledger.projections.line_ends import normalize_newlines
from stages.policy import effective_policy

_STASH = PurePosixPath("tune-ledger") / "merged"
_LAST = re.compile(r"<!-- tune-ledger:rendered-from op=\S+ events=\d+ last=(?P<last>[0-9a-f]+)")


def stash(folder: Path, ledger_path: str, data: bytes) -> None:
    """Leave the merged ledger in the git folder for the MEMORY.md driver of the same merge
    (best effort)."""
    target = folder / _STASH / ledger_path
    with contextlib.suppress(OSError, LedgerError):  # never through a link (safe_files)
        safe_files.replace_file(target, data, root=folder, durable_rename=False)


def _take_stash(folder: Path | None, ledger_path: str) -> bytes | None:
    if folder is None:
        return None
    target = folder / _STASH / ledger_path
    try:
        data = safe_files.read_bytes(
            target, limit=safe_files.LEDGER_BYTES, root=folder, follow=False
        )
        target.unlink()
    except (OSError, LedgerError):
        return None
    return data


def _ids(data: bytes, name: str) -> set[str]:
    return {event.id for event in chain.scan(data, name).events}


def _last_rendered(text: str) -> str | None:
    found = _LAST.search(text)
    return found.group("last") if found else None


def bodies_source(memory_path: str, theirs_text: str, folder: Path | None) -> bytes | str | None:
    """What the merged MEMORY.md's managed sections come from: the merged ledger's bytes (the
    stash in the git `folder`), "theirs" (git took their ledger as it is), or None (keep ours)."""
    ledger_path = str(PurePosixPath(memory_path).parent / LEDGER_NAME)  # beside MEMORY.md
    theirs_last = _last_rendered(theirs_text)
    try:  # git has not touched the work tree yet; run in its top folder
        top = Path.cwd()
        ours = safe_files.read_bytes(
            top / ledger_path, limit=safe_files.LEDGER_BYTES, root=top, follow=False
        )
    except (OSError, LedgerError):
        return None
    try:
        ours_ids = _ids(ours, ledger_path)
        merged = _take_stash(folder, ledger_path)
        if merged is not None:
            merged_ids = _ids(merged, ledger_path)
            # A stash of an earlier, abandoned merge would lack what this one brings.
            if ours_ids <= merged_ids and (theirs_last is None or theirs_last in merged_ids):
                return merged
        if theirs_last is None or theirs_last in ours_ids:
            return ours  # their ledger adds nothing to ours
    except LedgerError:
        return None
    return "theirs"  # their ledger is ahead and git took it: its MEMORY.md was rendered from it


def render(text: str, ledger: bytes, name: str) -> str:
    """`text` with its managed sections rendered from `ledger` (LedgerError if damaged)."""
    state = replay(chain.scan(ledger, name).events)
    position = state.position
    return memory_file.render_memory(text, state, effective_policy(state), position)


def with_bodies_of(text: str, source: str) -> str:
    """`text` with the managed bodies of `source` (both with intact markers)."""
    present = {section.name for section in splice.find_sections(text)}
    bodies = {
        s.name: normalize_newlines(s.body)
        for s in splice.find_sections(source)
        if s.name in present
    }
    return splice.splice(text, bodies) if bodies else text
