"""Fixed-format numbers and escaped Markdown for MEMORY.md and the tuning report.

Everything here is pure and deterministic: the same value always gives the same bytes, so a
re-render changes only the lines whose facts changed (DESIGN §4). User text goes through
`md_text` or `md_code`, which keep it on one line and stop it from opening HTML (a
`<!-- tune-ledger:end … -->` in an attempt's description must stay text, never a marker).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ledger.log.codec import canonical_json

# Characters that end a line for some reader: CommonMark (\n, \r), Python's str.splitlines
# (\v, \f, \x1c-\x1e, \x85, U+2028, U+2029). Inside one table cell none of them may survive.
_LINE_BREAKS = re.compile(r"\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")
# The remaining C0/C1 control characters (tab included): invisible, or harmful in a terminal.
_CONTROLS = re.compile(r"[\x00-\x08\x09\x0e-\x1b\x1f\x7f-\x84\x86-\x9f]")
# Markdown-significant characters that could change structure: `\` (so escapes stay literal),
# `|` (a table cell boundary), '`' (a code span that could swallow the text after it), `<`
# (raw HTML, comments, our markers: written as `&lt;`, so no `<!--` of user text is left in
# the file at all), `[` (every link, image, reference or footnote opens with one: escaped, a
# `[text](url)` or `![alt](url)` in a note stays text, never a hidden target or a fetched
# image), and `&` where it would start an entity (so `&lt;` typed by a user stays text).
_MD_SPECIAL = re.compile(r"[\\|`<[]|&(?=#?[A-Za-z0-9]+;)")
_MD_ESCAPES = {"<": "&lt;"}

ELLIPSIS = "…"


def fmt_time_us(value: float | None) -> str:
    """A time in µs with two decimals (`71.10 µs`); `-` when unknown."""
    if value is None:
        return "-"
    return f"{_no_negative_zero(value, 2)} µs"


def fmt_num(value: float | None, decimals: int = 2) -> str:
    """A plain number with a fixed count of decimals; `-` when unknown."""
    return "-" if value is None else _no_negative_zero(value, decimals)


def fmt_pct(value: float | None, *, signed: bool = False) -> str:
    """A percentage with one decimal (`12.3%`, or `+12.3%` when signed); `-` when unknown."""
    if value is None:
        return "-"
    text = _no_negative_zero(value, 1)
    if signed and not text.startswith("-"):
        text = "+" + text
    return text + "%"


def fmt_speedup(value: float | None) -> str:
    """A speed-up factor with two decimals (`2.50×`); `-` when unknown."""
    return "-" if value is None else f"{_no_negative_zero(value, 2)}×"


def fmt_sci(value: float | None) -> str:
    """A small or large quantity (an accuracy difference) in 3 significant digits."""
    if value is None:
        return "-"
    return "0" if value == 0 else f"{value:.3g}"


def change_pct(new: float, old: float) -> float:
    """The relative change from `old` to `new` in percent (negative is faster)."""
    return (new / old - 1.0) * 100.0


def _no_negative_zero(value: float, decimals: int) -> str:
    text = f"{value:.{decimals}f}"
    if text.startswith("-") and float(text) == 0.0:
        return text[1:]
    return text


def one_line(text: str) -> str:
    """`text` on one line: line breaks and control characters become single spaces."""
    text = _LINE_BREAKS.sub(" ", text)
    text = _CONTROLS.sub(" ", text)
    return text.strip()


def truncate(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, ending in `…` when cut."""
    if limit < 1:
        raise ValueError("limit must be positive")
    return text if len(text) <= limit else text[: limit - 1].rstrip() + ELLIPSIS


def md_text(text: str, limit: int | None = None) -> str:
    """User text as inline Markdown on one line, safe in a table cell or after a label.

    `|`, `\\`, backticks and `[` are backslash-escaped and `<` becomes `&lt;`, so the text can
    neither split a table row, open HTML (a marker-like `<!--` becomes `&lt;!--`) nor form
    a link or an image.
    """
    flat = one_line(text)
    if limit is not None:
        flat = truncate(flat, limit)
    return _MD_SPECIAL.sub(lambda m: _MD_ESCAPES.get(m.group(), "\\" + m.group()), flat)


def md_code(text: str, limit: int | None = None, *, in_table: bool = True) -> str:
    """Text as an inline code span on one line; `|` is escaped when it sits in a table row.

    Text with a `<` is written as escaped plain text instead (`md_text`): inside a code span
    nothing can be escaped, and no `<!--` of user text may appear in the file, not even where
    Markdown would not read it as a comment.
    """
    flat = one_line(text)
    if limit is not None:
        flat = truncate(flat, limit)
    if not flat:
        return "` `"
    if "<" in flat:
        return md_text(flat)
    if in_table:
        # GFM splits rows at unescaped pipes before code spans are parsed, also inside them;
        # a backslash run before a pipe would otherwise escape it or be halved.
        flat = flat.replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", flat)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def md_json(value: Any, limit: int | None = None, *, in_table: bool = True) -> str:
    """A JSON value (a config, a parameter value) as canonical JSON in a code span."""
    return md_code(canonical_json(value), limit, in_table=in_table)


def md_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    align: str | None = None,
) -> str:
    """A GitHub-flavoured table; cells are already Markdown. `align`: one of `lr` per column."""
    width = len(headers)
    marks = align or "l" * width
    if len(marks) != width or any(len(row) != width for row in rows):
        raise ValueError("every row and the alignment need one entry per header")
    rule = ["---:" if mark == "r" else "---" for mark in marks]
    lines = [_row(headers), _row(rule)]
    lines.extend(_row([cell if cell.strip() else "-" for cell in row]) for row in rows)
    return "\n".join(lines) + "\n"


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def short_id(event_id: str | None) -> str:
    """An event or attempt id shortened for display; `-` when absent."""
    return "-" if not event_id else event_id[:12]


def short_digest(digest: str | None) -> str:
    """A content digest shortened for display, without an algorithm prefix."""
    if not digest:
        return "-"
    return digest.split(":", 1)[-1][:12]


def plural(count: int, word: str) -> str:
    """`1 attempt`, `2 attempts`."""
    return f"{count} {word if count == 1 else word + 's'}"


# Each provenance weaker than `measured` has its mark and legend line (issue 27): who vouches
# for a number is visible where it is read, not only in the raw event.
LEVEL_MARKS: dict[str, tuple[str, str]] = {
    "reported": (
        "†",
        "† reported by hand (provenance `reported`), not measured by the ledger (R11).",
    ),
    "ran": (
        "‡",
        "‡ run by an ad-hoc --run command nobody declared (provenance `ran`), not the op's "
        "declared verifier (R11).",
    ),
    "artefact": (
        "¶",
        "¶ parsed from a file (provenance `artefact`), not measured by the ledger (R11).",
    ),
    "unbound": (
        "°",
        "° run by the declared verifier, but naming neither the config nor the kernel it ran "
        "(provenance `unbound`, R11).",
    ),
}


def reported_mark(origin_level: str | None) -> str:
    """The mark a time gets when the ledger did not measure it with the op's declared
    verifier (its provenance level's), else nothing."""
    found = LEVEL_MARKS.get(origin_level or "")
    return found[0] if found else ""


def legend_lines(text: str) -> list[str]:
    """The legend line of each provenance mark that appears in `text`."""
    return [legend for mark, legend in LEVEL_MARKS.values() if mark in text]


def with_legend(text: str) -> str:
    """`text` followed by the legend of each provenance mark that appears in it."""
    lines = legend_lines(text)
    return f"{text.rstrip()}\n\n" + "\n".join(lines) + "\n" if lines else text
