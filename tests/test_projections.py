"""MEMORY.md projections: golden files, determinism, bounds, escaping and `check` (DESIGN §4).

Golden files live in tests/data/memory/. After an intended change of the output, regenerate
them with one command and review the diff in git before committing:

    UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_projections.py
"""

from __future__ import annotations

import copy
import difflib
import os
import re
from collections.abc import Callable
from pathlib import Path

import memory_states as ms
import pytest
from driver import candidate, in_point, vec
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from ledger.domain.state import Attempt, State
from ledger.log.position import Position
from ledger.projections import memory_history, splice
from ledger.projections.formatting import md_code, md_table, md_text, one_line
from ledger.projections.line_ends import split_lines
from ledger.projections.memory_file import check_memory, render_memory
from ledger.projections.memory_layout import SECTION_ORDER
from ledger.projections.timeline import is_failed
from stages import commands as cmd
from stages.policy import effective_policy

GOLDEN = Path(__file__).parent / "data" / "memory"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"
MD = MarkdownIt("commonmark").enable("table")
KIB = 1024

EXISTING = (
    "---\r\n"
    "title: softmax memory\r\n"
    "note: <!-- tune-ledger:begin status -->\r\n"
    "---\r\n"
    "# softmax\r\n"
    "\r\n"
    "Human notes with a line\u2028separator, kept as they are.\r\n"
    "\r\n"
    "```markdown\r\n"
    "<!-- tune-ledger:begin failed -->\r\n"
    "An example of a marker, inside a fence: not a marker.\r\n"
    "<!-- tune-ledger:end failed -->\r\n"
    "```\r\n"
    "\r\n"
    "    <!-- tune-ledger:end history -->  (indented code)\r\n"
    "\r\n"
    "## Hypotheses\r\n"
    "\r\n"
    "- try a wider vec tile once the limit is relaxed\r\n"
    "no final newline"
)


def _handed_back() -> State:
    state = ms.fresh()
    state.compare = ms.activated().compare
    assert state.compare is not None
    state.compare.passed = False
    state.compare.outputs[0]["all_close"] = False
    state.handed_back = True
    state.activation_problems = ["output out: all_close false", "no layout check recorded"]
    return state


def _campaign_40() -> State:
    state = ms.campaign(40)
    state.notes = ["frontend converged on [1,32,64]", "watch the UB size at 64x64"]
    pending = Attempt(
        id=ms.hexid("pending", length=12),
        seq=41,
        kind="mutation",
        stage="incore",
        point=state.open_point,
        config={},
        param="unroll_list",
        value=[8, 2, 1],
    )
    state.attempts[pending.id] = pending
    state.pending = pending.id
    return state


STATES: dict[str, Callable[[], State]] = {
    "fresh": ms.fresh,
    "handed-back": _handed_back,
    "activated": ms.activated,
    "target-sheet": lambda: ms.with_sheet(cube_m=None),
    "campaign-40": _campaign_40,
    "hostile-60": lambda: ms.hostile(ms.campaign(60)),
}


def render(
    state: State,
    existing: str | None = None,
    policy: dict[str, object] | None = None,
) -> str:
    """MEMORY.md for `state` with the default policy."""
    return render_memory(
        existing, state, effective_policy(state) if policy is None else policy, ms.position(state)
    )


def _golden(name: str, text: str) -> None:
    path = GOLDEN / f"{name}.md"
    data = text.encode("utf-8")
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        splice.write_if_changed(path, text, root=path.parent)
    assert path.exists(), f"{path} is missing: run UPDATE_GOLDEN=1 pytest {__file__}"
    assert path.read_bytes() == data, f"{path} differs: review, then UPDATE_GOLDEN=1"


# --- golden files ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(STATES))
def test_memory_matches_its_golden_file(name: str) -> None:
    """A fresh MEMORY.md for each constructed state is byte for byte the reviewed golden file."""
    _golden(name, render(STATES[name]()))


def test_rendering_into_an_existing_file_matches_its_golden_file() -> None:
    """A hand-written CRLF file with front matter and marker-like code keeps every byte."""
    text = render(ms.campaign(12), EXISTING)
    _golden("existing-crlf", text)
    assert text.startswith(EXISTING + "\r\n\r\n" + "<!-- tune-ledger:begin header -->\r\n")
    assert "\n" not in text.replace("\r\n", "")


# --- determinism, idempotence -----------------------------------------------------------------


def test_rendering_twice_gives_the_same_bytes() -> None:
    """Two renders of equal states (built separately) are identical: no clock, no set order."""
    assert render(ms.campaign(200)) == render(ms.campaign(200))
    state = ms.campaign(200)
    assert render(state) == render(copy.deepcopy(state))


