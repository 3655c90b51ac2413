"""Git integration: the merge drivers git runs for ledgers and MEMORY.md, and `git-setup`.

git runs a custom merge driver as `DRIVER %O %A %B %P`: the common ancestor's, our and their
versions in temporary files, and the path in the work tree. The driver writes the result
over %A and exits 0, or leaves a conflict and exits non-zero (DESIGN §4: two branches that
both appended merge into one log with every event once, whichever side is "ours").
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from attrs import frozen

from ledger import processes
from ledger.errors import BadInput, LedgerError
from ledger.git import memory_render, merge
from ledger.log import safe_files
from ledger.projections import splice

EVENTS_DRIVER = "tune-ledger-events"
MEMORY_DRIVER = "tune-ledger-memory"
ATTRIBUTES_HEADER = "# tune-ledger merge drivers (written by `tune-ledger git-setup`)"
# -text: git never converts the ledger's line ends (a CRLF checkout would change every
# line's bytes and so its content id); eol=lf says the same to tools that read attributes.
ATTRIBUTES = (
    f"custom/*/events.jsonl merge={EVENTS_DRIVER} -text eol=lf",
    f"custom/*/MEMORY.md merge={MEMORY_DRIVER}",
)
IGNORE_HEADER = "# tune-ledger: never committed (written by `tune-ledger git-setup`)"
# The ledger's lock file (it holds no data: the lock is on the open file) and the byte code
# Python leaves beside an op's kernel and golden when the verifier or the layout check imports
# them: a `git add -A` after a campaign committed both.
IGNORED = ("custom/*/events.jsonl.lock", "custom/*/__pycache__/")
_GIT_TIMEOUT_S = 60


# --- the ledger driver -----------------------------------------------------------------------


def merge_driver(base: Path, ours: Path, theirs: Path, path: str | None) -> merge.Merged:
    """Merge the three versions of a ledger git gives and write the result over `ours`.

    Raises LedgerDamaged (exit 7, `ours` left as it was) when a side is damaged.
    """
    name = path or str(ours)
    merged = merge.merge(_read_base(base), _read_side(ours, follow=False), _read_side(theirs), name)
    _write_ours(ours, merged.data)
    folder = _git_dir() if path else None
    if path and folder is not None:
        memory_render.stash(folder, path, merged.data)  # for the MEMORY.md driver git runs next
    return merged


def _read_base(path: Path) -> bytes:
    # The base only feeds the report: a file added on both sides has none.
    return safe_files.read_optional(path, limit=safe_files.LEDGER_BYTES) or b""


def _read_side(path: Path, *, follow: bool = True) -> bytes:
    """A side's bytes (a regular file, bounded: ledger/log/safe_files.py); BadInput (exit 2)
    when the file is missing: git always writes both sides, so a missing one is a wrong
    argument, never an empty ledger to merge with. `follow=False` for ours, written after."""
    try:
        return safe_files.read_bytes(path, limit=safe_files.LEDGER_BYTES, follow=follow)
    except FileNotFoundError:
        raise BadInput(
            f"{path}: no such file to merge",
            hint="git runs the driver as `tune-ledger merge-driver %O %A %B %P`; check the "
            "driver command (`tune-ledger git-setup` writes it)",
        ) from None


# --- the MEMORY.md driver ----------------------------------------------------------------------


@frozen
class MemoryMerge:
    """A merged MEMORY.md: how many text conflicts git left, and how it was merged."""

    conflicts: int
    stripped: bool  # False when a side's markers were malformed: merged as plain text
    rendered: bool = False  # True when the managed sections are the merged ledger's


def strip_managed(text: str) -> str:
    """`text` with every managed section's body emptied (markers and other bytes kept)."""
    sections = splice.find_sections(text)
    if not sections:
        return text
    return splice.splice(text, {section.name: "" for section in sections})


