"""`tune-ledger dashboard`: the site's bytes, damaged ops, the exit code, and where it writes.

Golden files of a small repository (tests/dashboard_ops.py: three stages, hostile text, what
issues 27 and 29 record with kept kernels, a damaged ledger) pin the whole site. Regenerate
after an intended change, then review the diff and open the pages:

    UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_dashboard.py
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from cli_harness import run_main
from dashboard_ops import (
    HOSTILE,
    KERNELS,
    decided_campaign,
    digest,
    edit_line,
    small_campaign,
    write_op,
    write_repository,
)

from ledger.errors import BadInput
from ledger.projections import conflicts as conflict_view
from ledger.projections import dashboard_page, dashboard_rows
from ledger.shell import audit
from ledger.shell import dashboard as site
from ledger.shell.api import OpLedger

DATA = Path(__file__).parent / "data" / "dashboard"


def built(root: Path) -> dict[str, bytes]:
    """Every file of the site `dashboard` writes for `root`, by path relative to the site."""
    out = root / site.DEFAULT_OUT
    site.build(root, out)
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*.html"))}


def text_of(page: str) -> str:
    """A page's text without its tags."""
    return re.sub(r"<[^>]+>", "", page)


def test_regenerate_when_asked(tmp_path: Path) -> None:
    """UPDATE_GOLDEN=1 rewrites the golden site (review the diff and open the pages)."""
    if not os.environ.get("UPDATE_GOLDEN"):
        pytest.skip("set UPDATE_GOLDEN=1 to regenerate")
    write_repository(tmp_path)
    shutil.rmtree(DATA, ignore_errors=True)
    for relative, data in built(tmp_path).items():
        (DATA / relative).parent.mkdir(parents=True, exist_ok=True)
        (DATA / relative).write_bytes(data)


def test_the_site_matches_its_golden_files(tmp_path: Path) -> None:
    """The same ledgers give the site in tests/data/dashboard/, byte for byte."""
    write_repository(tmp_path)
    golden = {p.relative_to(DATA).as_posix(): p.read_bytes() for p in sorted(DATA.rglob("*.html"))}
    assert sorted(golden) == [
        "index.html",
        "ops/broken.html",
        "ops/hostile.html",
        "ops/layernorm.html",
        "ops/softmax.html",
    ]
    assert built(tmp_path) == golden


def test_the_same_ledgers_give_the_same_bytes_anywhere(tmp_path: Path) -> None:
    """Rendered twice, and from a copy of the repository at another path, the bytes are the
    same: no render time, no absolute path (audit's messages name files relative to the root)."""
    first, second = tmp_path / "a", tmp_path / "elsewhere" / "b"
    write_repository(first)
    once = built(first)
    assert built(first) == once
    shutil.copytree(first / "custom", second / "custom")
    assert built(second) == once
    assert str(first).encode() not in b"".join(once.values())


def test_a_rebuild_rewrites_no_unchanged_page(tmp_path: Path) -> None:
    """Pages whose bytes did not change are not rewritten (their mtimes stay), so a site kept
    in git or synced elsewhere changes only where the ledgers did."""
    write_repository(tmp_path)
    built(tmp_path)
    page = tmp_path / site.DEFAULT_OUT / "ops" / "softmax.html"
    os.utime(page, ns=(1, 1))
    built(tmp_path)
    assert page.stat().st_mtime_ns == 1


def test_each_number_is_the_one_audit_replays(tmp_path: Path) -> None:
    """The row's best, baseline, attempts and provenance are the state and report audit gives."""
    write_repository(tmp_path)
    result = site.build(tmp_path, tmp_path / "out")
    view = next(v for v in result.views if v.op == "softmax")
    audited = audit.audited(OpLedger(tmp_path, "softmax"))
    state = audited.state
    assert state is not None and state.best is not None and state.target is not None
    summary = view.summary
    assert summary is not None
    assert summary.best_us == state.best.time_us == 6.0
    assert summary.baseline_us == state.target.baseline_us == 100.0
    assert summary.attempts == len(state.attempts) == 8
    assert dict(summary.provenance) == audited.report["provenance"]
    assert dict(summary.outcomes) == {"adopt": 4, "rollback": 3, "oom": 1}
    page = (tmp_path / "out" / "ops" / "softmax.html").read_text("utf-8")
    assert "100.00 µs → 6.00 µs" in text_of(page) and "16.67×" in page