def test_rerendering_a_rendered_file_changes_nothing() -> None:
    """render(render(x)) == render(x), with and without surrounding human text."""
    state = ms.campaign(80)
    for existing in (None, EXISTING, ""):
        once = render(state, existing)
        assert render(state, once) == once


def test_one_new_attempt_changes_only_a_few_lines() -> None:
    """Appending one attempt changes a handful of lines wherever the campaign stands."""
    for attempts in (3, 40, 300, 999):
        before = render(ms.campaign(attempts, horizon=1000)).splitlines()
        after = render(ms.campaign(attempts + 1, horizon=1000)).splitlines()
        diff = [
            line
            for line in difflib.unified_diff(before, after, lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))
        ]
        added = sum(1 for line in diff if line.startswith("+"))
        removed = len(diff) - added
        assert added <= 10 and removed <= 10, (attempts, diff)


# --- contents --------------------------------------------------------------------------------


def test_sections_come_in_order_with_the_seeds_titles() -> None:
    """Every managed section is there, in order, with the seed's section titles."""
    text = render(ms.campaign(30))
    assert [s.name for s in splice.find_sections(text)] == list(SECTION_ORDER)
    for title in (
        "## Activation evidence",
        "## Performance target sheet",
        "## Failed attempts — do not retry",
        "## Tuning status",
        "## Adopted changes",
        "## Recent history",
    ):
        assert text.count(title) == 1


def test_target_sheet_shows_speedup_as_baseline_over_target_and_the_limits() -> None:
    """Required speedup = Baseline/Target with the inversion note; tile limits and relaxations."""
    body = splice.read_sections(render(ms.campaign(5)))["target-sheet"]
    assert "| Required speedup | 4.00× | Baseline / Target" in body
    assert '"Target / Baseline" is inverted' in body
    assert "design range [16, 64]" in body
    assert "M = 128 (M ≥ 64): [128,128], [64,256], [256,256]" in body
    assert "swimlane shows vec units idle 40% at 64 \\| see perf/run-12" in body
    plain = splice.read_sections(render(ms.with_sheet(cube_m=None)))["target-sheet"]
    assert "≤ 64 per axis" in plain
    assert "M not recorded, so not applied" in plain
    assert "Relaxations: none" in plain


def test_status_shows_stage_skills_pending_best_stop_points_and_alternates() -> None:
    """The status section names everything an agent needs to resume."""
    state = _campaign_40()
    body = splice.read_sections(render(state))["status"]
    assert "**incore** (current)" in body
    assert "`tune-incore`" in body
    assert f"Pending attempt: `{state.pending}`: mutation `unroll_list=[8,2,1]`" in body
    assert state.best is not None
    assert f"Best: **{state.best.time_us:.2f} µs**" in body
    assert "Stop: running" in body
    assert "### Optimization points" in body and "### Alternates" in body
    assert re.search(r"\| incore \| `I-1` \| \*\*open\*\* \| 6 \| \d+ \| \d+ / 5 \|", body)


def test_patience_comes_from_the_policy() -> None:
    """The no-gain streak is shown against the op's policy N for the stage (R7)."""
    state = ms.campaign(40)
    policy = {**effective_policy(state), "patience.incore": 9}
    assert " / 9 |" in splice.read_sections(render(state, policy=policy))["status"]


def test_the_failed_list_is_bounded_but_points_to_the_full_list() -> None:
    """Beyond the bound the most recent failures are listed and the rest grouped and counted."""
    state = ms.campaign(1000)
    failed = [a for a in state.attempts.values() if is_failed(a)]
    body = splice.read_sections(render(state))["failed"]
    assert f"{len(failed)} attempts failed or were rolled back" in body
    assert f"the {len(failed) - memory_history.FAILED_ROWS} earlier ones are grouped" in body
    assert "`tune-ledger log softmax --verdict rollback`" in body
    assert "### Earlier failed attempts, grouped" in body
    assert ms.table_rows(body)[0] == memory_history.FAILED_ROWS
    newest = max(failed, key=lambda a: a.seq)
    assert f"`{newest.id}`" in body


def test_a_short_campaign_lists_every_failure() -> None:
    """Below the bound every failed or rolled-back attempt has its own row."""
    state = ms.campaign(30)
    failed = [a for a in state.attempts.values() if is_failed(a)]
    body = splice.read_sections(render(state))["failed"]
    assert ms.table_rows(body) == [len(failed)]
    assert "grouped" not in body


# --- size -------------------------------------------------------------------------------------


