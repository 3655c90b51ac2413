"""A memory that never misleads (issue 28.7): alternates only from the best's kernel, the best
kernel's accuracy evidence in MEMORY.md, and a report that lists relaxations, kernel changes
(with the kernel's digest) and person decisions, "None." where there are none."""

from __future__ import annotations

from driver import IMPL, Driver, candidate, in_point, vec, verify

from ledger.projections import report
from ledger.projections.memory_status import best_kernel_text
from stages import commands as cmd
from stages.alternates import alternates
from stages.policy import effective_policy


def _incore_candidates() -> tuple[Driver, list[str]]:
    """Three candidates of point I-1, the first the fastest (the best), then the algorithm
    stage entered."""
    driver = in_point("incore", "I-1")
    ids = []
    for width, time in ((16, 90.0), (32, 95.0), (48, 97.0)):
        attempt = driver.start(candidate(vec_tile_shape=vec(width)))
        driver.run(verify(attempt, time))
        ids.append(attempt)
    driver.run(cmd.ClosePoint(name="I-1", reason="done"))
    driver.run(cmd.UnloadSkill(name="tune-incore"))
    driver.run(cmd.ExitStage(stage="incore", reason="enough", by_user=True))
    driver.run(cmd.RecordReport(path="custom/softmax/softmax_tuning_report.md", digest="r1"))
    driver.run(cmd.EnterStage(stage="algorithm"))
    return driver, ids


def test_alternates_measured_on_another_kernel_are_no_longer_shown() -> None:
    driver, (_best, second, third) = _incore_candidates()
    assert alternates(driver.state) == [second, third]
    change = driver.start(cmd.TryAlgorithm(description="fuse the two loops", impl_digest="k2"))
    driver.run(verify(change, 50.0))
    assert driver.state.best is not None and driver.state.best.attempt == change
    # 95 µs on the old kernel says nothing about the new one: no alternate would be honest.
    assert alternates(driver.state) == []


def test_memory_shows_the_best_kernel_and_its_accuracy_evidence() -> None:
    driver, _ids = _incore_candidates()
    text = best_kernel_text(driver.state)
    assert text.startswith(f"`{IMPL[:12]}` (the activated kernel); its measurement: all outputs")
    assert "E2E compare of this kernel: y all_close" in text
    change = driver.start(cmd.TryAlgorithm(description="fuse the two loops", impl_digest="k2"))
    driver.run(verify(change, 50.0))
    text = best_kernel_text(driver.state)
    assert text.startswith(f"`k2` (from algorithm change `{change}`)")
    assert text.endswith("no E2E compare recorded for this kernel")


def _report(driver: Driver) -> str:
    markdown, _svg = report.render_report(driver.state, None, effective_policy(driver.state))
    return markdown


def _section(markdown: str, title: str) -> str:
    return markdown.split(f"## {title}\n\n", 1)[1].split("\n## ", 1)[0]


def test_the_report_says_none_where_nothing_was_relaxed_changed_or_decided() -> None:
    driver = in_point()
    attempt = driver.start(candidate(vec_tile_shape=vec(32)))
    driver.run(verify(attempt, 90.0))
    markdown = _report(driver)
    assert _section(markdown, "Relaxations").startswith("None")
    assert _section(markdown, "Kernel changes") == (
        f"None. The best runs the activated kernel `{IMPL[:12]}`.\n"
    )
    assert _section(markdown, "Person decisions").startswith("None")
    assert "| adoption # | attempt |" in markdown


def test_the_report_lists_kernel_changes_with_their_kernels() -> None:
    driver, _ids = _incore_candidates()
    change = driver.start(cmd.TryAlgorithm(description="fuse the two loops", impl_digest="k2"))
    driver.run(verify(change, 60.0))
    driver.run(cmd.Stop(reason="good enough for the release"))
    markdown = _report(driver)
    kernels = _section(markdown, "Kernel changes")
    assert kernels.startswith(f"The best needs kernel `k2`, from algorithm change `{change}`.")
    assert f"`{change}` | `k2` | fuse the two loops | adopt" in kernels
    assert "| attempt # | attempt |" in markdown


def test_the_report_lists_each_relaxation_with_its_basis() -> None:
    driver = in_point()  # a person's relaxation: the attempts here are only reported
    driver.run(cmd.Relax(person="Pat", what="vec", limit=128, basis="vec units idle 40% at 64"))
    markdown = _report(driver)
    assert "| 1 | vec | `128` | vec units idle 40% at 64 |" in _section(markdown, "Relaxations")