DAMAGES = {
    "edited line": lambda ledger: edit_line(ledger, 5),
    "conflict markers": lambda ledger: ledger.write_bytes(
        b"<<<<<<< HEAD\n" + ledger.read_bytes() + b"=======\n>>>>>>> theirs\n"
    ),
    "torn tail": lambda ledger: ledger.write_bytes(ledger.read_bytes() + b'{"id":"ab'),
}
AUDIT_SAYS = {
    "edited line": "custom/bad/events.jsonl:5: event ",
    "conflict markers": "custom/bad/events.jsonl:1: a git conflict marker",
    "torn tail": "custom/bad/events.jsonl:20: torn tail of 9 bytes",
}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_op_shows_audits_message_and_the_rest_still_render(
    tmp_path: Path, damage: str
) -> None:
    """One op's damaged ledger is a row with audit's message; the others keep their numbers,
    and the command exits 7 after writing the whole site."""
    write_op(tmp_path, "good", small_campaign("good"))
    DAMAGES[damage](write_op(tmp_path, "bad", small_campaign("bad")))
    expected = audit.audit_op(OpLedger(tmp_path, "bad"))["findings"][0]
    result = run_main(["--root", str(tmp_path), "--json", "dashboard"])
    assert result.code == 7
    error = json.loads(result.stdout)
    rows = {row["op"]: row for row in error["ops"]}
    assert rows["good"]["health"] == "clean"
    assert rows["bad"]["health"] == ("findings" if damage == "torn tail" else "damaged")
    assert rows["bad"]["code"] == 7
    message = rows["bad"]["problems"][0]
    assert AUDIT_SAYS[damage] in message
    assert expected == message.replace("custom/", f"{tmp_path}/custom/", 1)
    index = (tmp_path / site.DEFAULT_OUT / "index.html").read_text("utf-8")
    assert AUDIT_SAYS[damage] in index
    assert "50.00 µs → 30.00 µs" in text_of(index)  # the good op's baseline and best
    assert (tmp_path / site.DEFAULT_OUT / "ops" / "good.html").exists()


def test_a_clean_repository_exits_0_and_says_where_the_site_is(tmp_path: Path) -> None:
    """Exit 0 when audit is clean for every op; the output names index.html."""
    write_op(tmp_path, "good", small_campaign("good"))
    result = run_main(["--root", str(tmp_path), "dashboard", "--out", str(tmp_path / "site")])
    assert result.code == 0, result.stderr
    assert f"{tmp_path / 'site' / 'index.html'}" in result.stdout
    assert "1 op(s)" in result.stdout


def test_no_ops_gives_an_index_that_says_so(tmp_path: Path) -> None:
    """An empty root (no custom/ yet) is a valid, empty dashboard."""
    result = site.build(tmp_path, tmp_path / "site")
    assert result.views == () and result.clean
    assert "0 op(s) under" in result.index.read_text("utf-8")


def test_hostile_text_stays_text(tmp_path: Path) -> None:
    """Ledger text that tries to open tags arrives escaped: no tag of it reaches a page."""
    write_repository(tmp_path)
    pages = built(tmp_path)
    hostile = pages["ops/hostile.html"].decode("utf-8")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in hostile
    assert hostile.count("<script>") == 1  # the page's own filter script
    assert "<img" not in hostile and HOSTILE not in hostile


# --- where it writes ------------------------------------------------------------------------


def test_out_as_a_link_is_refused_and_nothing_is_written_through_it(tmp_path: Path) -> None:
    """--out that is a symbolic link is refused (exit 2); the link's target stays empty."""
    write_op(tmp_path, "good", small_campaign("good"))
    target = tmp_path / "elsewhere"
    target.mkdir()
    (tmp_path / "site").symlink_to(target)
    result = run_main(["--root", str(tmp_path), "dashboard", "--out", str(tmp_path / "site")])
    assert result.code == 2 and "symbolic link" in result.stderr
    assert list(target.iterdir()) == []


