"""MEMORY.md's markers found piece by piece (each piece parsed once per text, so a warm
process re-parses only changed sections) are exactly those one parse of the whole file finds,
and a near-marker is refused at the same line, for any mix of Markdown blocks around them."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.errors import BadInput
from ledger.projections import splice

# Lines that open, continue or close every kind of block that could hide a marker.
LINES = [
    "<!-- tune-ledger:begin status -->",
    "<!-- tune-ledger:end status -->",
    "<!-- tune-ledger:begin history -->",
    "<!-- tune-ledger:end history -->",
    "  <!-- tune-ledger:begin status -->",
    "    <!-- tune-ledger:end status -->",
    "<!-- tune-ledger: begin status -->",
    "<!--tune-ledger:end x-->",
    "\ufeff<!-- tune-ledger:begin status -->",
    "```",
    "~~~",
    "```python",
    "    indented code",
    "> a quote",
    ">",
    "- a list item",
    "1. an ordered item",
    "   continued",
    "| a | b |",
    "| --- | --- |",
    "| 1 | 2 |",
    "<div>",
    "</div>",
    "<!--",
    "-->",
    "<!-- a comment -->",
    "<pre>",
    "</pre>",
    "---",
    "...",
    "===",
    "# a heading",
    "[ref]: http://example.com",
    "plain text",
    "",
    "",
]
ENDINGS = ["\n", "\r\n", "\r"]


def _outcome(find: object, lines: list[str]) -> object:
    try:
        return find(lines)  # type: ignore[operator]
    except BadInput as e:
        return ("refused", e.message)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(LINES), st.sampled_from(ENDINGS)), max_size=40),
    st.booleans(),
)
def test_pieces_find_what_the_whole_parse_finds(chosen: list[tuple[str, str]], bom: bool) -> None:
    text = ("\ufeff" if bom else "") + "".join(line + end for line, end in chosen)
    lines = splice.split_lines(text)
    assert _outcome(splice._marker_lines, lines) == _outcome(splice._whole_marker_lines, lines)


def test_a_rendered_memory_file_is_found_the_same_both_ways() -> None:
    text = splice.template("op", ["header", "status", "history"])
    text = splice.splice(text, {"status": "| a |\n| --- |\n| 1 |\n", "history": "```\nx\n```\n"})
    lines = splice.split_lines(text)
    assert splice._marker_lines(lines) == splice._whole_marker_lines(lines)
    assert [name for _, kind, name in splice._marker_lines(lines) if kind == "begin"] == [
        "header",
        "status",
        "history",
    ]