def test_a_thousand_attempts_stay_under_32_kib() -> None:
    """A 1,000-attempt campaign, even with long hostile text everywhere, stays under 32 KiB."""
    assert len(render(ms.campaign(1000)).encode()) < 32 * KIB
    assert len(render(ms.hostile(ms.campaign(1000), ms.HOSTILE * 50)).encode()) < 32 * KIB
    sizes = [len(render(ms.campaign(n)).encode()) for n in (100, 1000, 3000)]
    assert sizes[2] < 32 * KIB and sizes[2] - sizes[1] < 4 * KIB  # bounded, not growing


# --- hostile text -----------------------------------------------------------------------------


def _cells(row: str) -> int:
    """Cells of a GFM table row: pipes not escaped by an odd run of backslashes split it."""
    count, backslashes = 0, 0
    for char in row.strip()[1:-1]:
        if char == "|" and backslashes % 2 == 0:
            count += 1
        backslashes = backslashes + 1 if char == "\\" else 0
    return count + 1


def test_hostile_text_cannot_break_tables_or_markers() -> None:
    """`|`, newlines, U+2028 and marker text in user fields stay inside their cells."""
    state = ms.hostile(ms.campaign(60))
    text = render(state)
    assert [s.name for s in splice.find_sections(text)] == list(SECTION_ORDER)
    assert check_memory(text, ms.position(state)) == []
    lines = text.split("\n")
    assert all(line.startswith("<!-- tune-ledger:") for line in lines if "<!--" in line)
    bodies = splice.read_sections(text)
    assert not any("\u2028" in body or "\r" in body for body in bodies.values())
    for line in lines:
        if line.startswith("|"):
            header = next(
                h
                for h in reversed(lines[: lines.index(line) + 1])
                if h.startswith("|") and lines[lines.index(h) + 1].startswith("| --")
            )
            assert _cells(line) == _cells(header), line
    html = [t for t in MD.parse(text) if t.type == "html_block"]
    assert all(t.content.startswith("<!-- tune-ledger:") for t in html)
    inline_html = [
        c for t in MD.parse(text) if t.children for c in t.children if c.type == "html_inline"
    ]
    assert inline_html == []
    failed = [a for a in state.attempts.values() if is_failed(a)]
    assert ms.table_rows(bodies["failed"])[0] == min(len(failed), memory_history.FAILED_ROWS)
    assert ms.table_rows(bodies["history"]) == [memory_history.HISTORY_ROWS]


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_md_text_is_one_cell_without_html(text: str) -> None:
    """Any text as a table cell is exactly one cell of one row, and never HTML."""
    tokens = MD.parse(md_table(["h", "x"], [[md_text(text), "end"]]))
    assert ms.table_rows(md_table(["h", "x"], [[md_text(text), "end"]])) == [1]
    cells = [t for t in tokens if t.type == "inline"]
    assert len(cells) == 4 and cells[-1].content == "end"
    assert not [c for t in cells for c in t.children or [] if c.type == "html_inline"]


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_md_code_shows_the_exact_text(text: str) -> None:
    """A config in a code span reads back exactly (one line), also with pipes and backticks."""
    table = md_table(["h"], [[md_code(text)]])
    tokens = MD.parse(table)
    cell = [t for t in tokens if t.type == "inline"][-1]
    flat = one_line(text)
    if not flat or "<" in flat:
        return
    codes = [c for c in cell.children or [] if c.type == "code_inline"]
    assert [c.content for c in codes] == [flat]


# --- check ------------------------------------------------------------------------------------


def test_check_is_clean_right_after_rendering() -> None:
    """A freshly rendered file has no findings."""
    state = ms.campaign(50)
    assert check_memory(render(state, EXISTING), ms.position(state)) == []


def test_check_reports_a_stale_file() -> None:
    """A file rendered from an older ledger position is stale."""
    old, new = ms.campaign(50, horizon=100), ms.campaign(51, horizon=100)
    [finding] = check_memory(render(old), ms.position(new))
    assert finding.startswith(f"stale: rendered from {old.event_count} events")
    assert "`tune-ledger render softmax`" in finding


def test_check_reports_a_different_ledger_with_the_same_length() -> None:
    """Same event count, different last event (another branch): stale too."""
    state = ms.campaign(20)
    moved = Position(events=state.event_count, last="f" * 32)
    assert check_memory(render(state), moved)[0].startswith("stale:")


