"""MEMORY.md splicing: only managed bodies change, every other byte is kept (DESIGN §4)."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ledger.errors import BadInput
from ledger.projections import splice
from ledger.projections.line_ends import newline_of, split_lines

BEGIN = "<!-- tune-ledger:begin {} -->"
END = "<!-- tune-ledger:end {} -->"


def block(name: str, *body: str, nl: str = "\n") -> str:
    return nl.join([BEGIN.format(name), *body, END.format(name)]) + nl


# --- lines and newlines ----------------------------------------------------------------------


@given(st.text())
def test_split_lines_keeps_every_character(text: str) -> None:
    """Joining the split lines gives the text back, whatever its line ends."""
    assert "".join(split_lines(text)) == text


@given(
    st.lists(st.sampled_from(["a", " ", "\n", "\r", "\r\n", "\u2028", "\x0b", "|"])).map("".join)
)
def test_split_lines_is_a_split_at_each_line_end(text: str) -> None:
    """The same lines as a plain split at CRLF, CR and LF, with or without any CR in the text
    (LF-only text takes a faster path)."""
    parts = re.split(r"(\r\n|\r|\n)", text)
    lines = [parts[i] + parts[i + 1] for i in range(0, len(parts) - 1, 2)]
    if parts[-1]:
        lines.append(parts[-1])
    assert split_lines(text) == lines


def test_split_lines_breaks_where_markdown_does() -> None:
    """LF, CRLF and a lone CR end lines; U+2028, form feed and vertical tab do not."""
    text = "a\u2028b\r\nc\rd\ne\x0cf\x0bg"
    assert split_lines(text) == ["a\u2028b\r\n", "c\r", "d\n", "e\x0cf\x0bg"]


@pytest.mark.parametrize(
    ("text", "newline"),
    [
        ("", "\n"),
        ("a\nb\n", "\n"),
        ("a\r\nb\r\n", "\r\n"),
        ("a\r\nb\r\nc\n", "\r\n"),
        ("a\nb\nc\r\n", "\n"),
        ("a\rb\r", "\r"),
    ],
)
def test_newline_of_is_the_most_frequent_line_end(text: str, newline: str) -> None:
    """The file's convention is its most frequent line end, LF on a tie or when it has none."""
    assert newline_of(text) == newline


# --- what is a marker --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "container",
    [
        "```\n{marker}\n```\n",
        "~~~~ text\n{marker}\n~~~~\n",
        "Para.\n\n    {marker}\n",
        "> {marker}\n",
        "- item\n\n  {marker}\n",
        "<div>\n{marker}\n</div>\n",
        "<!-- a comment that\n{marker}\n",
        "Inline {marker} in a paragraph.\n",
        "| a | b |\n|---|---|\n| {marker} | x |\n",
        "| a | b |\n|---|---|\n```\n{marker}\n```\n",
    ],
    ids=[
        "fence",
        "tilde-fence",
        "indented-code",
        "blockquote",
        "list",
        "html-block",
        "open-comment",
        "inline",
        "table-cell",
        "fence-after-table",
    ],
)
def test_marker_text_inside_other_blocks_is_not_a_marker(container: str) -> None:
    """Marker-like text in code, quotes, lists, HTML, front matter or inline is content."""
    text = container.replace("{marker}", BEGIN.format("status"))
    text += "\n" + container.replace("{marker}", END.format("status"))
    assert splice.find_sections(text) == []


def test_marker_text_in_front_matter_is_not_a_marker() -> None:
    """YAML front matter is not Markdown: marker lines in it are data, kept as they are."""
    front = "---\ntitle: x\n" + BEGIN.format("a") + "\n" + END.format("a") + "\n---\n"
    assert splice.find_sections(front) == []
    result = splice.splice(front + "text\n", {"a": "A\n"})
    assert result == front + "text\n\n" + block("a", "A")
    assert [s.begin for s in splice.find_sections(result)] == [7]


def test_sections_are_found_with_their_lines_and_bodies() -> None:
    """A top-level marker pair delimits a section; its body is the bytes between."""
    text = "# T\n\n" + block("status", "line 1", "", "line 3") + "\ntail\n"
    [section] = splice.find_sections(text)
    assert (section.name, section.begin, section.end, section.line) == ("status", 2, 6, 3)
    assert section.body == "line 1\n\nline 3\n"