def test_a_folder_of_other_files_is_refused(tmp_path: Path) -> None:
    """--out that holds files a dashboard did not write is refused: nothing is overwritten."""
    out = tmp_path / "docs"
    out.mkdir()
    (out / "index.html").write_text("<p>someone's page</p>")
    with pytest.raises(BadInput, match="not a tune-ledger dashboard"):
        site.build(tmp_path, out)
    assert (out / "index.html").read_text() == "<p>someone's page</p>"


def test_a_link_planted_in_the_site_is_replaced_not_followed(tmp_path: Path) -> None:
    """A page that is a link to a file elsewhere is replaced by the page; the file is kept."""
    write_op(tmp_path, "good", small_campaign("good"))
    site.build(tmp_path, tmp_path / "site")
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    page = tmp_path / "site" / "ops" / "good.html"
    page.unlink()
    page.symlink_to(victim)
    site.build(tmp_path, tmp_path / "site")
    assert not page.is_symlink() and "good" in page.read_text("utf-8")
    assert victim.read_text() == "keep me"


def test_the_page_of_an_op_that_is_gone_is_removed(tmp_path: Path) -> None:
    """A rebuild after an op's folder was removed drops its page, so the site is exactly the
    ledgers' (and nothing but the site's own pages is touched)."""
    write_op(tmp_path, "good", small_campaign("good"))
    write_op(tmp_path, "gone", small_campaign("gone"))
    site.build(tmp_path, tmp_path / "site")
    (tmp_path / "site" / "notes.txt").write_text("mine")
    shutil.rmtree(tmp_path / "custom" / "gone")
    site.build(tmp_path, tmp_path / "site")
    assert sorted(p.name for p in (tmp_path / "site" / "ops").iterdir()) == ["good.html"]
    assert (tmp_path / "site" / "notes.txt").read_text() == "mine"


def test_the_bench_makes_ops_of_every_planned_size_that_audit_finds_clean(tmp_path: Path) -> None:
    """tools/bench/dashboard.py's ops: campaigns of about 30 to 300 attempts (planned by events,
    within 20% of the plan), each op clean, so the 200-op figure times the dashboard on ledgers
    audit accepts."""
    from tools.bench.dashboard import MAX_ATTEMPTS, MIN_ATTEMPTS, attempts_of, write_ops

    totals = write_ops(tmp_path, 3)
    result = site.build(tmp_path, tmp_path / "site")
    assert [v.op for v in result.views] == ["op000", "op001", "op002"] and result.clean
    sizes = [v.summary.attempts for v in result.views if v.summary is not None]
    assert all(abs(size - attempts_of(n)) <= 0.2 * attempts_of(n) for n, size in enumerate(sizes))
    assert totals["attempts"] == sum(sizes)
    assert all(MIN_ATTEMPTS <= attempts_of(n) <= MAX_ATTEMPTS for n in range(200))


def test_a_folder_that_is_no_op_and_a_linked_op_are_rows_with_their_refusal(
    tmp_path: Path,
) -> None:
    """A folder under custom/ whose name no op may have, and an op folder that is a link, are
    rows with the refusal (exit 2) every command gives them; neither is read nor gets a page."""
    write_op(tmp_path, "good", small_campaign("good"))
    elsewhere = tmp_path / "elsewhere"
    write_op(elsewhere, "linked", small_campaign("linked"))
    (tmp_path / "custom" / "linked").symlink_to(elsewhere / "custom" / "linked")
    (tmp_path / "custom" / "no op").mkdir()
    (tmp_path / "custom" / "no op" / "events.jsonl").write_text("")
    result = site.build(tmp_path, tmp_path / "site")
    rows = {v.op: v for v in result.views}
    assert (rows["good"].health, rows["linked"].health, rows["no op"].health) == (
        "clean",
        "damaged",
        "damaged",
    )
    assert rows["linked"].code == 2 and "symbolic link" in rows["linked"].problems[0]
    assert rows["no op"].code == 2 and "not allowed" in rows["no op"].problems[0]
    pages = sorted(p.name for p in (tmp_path / "site" / "ops").iterdir())
    assert pages == ["good.html"]
    assert not result.clean