def memory_merge_driver(
    base: Path, ours: Path, theirs: Path, marker_size: int | None = None, path: str | None = None
) -> MemoryMerge:
    """Merge MEMORY.md's human text as git merges text; managed sections from the merged ledger.

    Managed sections are generated from the ledger, so they are emptied on all three sides
    before the text merge (they never conflict), then filled again: rendered from the merged
    ledger the ledger driver left for this merge, taken from the side whose ledger git kept,
    or, when neither can be told (`path`, git's %P, unknown), ours, which `tune-ledger check`
    then reports stale until `tune-ledger render OP` (ledger/git/memory_render.py).
    """
    texts = [_text(path) for path in (ours, base, theirs)]
    try:
        stripped = [strip_managed(text) for text in texts]
    except BadInput:  # a side's markers are malformed: a plain text merge, left to a person
        merged, conflicts = merge_text(texts[0], texts[1], texts[2], marker_size)
        _write_ours(ours, merged)
        return MemoryMerge(conflicts=max(conflicts, 1), stripped=False)
    merged, conflicts = merge_text(stripped[0], stripped[1], stripped[2], marker_size)
    source = memory_render.bodies_source(path, texts[2], _git_dir()) if path else None
    if isinstance(source, bytes):
        with contextlib.suppress(LedgerError, UnicodeDecodeError):
            rendered = memory_render.render(merged.decode("utf-8"), source, path or "")
            _write_ours(ours, rendered.encode("utf-8"))
            return MemoryMerge(conflicts=conflicts, stripped=True, rendered=True)
    bodies = texts[2] if source == "theirs" else texts[0]
    _write_ours(ours, _with_bodies(merged, bodies))
    return MemoryMerge(conflicts=conflicts, stripped=True, rendered=source == "theirs")


def _with_bodies(merged: bytes, source: str) -> bytes:
    """`merged` with the managed bodies of `source` put back (as is, when that is impossible:
    text conflicts around the markers)."""
    try:
        return memory_render.with_bodies_of(merged.decode("utf-8"), source).encode("utf-8")
    except (BadInput, UnicodeDecodeError):
        return merged


def _text(path: Path) -> str:
    return splice.read_text(path) or ""


def _write_ours(ours: Path, data: bytes) -> None:
    """The merge's result over git's file %A (a temporary file, never through a link)."""
    safe_files.replace_file(ours, data, root=None, durable_rename=False)


def merge_text(
    ours: str, base: str, theirs: str, marker_size: int | None = None
) -> tuple[bytes, int]:
    """`git merge-file -p` of three texts: the merged bytes and the number of conflicts."""
    with tempfile.TemporaryDirectory(prefix="tune-ledger-merge-") as folder:
        paths = []
        for label, text in (("ours", ours), ("base", base), ("theirs", theirs)):
            path = Path(folder) / label
            path.write_bytes(text.encode("utf-8"))
            paths.append(str(path))
        marker = [f"--marker-size={marker_size}"] if marker_size else []
        done = _git(
            ["merge-file", "-p", *marker, "-L", "ours", "-L", "base", "-L", "theirs", *paths],
            check=False,
        )
    if done.exit_code < 0 or done.exit_code > 127:
        raise LedgerError(f"git merge-file failed: {done.errors.decode(errors='replace')}")
    return done.output, done.exit_code


# --- git-setup ---------------------------------------------------------------------------------


@frozen
class Setup:
    """What git-setup changed and found."""

    changed: tuple[str, ...]
    unchanged: tuple[str, ...]
    warnings: tuple[str, ...]
    attributes: str
    files_changed: tuple[str, ...]  # the files it wrote, to be committed


def driver_command() -> str:
    """How git should run tune-ledger: `tune-ledger` when it is on PATH, else this Python."""
    if shutil.which("tune-ledger"):
        return "tune-ledger"
    return f"{shlex.quote(sys.executable)} -m ledger"