def test_a_marker_may_interrupt_a_paragraph_and_a_table() -> None:
    """A marker line right after a paragraph or table line still counts (CommonMark type 2)."""
    text = "para\n" + BEGIN.format("a") + "\n| x |\n|---|\n| 1 |\n" + END.format("a") + "\n"
    [section] = splice.find_sections(text)
    assert section.body == "| x |\n|---|\n| 1 |\n"


def test_a_byte_order_mark_does_not_hide_the_first_marker() -> None:
    """A UTF-8 BOM before the first marker is kept and the marker still found."""
    text = "\ufeff" + block("a", "body")
    assert [s.name for s in splice.find_sections(text)] == ["a"]
    assert splice.splice(text, {"a": "new\n"}) == "\ufeff" + block("a", "new")


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        (BEGIN.format("a") + "\nbody\n", 1, "no end marker"),
        ("x\n" + END.format("a") + "\n", 2, "no begin marker"),
        (
            BEGIN.format("a")
            + "\n"
            + BEGIN.format("b")
            + "\n"
            + END.format("b")
            + "\n"
            + END.format("a")
            + "\n",
            2,
            "cannot nest",
        ),
        (block("a") + block("a"), 3, "appears twice"),
        (BEGIN.format("a") + "\n" + END.format("b") + "\n", 2, "closed by the end marker"),
        ("<!--tune-ledger:begin a-->\n", 1, "not spelt as one"),
        ("<!-- tune-ledger:begin Status -->\n", 1, "not spelt as one"),
        (BEGIN.format("a") + "\n```\nopen fence\n" + END.format("a") + "\n", 1, "no end marker"),
    ],
    ids=[
        "unclosed",
        "orphan-end",
        "nested",
        "duplicate",
        "mismatched",
        "misspelt",
        "upper-case",
        "fence-hides-end",
    ],
)
def test_malformed_structure_is_refused_with_its_line(text: str, line: int, words: str) -> None:
    """Broken markers raise BadInput naming the line and what to do, never guess."""
    with pytest.raises(BadInput) as caught:
        splice.splice(text, {"a": "x\n"})
    error = caught.value
    assert words in error.message
    assert f"line {line}" in error.message
    assert error.details["line"] == line
    assert error.hint and "tune-ledger render" in error.hint
    assert error.code == 2


# --- splicing --------------------------------------------------------------------------------


def test_splice_replaces_only_the_named_bodies() -> None:
    """Named bodies change; other sections and all text outside markers stay."""
    text = "intro\n\n" + block("a", "old a") + "\nmiddle\n\n" + block("b", "old b") + "end"
    result = splice.splice(text, {"a": "new a\nline 2\n"})
    assert result == (
        "intro\n\n" + block("a", "new a", "line 2") + "\nmiddle\n\n" + block("b", "old b") + "end"
    )


def test_crlf_files_get_crlf_bodies() -> None:
    """A CRLF file keeps CRLF everywhere, managed bodies included."""
    text = "title\r\n\r\n" + block("a", "old", nl="\r\n") + "after\r\n"
    result = splice.splice(text, {"a": "one\ntwo\n"})
    assert result == "title\r\n\r\n" + block("a", "one", "two", nl="\r\n") + "after\r\n"
    assert "\n" not in result.replace("\r\n", "")


def test_missing_sections_are_appended_after_a_blank_line() -> None:
    """A file without sections gets them at its end, after a blank line, in order."""
    result = splice.splice("# Notes\nno newline at end", {"a": "A\n", "b": "B\n"})
    assert result == "# Notes\nno newline at end\n\n" + block("a", "A") + "\n" + block("b", "B")


def test_an_empty_file_gets_just_the_sections() -> None:
    """Nothing is prepended to an empty file."""
    assert splice.splice("", {"a": "A\n"}) == block("a", "A")