def test_an_open_merge_conflict_is_on_the_row_in_the_words_status_uses(tmp_path: Path) -> None:
    """A merged ledger with a conflict left open shows it as `status` words it, not as a
    typed value's repr."""
    merged = Path(__file__).parent / "data" / "ledger" / "v1-merged.jsonl"
    op_dir = tmp_path / "custom" / "merged"
    op_dir.mkdir(parents=True)
    (op_dir / "events.jsonl").write_bytes(merged.read_bytes())
    result = site.build(tmp_path, tmp_path / "out")
    view = next(v for v in result.views if v.op == "merged")
    state = audit.audited(OpLedger(tmp_path, "merged")).state
    assert state is not None
    expected = tuple(conflict_view.texts(state))
    assert view.summary is not None
    assert expected and view.summary.conflicts == expected
    page = text_of((tmp_path / "out" / "ops" / "merged.html").read_text("utf-8"))
    assert expected[0] in html.unescape(page) and "Conflict(" not in page


# --- what issues 27 and 29 record (tests/dashboard_ops.py's `layernorm`) --------------------


def test_person_decisions_are_the_ones_memory_and_audit_list(tmp_path: Path) -> None:
    """The row counts and names the persons; the page lists each decision in the words of
    MEMORY.md's "Person decisions" (one projection) and the guards lowered now."""
    write_repository(tmp_path)
    result = site.build(tmp_path, tmp_path / "out")
    summary = next(v.summary for v in result.views if v.op == "layernorm")
    assert summary is not None
    memory = (tmp_path / "custom" / "layernorm" / "MEMORY.md").read_text("utf-8")
    audited = audit.audited(OpLedger(tmp_path, "layernorm")).report["person_decisions"]
    assert [f"{p.text} (event `{p.event[:12]}`)" for p in summary.person_decisions] == audited
    assert all(f"- {line}" in memory for line in audited) and len(audited) == 2
    assert [p.person for p in summary.person_decisions] == ["Ada", "Bo"]
    index = (tmp_path / "out" / "index.html").read_text("utf-8")
    assert "<td>2: Ada, Bo</td>" in index
    page = html.unescape((tmp_path / "out" / "ops" / "layernorm.html").read_text("utf-8"))
    assert "policy noise_threshold 0.01 -> 0.2: Bo, because noisy host" in page
    assert "Guards lowered now: noise_threshold 0.2" in page
    assert "none: signed by Ada" in page  # the relaxation she signed without evidence


def test_the_device_of_the_best_the_baseline_and_each_attempt(tmp_path: Path) -> None:
    """The index names the device the best was measured on (as the report's "Best measured
    on"), the page the baseline's and each measured attempt's; an op whose measurements name
    none says "unknown", not a guess."""
    write_repository(tmp_path)
    result = site.build(tmp_path, tmp_path / "out")
    rows = {v.op: v.summary for v in result.views if v.summary is not None}
    label = "npu Ascend910B3 #3 (CANN 8.0.RC3, driver 24.1.rc2)"
    assert rows["layernorm"].device == label and rows["softmax"].device == "unknown"
    page = (tmp_path / "out" / "ops" / "layernorm.html").read_text("utf-8")
    assert f'<th scope="row">baseline device</th><td>{label}</td>' in page
    attempts = page.split('<table id="attempts">')[1]
    assert attempts.count(f"<td>{label}</td>") == 3  # every measured attempt
    assert f"<td>{label}</td>" in (tmp_path / "out" / "index.html").read_text("utf-8")


def test_a_relaxations_evidence_links_to_its_attempts_row(tmp_path: Path) -> None:
    """`relax --evidence` attempts are listed with their number and time, each linking to the
    row of the attempts table that carries its id."""
    write_repository(tmp_path)
    site.build(tmp_path, tmp_path / "out")
    state = audit.audited(OpLedger(tmp_path, "layernorm")).state
    assert state is not None
    relaxation = state.relaxations[0]
    (evidence,) = relaxation.evidence
    page = (tmp_path / "out" / "ops" / "layernorm.html").read_text("utf-8")
    assert (
        f'<a href="#attempt-{evidence}">attempt 1</a> (<code>{evidence}</code>, 30.00 µs)' in page
    )
    assert page.count(f'id="attempt-{evidence}"') == 1
    assert dashboard_page.relaxation_evidence(state, relaxation.event) == (
        dashboard_page.EvidenceRef(evidence, 1, 30.0),
    )
    assert dashboard_page.relaxation_evidence(state, state.relaxations[1].event) is None