def git_setup(root: Path, command: str | None = None) -> Setup:
    """Write the .gitattributes entries and the repository's git config for both drivers.

    Idempotent: what is already in place is left alone and listed in `unchanged`.
    """
    command = command or driver_command()
    toplevel = _git(["rev-parse", "--show-toplevel"], cwd=root, check=False)
    if toplevel.exit_code != 0:
        raise BadInput(
            f"{root} is not inside a git repository",
            hint="run `git init` first, or give --root inside the repository",
        )
    changed: list[str] = []
    unchanged: list[str] = []
    files_changed: list[str] = []
    attributes = root / ".gitattributes"
    for path, header, lines in (
        (attributes, ATTRIBUTES_HEADER, ATTRIBUTES),
        (root / ".gitignore", IGNORE_HEADER, IGNORED),
    ):
        added = _add_lines(root, path, header, lines)
        for line in lines:
            (changed if line in added else unchanged).append(f"{path}: {line}")
        if added:
            files_changed.append(str(path))
    settings = {
        f"merge.{EVENTS_DRIVER}.name": "tune-ledger: union of two ledgers' events",
        f"merge.{EVENTS_DRIVER}.driver": f"{command} merge-driver %O %A %B %P",
        f"merge.{MEMORY_DRIVER}.name": "tune-ledger: MEMORY.md text merge, managed sections "
        "re-rendered",
        f"merge.{MEMORY_DRIVER}.driver": f"{command} memory-merge-driver %O %A %B %P "
        "--marker-size %L",
    }
    for key, value in settings.items():
        current = _git(["config", "--local", "--get", key], cwd=root, check=False)
        if current.exit_code == 0 and current.output.decode().rstrip("\n") == value:
            unchanged.append(f"git config {key}")
            continue
        _git(["config", "--local", key, value], cwd=root)
        changed.append(f"git config {key} = {value}")
    return Setup(
        changed=tuple(changed),
        unchanged=tuple(unchanged),
        warnings=tuple(_setup_warnings(root, command)),
        attributes=str(attributes),
        files_changed=tuple(files_changed),
    )


def _add_lines(root: Path, path: Path, header: str, lines: Sequence[str]) -> list[str]:
    """Append the missing `lines` to `path` (after `header`, once); return the lines added.
    The file is written as MEMORY.md is: never through a link (ledger/log/safe_files.py)."""
    existing = splice.read_text(path) or ""
    present = {line.strip() for line in existing.splitlines()}
    missing = [line for line in lines if line not in present]
    if not missing:
        return []
    block = ([] if header in present else [header]) + missing
    prefix = "" if not existing or existing.endswith("\n") else "\n"
    splice.write_if_changed(path, existing + prefix + "\n".join(block) + "\n", root=root)
    return missing


def _setup_warnings(root: Path, command: str) -> list[str]:
    warnings = []
    program = shlex.split(command)[0] if command.strip() else ""
    if not shutil.which(program):
        warnings.append(
            f"{program!r} is not on PATH: git will not find the merge driver "
            "(give --command, or install tune-ledger where git runs)"
        )
    for sample, driver in (
        ("custom/OP/events.jsonl", EVENTS_DRIVER),
        ("custom/OP/MEMORY.md", MEMORY_DRIVER),
    ):
        found = _git(["check-attr", "merge", "--", sample], cwd=root, check=False)
        value = found.output.decode().rstrip("\n").rpartition(": ")[2]
        if found.exit_code == 0 and value != driver:
            warnings.append(
                f"git resolves the merge attribute of {sample} to {value!r}, not "
                f"{driver!r}: another attributes file (.git/info/attributes, a "
                "deeper .gitattributes) overrides it"
            )
    return warnings


def _git_dir() -> Path | None:
    """The repository's git folder, where one merge's drivers leave each other the merged
    ledger; None outside a repository."""
    with contextlib.suppress(OSError, LedgerError):
        done = _git(["rev-parse", "--absolute-git-dir"], check=False)
        if done.exit_code == 0:
            return Path(done.output.decode().strip())
    return None


def _git(args: Sequence[str], *, cwd: Path | None = None, check: bool = True) -> processes.Finished:
    try:
        done = processes.run(
            ["git", *args],
            cwd=cwd,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
            limits=processes.Limits(wall_s=_GIT_TIMEOUT_S),
            separate_stderr=True,
        )
    except FileNotFoundError as e:
        raise BadInput("git is not installed (or not on PATH)") from e
    if done.timed_out or done.output_truncated:
        what = f"ran over {_GIT_TIMEOUT_S:g} s" if done.timed_out else "printed too much"
        raise LedgerError(f"git {' '.join(args)} {what}")
    if check and done.exit_code != 0:
        raise LedgerError(
            f"git {' '.join(args)} failed: {done.errors.decode(errors='replace').strip()}"
        )
    return done
