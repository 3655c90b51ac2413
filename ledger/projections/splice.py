"""MEMORY.md's managed sections: find them, replace their bodies, keep every other byte.

A managed section is the lines between two marker lines of its own:

    <!-- tune-ledger:begin NAME -->
    ...body, regenerated from the ledger...
    <!-- tune-ledger:end NAME -->

A line is a marker only where Markdown itself sees an HTML comment block of exactly that text
at the top level: markdown-it-py parses the file and its tokens' line maps say where each block
is, so marker-like text in a fenced or indented code block, a block quote, a list, a larger
HTML block or the YAML front matter is left alone. Splicing works on line ranges of the
original text: bytes outside the managed bodies are copied unchanged, and so are the file's
newline convention (CRLF stays CRLF), a byte-order mark, U+2028 and every other character.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import frozen

from ledger.errors import BadInput
from ledger.log import safe_files
from ledger.projections.line_ends import NEWLINE, newline_of, normalize_newlines, split_lines

NAME = re.compile(r"[a-z][a-z0-9-]{0,39}")
_MARKER = re.compile(r"<!-- tune-ledger:(begin|end) ([a-z][a-z0-9-]{0,39}) -->")
# Something meant as a marker but not spelt as one; refused rather than silently ignored,
# because ignoring it would append a second copy of the section.
_NEAR_MARKER = re.compile(r"<!--\s*tune-ledger\s*:\s*(begin|end)\b", re.IGNORECASE)
_BOM = "\ufeff"
_FIX = "then run `tune-ledger render OP`"


@functools.cache
def _parser() -> Any:
    """The block-level Markdown parser, built on first use (status and log never splice, so
    they do not import markdown-it)."""
    # Read-only after construction: one parser serves every call. Only the block structure
    # matters for markers, so inline parsing (half the time of a parse) is off, and so are
    # GFM tables: a marker line ends a table as it ends a paragraph (CommonMark HTML block
    # type 2 interrupts both, tests/test_splice.py), and tables took 40% of a parse of a
    # campaign's MEMORY.md (4.8 vs 2.8 ms at 11 KB, 6 Dec 2026).
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").disable(["inline", "text_join"])


def begin_marker(name: str) -> str:
    """The line that opens managed section `name`."""
    return f"<!-- tune-ledger:begin {_checked(name)} -->"


def end_marker(name: str) -> str:
    """The line that closes managed section `name`."""
    return f"<!-- tune-ledger:end {_checked(name)} -->"


def _checked(name: str) -> str:
    if not NAME.fullmatch(name):
        raise ValueError(f"bad section name {name!r}: lower-case letters, digits and '-'")
    return name


@frozen
class Section:
    """One managed section: marker line indexes (0-based) and the body between, as in the file."""

    name: str
    begin: int
    end: int
    body: str

    @property
    def line(self) -> int:
        """The 1-based line number of the begin marker, for messages."""
        return self.begin + 1


def _bare(line: str) -> str:
    return line.rstrip("\r\n")


def _front_matter_lines(lines: Sequence[str]) -> int:
    """How many leading lines are YAML front matter (`---` ... `---` or `...`), else 0."""
    if not lines or _bare(lines[0]).removeprefix(_BOM).rstrip() != "---":
        return 0
    for index in range(1, len(lines)):
        if _bare(lines[index]).rstrip() in ("---", "..."):
            return index + 1
    return 0


# A splice parses its input and, to check it, its output; the next command's splice parses that
# output again as its input. In a process that appends many times (the autopilot, the MCP
# server) the parse was over half the ledger's time (a 32-attempt campaign, 6 Dec 2026), so
# the markers of the last texts are kept, keyed by the text itself: a pure function's result.
@functools.lru_cache(maxsize=4)
def _markers(text: str) -> tuple[tuple[int, str, str], ...]:
    return tuple(_marker_lines(split_lines(text)))


def _marker_lines(lines: Sequence[str]) -> list[tuple[int, str, str]]:
    """(line index, "begin"|"end", name) of every real marker, in file order, from one parse
    of the whole file (after any front matter)."""
    skip = _front_matter_lines(lines)
    source = "".join(lines[skip:]).removeprefix(_BOM)
    found: list[tuple[int, str, str]] = []
    for first in _one_line_blocks(source):
        index = skip + first
        text = _marker_text(lines[index])
        match = _MARKER.fullmatch(text)
        if match:
            found.append((index, match.group(1), match.group(2)))
        elif _NEAR_MARKER.match(text):
            _near_marker(index, text)
    return found


def _marker_text(line: str) -> str:
    return _bare(line).removeprefix(_BOM).strip()


def _one_line_blocks(source: str) -> list[int]:
    """The line indexes of the top-level HTML blocks of one line in `source`."""
    found = []
    for token in _parser().parse(source):
        if token.type != "html_block" or token.level != 0 or token.map is None:
            continue
        first, last = token.map
        if last - first == 1:  # a larger HTML block: any marker text in it is its content
            found.append(first)
    return found


def _near_marker(index: int, text: str) -> None:
    raise BadInput(
        f"MEMORY.md line {index + 1}: {text!r} looks like a tune-ledger marker but is "
        "not spelt as one",
        hint="write it exactly as `<!-- tune-ledger:begin NAME -->` or "
        f"`<!-- tune-ledger:end NAME -->` (NAME in lower case), or delete it; {_FIX}",
        details={"line": index + 1},
    )


def find_sections(text: str) -> list[Section]:
    """The managed sections of `text` in file order; BadInput (with line numbers) if malformed."""
    return _sections_of(split_lines(text), _markers(text))


def _sections_of(lines: Sequence[str], markers: Sequence[tuple[int, str, str]]) -> list[Section]:
    """`find_sections` of the text of `lines`, whose markers are `markers`."""
    sections: list[Section] = []
    seen: dict[str, int] = {}
    opened: tuple[int, str] | None = None
    for index, kind, name in markers:
        line = index + 1
        if kind == "begin":
            if opened is not None:
                _malformed(
                    f"line {line}: section {name!r} begins inside section {opened[1]!r} "
                    f"(begun at line {opened[0] + 1}); sections cannot nest",
                    f"add `{end_marker(opened[1])}` before line {line}, or delete one of the "
                    "two begin markers",
                    line,
                )
            if name in seen:
                _malformed(
                    f"line {line}: section {name!r} appears twice (first at line {seen[name] + 1})",
                    "delete one copy, markers included",
                    line,
                )
            opened = (index, name)
        elif opened is None:
            _malformed(
                f"line {line}: `{end_marker(name)}` has no begin marker before it",
                f"add `{begin_marker(name)}` where the section starts, or delete the end marker",
                line,
            )
        elif opened[1] != name:
            _malformed(
                f"line {line}: section {opened[1]!r} (begun at line {opened[0] + 1}) is closed "
                f"by the end marker of {name!r}",
                f"make line {line} `{end_marker(opened[1])}`",
                line,
            )
        else:
            begin = opened[0]
            sections.append(Section(name, begin, index, "".join(lines[begin + 1 : index])))
            seen[name] = begin
            opened = None
    if opened is not None:
        begin, name = opened
        _malformed(
            f"line {begin + 1}: section {name!r} has no end marker (a code fence or HTML block "
            "opened inside it may hide it)",
            f"restore `{end_marker(name)}` where the section ends (closing any fence opened "
            "inside it), or delete the begin marker",
            begin + 1,
        )
    return sections


def _malformed(message: str, fix: str, line: int) -> None:
    raise BadInput(f"MEMORY.md {message}", hint=f"{fix}; {_FIX}", details={"line": line})


def read_sections(text: str) -> dict[str, str]:
    """The managed bodies of `text` by name, with LF line ends."""
    return {s.name: normalize_newlines(s.body) for s in find_sections(text)}


def _body(body: str, newline: str) -> str:
    body = normalize_newlines(body)
    if body and not body.endswith("\n"):
        body += "\n"
    return body.replace("\n", newline) if newline != "\n" else body


def _block(name: str, body: str, newline: str) -> list[str]:
    return [
        begin_marker(name) + newline,
        *split_lines(_body(body, newline)),
        end_marker(name) + newline,
    ]


def splice(text: str, sections: Mapping[str, str], order: Sequence[str] | None = None) -> str:
    """Replace the bodies of the named managed sections of `text`; keep every other byte.

    Bodies are given with LF line ends and written in the file's convention. A section the
    file lacks is inserted next to its neighbours in `order` (default: the order of
    `sections`), or, when the file has none, appended at the end after a blank line.
    Sections in the file that are not named are left as they are.
    """
    for name in sections:
        _checked(name)
    names = [n for n in (order or ()) if n in sections]
    names += [n for n in sections if n not in names]
    lines = split_lines(text)
    newline = newline_of(text)
    existing = {s.name: s for s in _sections_of(lines, _markers(text))}

    after: dict[int, list[str]] = {}
    before: dict[int, list[str]] = {}
    at_end: list[str] = []
    for position, name in enumerate(names):
        if name in existing:
            continue
        previous = next((existing[n] for n in reversed(names[:position]) if n in existing), None)
        following = next((existing[n] for n in names[position + 1 :] if n in existing), None)
        if previous is not None:
            after.setdefault(previous.end, []).append(name)
        elif following is not None:
            before.setdefault(following.begin, []).append(name)
        else:
            at_end.append(name)

    replaced = {s.begin: s for s in existing.values() if s.name in sections}
    out: list[str] = []
    placed: dict[str, int] = {}
    index = 0
    while index < len(lines):
        for name in before.get(index, ()):
            placed[name] = len(out)
            out.extend([*_block(name, sections[name], newline), newline])
        section = replaced.get(index)
        if section is not None:
            out.append(lines[index])
            out.extend(split_lines(_body(sections[section.name], newline)))
            index = section.end
        out.append(lines[index])
        if index in after:
            if not NEWLINE.search(out[-1]):
                out[-1] += newline
            for name in after[index]:
                out.append(newline)
                placed[name] = len(out)
                out.extend(_block(name, sections[name], newline))
        index += 1
    if at_end:
        if out and not NEWLINE.search(out[-1]):
            out[-1] += newline
        if out and out[-1].strip():
            out.append(newline)
        for count, name in enumerate(at_end):
            if count:
                out.append(newline)
            placed[name] = len(out)
            out.extend(_block(name, sections[name], newline))
    result = "".join(out)
    _check_read_back(result, sections, placed)
    return result


def _check_read_back(result: str, sections: Mapping[str, str], placed: dict[str, int]) -> None:
    """Refuse a splice whose sections a reader would not find (text before them left open)."""
    found = read_sections(result)
    for name, body in sections.items():
        if found.get(name) != normalize_newlines(_body(body, "\n")):
            line = placed.get(name, 0) + 1
            raise BadInput(
                f"MEMORY.md: managed section {name!r} would not be readable after line {line}: "
                "the text before it leaves a code fence, HTML block or comment open",
                hint=f"close the open fence or comment above line {line}; {_FIX}",
                details={"line": line},
            )


def read_text(path: Path | str) -> str | None:
    """A file's text exactly as stored (UTF-8, line ends untranslated); None when absent.

    A file the ledger writes: a link or anything but a regular file is refused, and so is a
    file over the bound of a text (ledger/log/safe_files.py). (`Path.read_text(newline="")`
    needs Python 3.13; this works on every supported version.)
    """
    target = Path(path)
    data = safe_files.read_optional(target, limit=safe_files.TEXT_BYTES, follow=False)
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadInput(
            f"{target}: not UTF-8 text (byte {error.start})",
            hint="restore the file from git or save it as UTF-8, then run `tune-ledger render OP`",
        ) from error


def write_if_changed(path: Path | str, text: str, *, root: Path | str) -> bool:
    """Write `text` (UTF-8, bytes as given) atomically unless the file already holds it.

    Returns True when the file changed. The new bytes go to a temporary file in the same
    folder, are fsynced, then renamed over the old file, so a crash leaves the old or the new
    file, never a mix. Refused (BadInput) when the file, or a folder between `root` and it, is
    a link, or the file is not a regular file (ledger/log/safe_files.py).

    The rename is not made durable (no fsync of the folder): a crash may bring back the old
    MEMORY.md, whole, with the person's text outside the markers intact and sections one
    command behind the ledger, which `check` reports and the next command or `render`
    rewrites. The ledger's own append is what must survive; this saves one of a command's
    three fsyncs.
    """
    target = Path(path)
    data = text.encode("utf-8")
    existing = safe_files.read_optional(target, limit=safe_files.TEXT_BYTES, follow=False)
    if existing == data:
        return False
    safe_files.replace_file(target, data, root=root, durable_rename=False)
    return True


def template(op: str, names: Sequence[str]) -> str:
    """A fresh MEMORY.md for `op`: a title, the empty managed sections, and a notes section."""
    blocks = "\n".join("".join(_block(name, "", "\n")) for name in names)
    return (
        f"# {op}: tuning memory\n"
        "\n"
        f"Memory of the performance tuning of `{op}`, for the optimizer agent and its reviewers.\n"
        "The sections between the `tune-ledger` markers below are regenerated from the ledger\n"
        f"(`events.jsonl`) after every ledger command; do not edit them: `tune-ledger check {op}`\n"
        "reports stale or hand-edited sections. Everything outside the markers is kept byte for\n"
        "byte.\n"
        "\n"
        f"{blocks}"
        "\n"
        "## Notes\n"
        "\n"
        "Free-form notes (observations, hypotheses, links) go here; tune-ledger never rewrites "
        "them.\n"
    )