def test_check_reports_a_hand_edit_inside_a_section() -> None:
    """Editing a managed body is caught without the ledger, naming the section and line."""
    state = ms.campaign(50)
    text = render(state)
    edited = text.replace("- Pending attempt: none", "- Pending attempt: none (I checked)")
    [finding] = check_memory(edited, ms.position(state))
    line = text.split("\n").index("<!-- tune-ledger:begin status -->") + 1
    assert finding.startswith(f"line {line}: managed section 'status' was edited by hand")


def test_check_ignores_edits_outside_the_sections_and_newline_conversion() -> None:
    """Notes outside the markers and a CRLF conversion are not hand edits."""
    state = ms.campaign(50)
    text = render(state) + "\nMore notes.\n"
    assert check_memory(text, ms.position(state)) == []
    assert check_memory(text.replace("\n", "\r\n"), ms.position(state)) == []


def test_check_reports_an_edited_header() -> None:
    """Changing the recorded position by hand is a hand edit of the header."""
    state = ms.campaign(10)
    text = render(state)
    edited = text.replace(f"events={state.event_count}", f"events={state.event_count + 1}")
    findings = check_memory(edited, ms.position(state))
    assert any("'header' was edited by hand" in f for f in findings)


def test_check_reports_missing_and_unknown_sections() -> None:
    """A deleted section is missing; a section of an unknown name is reported with its line."""
    state = ms.campaign(10)
    text = render(state)
    sections = {s.name: s for s in splice.find_sections(text)}
    lines = split_lines(text)
    failed = sections["failed"]
    cut = "".join(lines[: failed.begin] + lines[failed.end + 1 :])
    cut += "<!-- tune-ledger:begin extra -->\nx\n<!-- tune-ledger:end extra -->\n"
    findings = check_memory(cut, ms.position(state))
    assert any(f.startswith("managed section 'failed'") and "missing" in f for f in findings)
    assert any("unknown managed section 'extra'" in f for f in findings)
    repaired = render(state, cut)
    assert [f for f in check_memory(repaired, ms.position(state)) if "extra" not in f] == []


def test_check_reports_malformed_markers_and_no_sections() -> None:
    """Broken markers become a finding (not an exception); a file without sections too."""
    state = ms.campaign(10)
    text = render(state).replace("<!-- tune-ledger:end adopted -->\n", "")
    [finding] = check_memory(text, ms.position(state))
    assert "section 'failed' begins inside section 'adopted'" in finding
    assert "add `<!-- tune-ledger:end adopted -->` before line" in finding
    text = render(state).replace("<!-- tune-ledger:end history -->\n", "")
    [finding] = check_memory(text, ms.position(state))
    assert "section 'history' has no end marker" in finding
    assert check_memory("# notes only\n", ms.position(state)) == [
        "no managed sections; run `tune-ledger render OP` to add them"
    ]


def test_render_refuses_malformed_markers_with_line_numbers() -> None:
    """Rendering into a file with broken markers raises BadInput instead of guessing."""
    from ledger.errors import BadInput

    state = ms.campaign(10)
    text = render(state).replace("<!-- tune-ledger:end history -->\n", "")
    with pytest.raises(BadInput, match=r"line \d+: section 'history' has no end marker"):
        render(state, text)


# --- end to end through the real deciders and replay --------------------------------------------


def test_a_replayed_campaign_renders_its_attempts() -> None:
    """States replayed from sealed events render and check clean, with real attempt ids."""
    driver = in_point()
    first = driver.start(candidate(vec_tile_shape=vec(16)))
    driver.verify(first, 90.0)
    second = driver.start(candidate("ops/rms_norm", vec_tile_shape=vec(32)))
    driver.run(cmd.Fail(attempt=second, category="compile", detail="UB overflow | 2 MB\nat line 3"))
    third = driver.start(cmd.TryMutation(param="unroll_list", value=[8, 4, 1]))
    driver.verify(third, 120.0)
    state = driver.replayed()
    position = Position(events=len(driver.events), last=driver.events[-1].id)
    text = render_memory(None, state, effective_policy(state), position)
    assert render_memory(text, state, effective_policy(state), position) == text
    assert check_memory(text, position) == []
    bodies = splice.read_sections(text)
    assert f"`{first}`" in bodies["adopted"]
    failed = bodies["failed"]
    assert f"`{second}`" in failed and "UB overflow \\| 2 MB at line 3" in failed
    assert f"`{third}`" in failed and "slower: 120.00 µs† (+33.3%)" in failed
    assert ms.table_rows(bodies["history"]) == [3]
    driver.run(cmd.AddNote(text="next: try unroll [16,4]"))
    later = Position(events=len(driver.events), last=driver.events[-1].id)
    assert check_memory(text, later)[0].startswith("stale:")