def test_a_missing_section_goes_next_to_its_neighbours() -> None:
    """A section missing from a file that has others is placed by the given order."""
    text = "top\n\n" + block("b", "B") + "\nnotes\n"
    result = splice.splice(text, {"a": "A\n", "b": "B2\n", "c": "C\n"}, ["a", "b", "c"])
    assert result == (
        "top\n\n" + block("a", "A") + "\n" + block("b", "B2") + "\n" + block("c", "C") + "\nnotes\n"
    )


def test_unknown_sections_are_left_alone() -> None:
    """A section the caller does not name is neither changed nor removed."""
    kept = block("old-name", "keep me") + "\n"
    assert splice.splice(kept + block("a", "x"), {"a": "y\n"}) == kept + block("a", "y")


def test_an_empty_body_leaves_the_markers_adjacent() -> None:
    """An empty body renders as two adjacent marker lines."""
    assert splice.splice(block("a", "x"), {"a": ""}) == block("a")


def test_text_that_would_swallow_appended_sections_is_refused() -> None:
    """An unclosed fence before the end would hide appended sections: refuse, name the line."""
    with pytest.raises(BadInput) as caught:
        splice.splice("text\n```\nunclosed\n", {"a": "A\n"})
    assert "line 5" in caught.value.message
    assert caught.value.details["line"] == 5


def test_template_holds_title_sections_and_notes_outside() -> None:
    """A fresh file has a title, the empty sections in order, and a notes section after."""
    text = splice.template("softmax", ["header", "status"])
    assert text.startswith("# softmax: tuning memory\n")
    assert [s.name for s in splice.find_sections(text)] == ["header", "status"]
    assert text.index("## Notes") > text.index(END.format("status"))
    filled = splice.splice(text, {"header": "H\n", "status": "S\n"})
    assert filled.endswith(text[text.index("\n## Notes") :])


# --- properties ----------------------------------------------------------------------------------

_SAFE = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\r\n"), max_size=30)
_LINE = st.builds(lambda s: "p" + s, _SAFE) | st.sampled_from(
    [
        "with\u2028separator",
        "pipe | in text",
        "trailing spaces  ",
        "tab\there",
        "inline " + BEGIN.format("status") + " marker",
        "ünïcødé ✓ 测试",
    ]
)
_MARKERISH = st.sampled_from(
    [BEGIN.format("status"), END.format("status"), BEGIN.format("failed"), END.format("header")]
)


@st.composite
def _piece(draw: st.DrawFn) -> list[str]:
    marker = draw(_MARKERISH)
    kind = draw(
        st.sampled_from(
            ["para", "fence", "indented", "quote", "list", "comment", "heading", "table", "html"]
        )
    )
    if kind == "para":
        return draw(st.lists(_LINE, min_size=1, max_size=3))
    if kind == "fence":
        fence = draw(st.sampled_from(["```", "~~~", "````"]))
        return [
            fence + draw(st.sampled_from(["", "markdown"])),
            marker,
            *draw(st.lists(_LINE, max_size=2)),
            fence,
        ]
    if kind == "indented":
        return ["    " + marker, "    " + draw(_LINE)]
    if kind == "quote":
        return ["> " + marker, "> " + draw(_LINE)]
    if kind == "list":
        return ["- " + draw(_LINE), "", "  " + marker]
    if kind == "comment":
        return ["<!-- a note", marker]
    if kind == "heading":
        return ["## " + draw(_LINE)]
    if kind == "html":
        return ["<details>", marker, "</details>"]
    return ["| a | b |", "|---|---|", f"| {marker} | x |"]


_NAMES = ("header", "status", "failed")
_BODY = st.lists(_LINE | st.sampled_from(["", "| c |", "|---|", "| v |"]), max_size=4)


@st.composite
def _document(draw: st.DrawFn) -> tuple[list[list[str]], list[tuple[str, list[str]]], str, bool]:
    """Pieces of outside text around 1-3 sections (each with an old body), a newline, an end."""
    names = [n for n in _NAMES if draw(st.booleans())] or ["status"]
    gaps = [draw(st.lists(_piece(), max_size=3)) for _ in range(len(names) + 1)]
    if draw(st.booleans()):
        gaps[0].insert(0, ["---", "title: " + draw(_SAFE), BEGIN.format("status"), "---"])
    sections = [(name, draw(st.lists(_LINE, max_size=3))) for name in names]
    return gaps, sections, draw(st.sampled_from(["\n", "\r\n"])), draw(st.booleans())