def test_kernel_versions_of_the_adopted_chain_with_their_diffs(tmp_path: Path) -> None:
    """The activated kernel and each adopted algorithm change's, linked to its kept file,
    with the unified diff between consecutive ones (as `kernel diff` prints it) in a
    <details>; ledger text in a kernel stays text."""
    write_repository(tmp_path)
    result = site.build(tmp_path, tmp_path / "out")
    state = audit.audited(OpLedger(tmp_path, "layernorm")).state
    assert state is not None and result.clean is False  # `broken` only
    page = (tmp_path / "out" / "ops" / "layernorm.html").read_text("utf-8")
    digests = [digest(text) for text in KERNELS]
    assert [d for _a, d in dashboard_page.kernel_chain(state)] == digests
    assert page.count("<details><summary>Diff ") == 2
    assert f"Diff {digests[1][:12]} → {digests[2][:12]}" in page
    diff = html.unescape(page.split("<details>")[2].split("</details>")[0])
    assert "-    # one pass (Welford)\n+    # one pass, fused scale\n" in diff
    assert HOSTILE in diff and HOSTILE not in page
    for d in digests:
        assert f'href="../../custom/layernorm/kernels/{d}.py"' in page


def test_a_kernel_not_kept_or_edited_shows_no_diff(tmp_path: Path) -> None:
    """A kept file that is missing, or whose bytes are not its name's, gives no text: the
    version says "not kept" and the diffs next to it are not drawn (audit names the edit)."""
    write_repository(tmp_path)
    kept = tmp_path / "custom" / "layernorm" / "kernels"
    (kept / f"{digest(KERNELS[0])}.py").unlink()
    (kept / f"{digest(KERNELS[2])}.py").write_text("edited\n", "utf-8")
    result = site.build(tmp_path, tmp_path / "out")
    view = next(v for v in result.views if v.op == "layernorm")
    assert view.health == "findings" and "the kept kernel was edited" in view.problems[0]
    page = (tmp_path / "out" / "ops" / "layernorm.html").read_text("utf-8")
    assert page.count("not kept: restore it from git") == 2 and "<details>" not in page


def test_a_long_kernel_diff_is_cut_and_says_so() -> None:
    """A diff longer than DIFF_LINES is cut there, with the number of lines left out."""
    state = decided_campaign().replayed()
    old = "".join(f"a{n}\n" for n in range(dashboard_page.DIFF_LINES))
    new = "".join(f"b{n}\n" for n in range(dashboard_page.DIFF_LINES))
    texts = {digest(KERNELS[0]): old, digest(KERNELS[1]): new}
    versions = dashboard_page.kernel_versions(state, texts)
    assert versions is not None
    first = versions[1]
    assert first.diff is not None and first.diff.count("\n") == dashboard_page.DIFF_LINES
    assert first.diff_cut == 2 * dashboard_page.DIFF_LINES + 3 - dashboard_page.DIFF_LINES
    assert versions[2].diff is None and versions[2].kept is False


def test_the_provenance_mix_shows_every_level(tmp_path: Path) -> None:
    """Every origin level audit counts is on the row, zeros included, in audit's order."""
    write_repository(tmp_path)
    result = site.build(tmp_path, tmp_path / "out")
    summary = next(v.summary for v in result.views if v.op == "layernorm")
    assert summary is not None
    assert summary.provenance == (
        ("measured", 3),
        ("unbound", 0),
        ("ran", 0),
        ("artefact", 0),
        ("reported", 3),
    )
    index = (tmp_path / "out" / "index.html").read_text("utf-8")
    assert "<td>measured 3, unbound 0, ran 0, artefact 0, reported 3</td>" in index
    assert dashboard_rows.provenance_mix({"provenance": {"reported": 1, "rumour": 2}})[-2:] == (
        ("reported", 1),
        ("rumour", 2),
    )
