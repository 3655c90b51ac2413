"""A splice that only replaces bodies in which nothing can stay open is read back without a
parse: the markers it derives (the old ones moved by each body's change in length) must be
exactly those a parse of the result finds, and a body the check lets through must never hide
its end marker. A body it refuses is read back by the parse, as before."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.errors import BadInput
from ledger.projections import splice

# Text outside the sections (kept byte for byte) and inside the bodies: every kind of block.
OUTSIDE = [
    "# a heading",
    "plain text",
    "> a quote",
    "- a list item",
    "| a | b |",
    "| --- | --- |",
    "    indented code",
    "<!-- a comment -->",
    "",
    "",
]
BODY_LINES = [
    "plain text",
    "",
    "# a heading",
    "> a quote",
    ">",
    "- a list item",
    "  - a nested item",
    "1. an ordered item",
    "2) another",
    "   continued",
    "| a | b |",
    "| --- | --- |",
    "| `x` | <b> |",
    "    indented code",
    "---",
    "===",
    "text with `code` and <b>html</b> inside",
    "† a footnote",
    "```",
    "~~~",
    "- ```",
    "> ~~~",
    "<div>",
    "<pre>",
    "<!--",
    "<!-- a comment -->",
    "<!-- closed --> and text after",
    "<!-->",
    "<!-- not closed --",
    " <!-- indented -->",
    "- <!-- in a list -->",
    "<!-- tune-ledger:rendered-from op=x events=3 -->",
    "<!-- tune-ledger:end status -->",
    "<!-- tune-ledger:begin other -->",
    "<!--tune-ledger:END status-->",
    "[ref]:",
    "[ref]: http://example.com",
    "- [x]:",
]
ENDINGS = ["\n", "\r\n", "\r"]
NAMES = ["header", "status", "history"]


def _file(outside: list[list[str]], newline: str) -> str:
    """A MEMORY.md with the three sections, empty, and the given text around them."""
    parts = []
    for index, name in enumerate(NAMES):
        parts += outside[index]
        parts += [splice.begin_marker(name), splice.end_marker(name)]
    parts += outside[len(NAMES)]
    return "".join(line + newline for line in parts)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(OUTSIDE), max_size=4), min_size=4, max_size=4),
    st.lists(st.lists(st.sampled_from(BODY_LINES), max_size=6), min_size=3, max_size=3),
    st.lists(st.lists(st.sampled_from(BODY_LINES), max_size=6), min_size=3, max_size=3),
    st.sampled_from(ENDINGS),
)
def test_derived_markers_are_what_the_parse_finds(
    outside: list[list[str]],
    first: list[list[str]],
    second: list[list[str]],
    newline: str,
) -> None:
    text = _file(outside, newline)
    for bodies in (first, second):  # a first splice, then one over its result
        new = {
            name: "".join(line + "\n" for line in body)
            for name, body in zip(NAMES, bodies, strict=True)
        }
        closed = all(splice._provably_closed(body) for body in new.values())
        try:
            result = splice.splice(text, new)
        except BadInput:
            assert not closed  # only the parse refuses, and only a body that is not closed
            return
        lines = splice.split_lines(result)
        parsed = splice._whole_marker_lines(lines)
        if closed:
            assert splice._known_markers[splice._digest(result)] == parsed
        assert splice.read_sections(result) == {
            name: splice.normalize_newlines(splice._body(body, "\n")) for name, body in new.items()
        }
        text = result


@pytest.mark.parametrize("body", ["- ```\n", "> ~~~\n", "- <div>\n", "[ref]:\n"])
def test_a_harmless_opener_is_left_to_the_parse_too(body: str) -> None:
    """A container ends at the marker and closes what it holds, and an HTML block's first line
    ends a link reference definition, but the check need not know that: it refuses them, and
    the parse decides (and finds the marker)."""
    assert not splice._provably_closed(body)
    text = splice.splice(splice.template("op", ["status"]), {"status": body})
    assert splice.read_sections(text)["status"] == body


@pytest.mark.parametrize("body", ["```\n", "~~~\n", "<div>\n", "<pre>\n", "<!--\n"])
def test_an_opener_is_left_to_the_parse(body: str) -> None:
    """Each of these hides the end marker after it: none passes the check."""
    assert not splice._provably_closed(body)
    text = splice.template("op", ["status"])
    with pytest.raises(BadInput, match=r"would not be readable|no end marker"):
        splice.splice(text, {"status": body})


def test_rendered_bodies_pass_the_check() -> None:
    body = (
        "| attempt | time |\n| --- | --- |\n| `abc` | 5 µs |\n\n> a quote\n- item\n1. one\n"
        "text with <b>html</b> and `code`\n"
    )
    assert splice._provably_closed(body)


def test_a_body_only_splice_does_not_import_the_parser() -> None:
    """A write that re-renders MEMORY.md's bodies, with its markers known, never imports
    markdown-it (its import was a fifth of a writing command's time)."""
    text = splice.template("op", NAMES)
    markers = splice._whole_marker_lines(splice.split_lines(text))
    child = (
        "import json, sys\n"
        "from ledger.projections import splice\n"
        "text, markers = json.loads(sys.stdin.read())\n"
        "splice._learn_markers(splice._digest(text), [tuple(m) for m in markers])\n"
        "out = splice.splice(text, {'status': '| a |\\n| --- |\\n| 1 |\\n', 'history': 'x\\n'})\n"
        "out = splice.splice(out, {'status': 'y\\n'})\n"
        "print(json.dumps(['markdown_it' in sys.modules, out]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", child],
        input=json.dumps([text, markers]),
        capture_output=True,
        text=True,
        check=True,
    )
    imported, out = json.loads(done.stdout)
    assert not imported
    assert splice.read_sections(out)["status"] == "y\n"
