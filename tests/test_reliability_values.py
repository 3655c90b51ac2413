"""Recorded values and user text can neither make a read fail nor plant links (issue 20, items
5 and 9): times are refused outside their range at input, a value recorded before that check
still reads, and Markdown links and images in user text stay inert text."""

from __future__ import annotations

from typing import Any

from attrs import evolve
from cli_harness import OP, Cli, activate, frontend, snapshot
from factories import draft
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from ledger.log.file_store import FileStore
from ledger.log.record import converter
from ledger.projections.formatting import md_table, md_text
from ledger.schema.events import TargetSheetWritten

_TARGET = ["--shape", "32x32x1x256", "--target-source", "spec"]
_MD = MarkdownIt("commonmark").enable("table")


def test_a_target_too_small_for_a_finite_speedup_is_bad_input(cli: Cli) -> None:
    """`--target 1e-310us` (required speedup inf) is refused at input, nothing written."""
    activate(cli)
    before = snapshot(cli.root)
    refused = cli("target", OP, "--baseline", "100us", "--target", "1e-310us", *_TARGET)
    assert refused.code == 2
    assert "1e-06 µs .. 1e+12 µs" in refused.json["error"]
    assert snapshot(cli.root) == before


def test_a_time_beyond_the_range_is_bad_input(cli: Cli) -> None:
    """A baseline of 10^13 µs is past the range; the edges themselves are accepted."""
    activate(cli)
    before = snapshot(cli.root)
    assert cli("target", OP, "--baseline", "1e13us", "--target", "1us", *_TARGET).code == 2
    assert snapshot(cli.root) == before
    cli.ok("target", OP, "--baseline", "1e12us", "--target", "1e-6us", *_TARGET)


def test_reads_survive_a_speedup_recorded_as_infinite(cli: Cli) -> None:
    """A sheet recorded before the range check (Baseline/Target overflows) still reads."""
    activate(cli)
    cli.ok("target", OP, "--baseline", "100us", "--target", "50us", *_TARGET)
    sheet = cli.events()[-1]["payload"]
    valid = converter().structure({**sheet, "baseline_us": 1e12}, TargetSheetWritten)
    # What an older release wrote: the same payload with a target its checks let through.
    forged = evolve(valid)
    object.__setattr__(forged, "target_us", 1e-310)
    store = FileStore(cli.ledger())
    store.append([draft(forged)], expected_head=None)
    for view in ("status", "resume"):
        shown = cli.ok(view, OP)
        assert shown["required_speedup"] is None, view
        assert cli(view, OP, as_json=False).code == 0
    assert cli("log", OP).code == 0


def _links(markdown: str) -> list[Any]:
    """The link and image tokens to evil.example that Markdown finds in `markdown`."""
    found = []
    for token in _MD.parse(markdown):
        found += [
            c
            for c in token.children or []
            if c.type in ("link_open", "image") and "evil" in str(c.attrs)
        ]
    return found


_LINK_TEXT = "see [the fix](http://evil.example/x) ![pixel](http://evil.example/p.png) [ref]"


def test_links_and_images_in_user_text_stay_text(cli: Cli) -> None:
    """A note, a point's reason and a stop reason with links render without any link."""
    frontend(cli)
    cli.ok("note", OP, "--text", _LINK_TEXT)
    cli.ok("point", "close", OP, "F-1", "--reason", _LINK_TEXT)
    cli.ok("stop", OP, "--reason", _LINK_TEXT)
    cli.ok("report", OP)
    folder = cli.root / "custom" / OP
    for name in ("MEMORY.md", f"{OP}_tuning_report.md"):
        text = (folder / name).read_text("utf-8")
        assert "evil.example" in text, name
        assert _links(text) == [], name


_NOISE = st.text(alphabet=st.sampled_from("[]()!<>:/\\ab` \n"), max_size=12)


@settings(max_examples=300, deadline=None)
@given(_NOISE, _NOISE, st.sampled_from(["", "!"]), _NOISE)
def test_md_text_never_forms_a_link_or_an_image(
    before: str, label: str, bang: str, after: str
) -> None:
    """A link or image to evil.example amid any brackets stays text in a cell or a list."""
    text = f"{before}{bang}[{label}x](http://evil.example/){after}"
    assert _links(md_table(["h"], [[md_text(text)]])) == []
    assert _links(f"- note: {md_text(text)}\n\n[x]: http://evil.example\n") == []