def _assemble(
    gaps: list[list[list[str]]], sections: list[tuple[str, list[str]]], nl: str, final: bool
) -> str:
    lines: list[str] = []
    for index, gap in enumerate(gaps):
        for piece in gap:
            lines.extend([*piece, ""])
        if index < len(sections):
            name, body = sections[index]
            lines.extend([BEGIN.format(name), *body, END.format(name), ""])
    text = nl.join(lines)  # ends with nl: every piece and section is followed by ""
    return text if final else text[: -len(nl)]


@settings(max_examples=300, deadline=None)
@given(_document(), st.data())
def test_bytes_outside_the_markers_are_kept(
    document: tuple[list[list[list[str]]], list[tuple[str, list[str]]], str, bool],
    data: st.DataObject,
) -> None:
    """Any surrounding text (CRLF, U+2028, front matter, marker-like lines in code) is kept."""
    gaps, sections, nl, final = document
    original = _assemble(gaps, sections, nl, final)
    new_sections = [(name, data.draw(_BODY)) for name, _old in sections]
    bodies = {name: "".join(line + "\n" for line in body) for name, body in new_sections}
    expected = _assemble(gaps, new_sections, nl, final)
    assert splice.splice(original, bodies) == expected


@settings(max_examples=200, deadline=None)
@given(_document())
def test_splicing_twice_changes_nothing_more(
    document: tuple[list[list[list[str]]], list[tuple[str, list[str]]], str, bool],
) -> None:
    """splice(splice(x)) == splice(x), also when sections have to be added."""
    gaps, sections, nl, final = document
    original = _assemble(gaps, sections, nl, final)
    bodies = {"header": "H\n| t |\n|---|\n", "status": "S\n", "failed": "", "extra": "E\n"}
    once = splice.splice(original, bodies, ["header", "status", "extra", "failed"])
    assert splice.splice(once, bodies, ["header", "status", "extra", "failed"]) == once


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_arbitrary_text_is_kept_or_refused(text: str) -> None:
    """Text without markers is kept as the prefix of the result, or refused with BadInput."""
    assume("tune-ledger" not in text)
    try:
        result = splice.splice(text, {"status": "body\n"})
    except BadInput:
        return
    assert result.startswith(text)
    assert splice.read_sections(result) == {"status": "body\n"}
    assert splice.splice(result, {"status": "body\n"}) == result


# --- writing ------------------------------------------------------------------------------------


def test_write_if_changed_writes_only_changes(tmp_path: Path) -> None:
    """The first write and a change return True; the same bytes again return False."""
    path = tmp_path / "op" / "MEMORY.md"
    assert splice.write_if_changed(path, "a\r\nb\u2028\n", root=tmp_path) is True
    assert path.read_bytes() == "a\r\nb\u2028\n".encode()
    before = path.stat().st_mtime_ns
    assert splice.write_if_changed(path, "a\r\nb\u2028\n", root=tmp_path) is False
    assert path.stat().st_mtime_ns == before
    assert splice.write_if_changed(path, "c\n", root=tmp_path) is True
    assert path.read_text(encoding="utf-8") == "c\n"
    assert sorted(p.name for p in path.parent.iterdir()) == ["MEMORY.md"]


def test_write_if_changed_keeps_the_file_mode(tmp_path: Path) -> None:
    """Replacing the file keeps its permission bits; a new file is 0644."""
    path = tmp_path / "MEMORY.md"
    splice.write_if_changed(path, "x\n", root=tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    os.chmod(path, 0o600)
    splice.write_if_changed(path, "y\n", root=tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_read_text_keeps_line_ends(tmp_path: Path) -> None:
    """Reading gives the stored text with CR, CRLF and U+2028 untouched; None when absent."""
    path = tmp_path / "MEMORY.md"
    assert splice.read_text(path) is None
    path.write_bytes("a\r\nb\rc\u2028d\n".encode())
    assert splice.read_text(path) == "a\r\nb\rc\u2028d\n"
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(BadInput, match="not UTF-8"):
        splice.read_text(path)
