"""One home per rule: what MEMORY.md and status show is what the deciders enforce (R3, R7, R8)."""

from __future__ import annotations

import json
import re
import statistics

import pytest
from driver import Driver, candidate, in_point, vec
from hypothesis import given
from hypothesis import strategies as st

from ledger.domain.samples import median
from ledger.projections import status_view
from ledger.projections.memory_sections import render_sections
from stages import commands as cmd
from stages.alternates import alternates
from stages.decide import decide
from stages.outcome import Decision
from stages.policy import DEFAULT_POLICY, effective_policy, patience
from stages.refusal import Refusal
from stages.stop import utilization_stop

K = 1 << 20  # stands for the full K dimension, which the table leaves unbounded
_SHAPE = re.compile(r"\[(\d+|K),(\d+|K)\]")
_RANGE = re.compile(r"M ≥ (\d+)|(\d+) ≤ M ≤ (\d+)|M = (\d+)")


@given(st.lists(st.floats(min_value=1e-3, max_value=1e9), min_size=1, max_size=40))
def test_the_one_median_equals_the_standard_librarys(samples: list[float]) -> None:
    assert median(samples) == float(statistics.median(samples))
    assert median(list(reversed(samples))) == median(samples)


# --- MEMORY.md as the agent reads it ----------------------------------------------------------


def _bodies(driver: Driver) -> dict[str, str]:
    return render_sections(driver.state, effective_policy(driver.state))


def _sheet_cell(driver: Driver, field: str) -> str:
    for line in _bodies(driver)["target-sheet"].splitlines():
        if line.startswith(f"| {field} |"):
            return line.split(" | ")[1]
    raise AssertionError(f"no {field!r} row in the target sheet")


def _shapes(text: str) -> list[list[int | None]]:
    return [[None if v == "K" else int(v) for v in pair] for pair in _SHAPE.findall(text)]


def _shown_cube_limit(driver: Driver) -> list[list[int | None]] | None:
    """The cube limit MEMORY.md shows, None where it says no limit applies."""
    cell = _sheet_cell(driver, "Cube tile shapes")
    if cell.startswith("relaxed: "):
        return json.loads(cell.removeprefix("relaxed: ").split(" (see")[0].strip("`"))
    if cell.startswith("M not recorded, so not applied"):
        return None
    return _shapes(cell.split("): ", 1)[1])


def _accepted(driver: Driver, command: object) -> bool:
    result = decide(driver.state, command)
    if isinstance(result, Refusal):
        assert result.rule == "R3", result
        return False
    assert isinstance(result, Decision)
    return True


def _cube(tiles: list[list[int | None]]) -> cmd.ProposeCandidate:
    return candidate(cube_tile_shape=[[K if v is None else v for v in pair] for pair in tiles])


def _assert_enforced(driver: Driver, shown: list[list[int | None]]) -> None:
    """Tiles at every shown bound are accepted, one past any one bound refused (R3)."""
    assert len(shown) == 3 and all(len(pair) == 2 for pair in shown)
    assert _accepted(driver, _cube(shown))
    for axis in range(3):
        for level in range(2):
            bound = shown[axis][level]
            if bound is None:
                continue
            over = [list(pair) for pair in shown]
            over[axis][level] = bound + 1
            assert not _accepted(driver, _cube(over)), (axis, level, bound)


@pytest.mark.parametrize("first", [1, 61, 121, 181, 241])
def test_the_cube_limit_memory_shows_is_the_one_enforced_for_every_m(first: int) -> None:
    """For M = 1..300 the row MEMORY.md shows bounds the candidates the decider accepts (R3)."""
    for m in range(first, first + 60):
        driver = in_point(cube_m=m)
        shown = _shown_cube_limit(driver)
        assert shown is not None, m
        _assert_enforced(driver, shown)


def _listed_rows(cell: str) -> list[tuple[int, int | None, list[list[int | None]]]]:
    rows = []
    for part in cell.split("Table: ", 1)[1].split("; "):
        found = _RANGE.match(part)
        assert found is not None, part
        top, both_low, both_top, only = found.groups()
        if top:
            rows.append((int(top), None, _shapes(part)))
        elif only:
            rows.append((int(only), int(only), _shapes(part)))
        else:
            rows.append((int(both_low), int(both_top), _shapes(part)))
    return rows


def test_without_m_no_cube_limit_applies_and_the_table_shown_is_the_enforced_one() -> None:
    """With no M on the sheet, cube tiles are free, and each listed row is the row of its M (R3)."""
    driver = in_point()
    assert _shown_cube_limit(driver) is None
    assert _accepted(driver, _cube([[4096, 4096], [4096, 4096], [4096, 4096]]))
    rows = _listed_rows(_sheet_cell(driver, "Cube tile shapes"))
    for m in range(1, 301):
        holding = [r for r in rows if r[0] <= m and (r[1] is None or m <= r[1])]
        assert len(holding) == 1, m
        assert holding[0][2] == _shown_cube_limit(in_point(cube_m=m)), m


@pytest.mark.parametrize("cube_m", [None, 1, 8, 48, 200])
def test_a_relaxed_cube_limit_is_shown_and_enforced(cube_m: int | None) -> None:
    driver = in_point(cube_m=cube_m)
    driver.run(
        cmd.Relax(
            person="Pat", what="cube", limit=[[32, 32], [128, 512], [64, 256]], basis="profile"
        )
    )
    driver.run(
        cmd.Relax(
            person="Pat", what="cube", limit=[[256, 256], [128, 512], [256, 512]], basis="again"
        )
    )
    shown = _shown_cube_limit(driver)
    assert shown == [[256, 256], [128, 512], [256, 512]]
    _assert_enforced(driver, shown)


@pytest.mark.parametrize("relaxed", [(), (128,), (96, 256), (256, 80)])
def test_the_vec_limit_memory_shows_is_the_one_enforced(relaxed: tuple[int, ...]) -> None:
    """The latest vec relaxation, or the default, is the per-axis bound shown and enforced (R3)."""
    driver = in_point()
    for limit in relaxed:
        driver.run(cmd.Relax(person="Pat", what="vec", limit=limit, basis="vec units idle"))
    driver.run(
        cmd.Relax(
            person="Pat", what="cube", limit=[[16, 16], [16, 16], [16, 16]], basis="cube only"
        )
    )
    cell = _sheet_cell(driver, "Vec tile upper limit")
    found = re.fullmatch(r"≤ (\d+) per axis|relaxed: `(\d+)` \(see the relaxations below\)", cell)
    assert found is not None, cell
    shown = int(found.group(1) or found.group(2))
    assert shown == (relaxed[-1] if relaxed else 64)
    assert _accepted(driver, candidate(vec_tile_shape=[shown, 1, 1, shown]))
    assert not _accepted(driver, candidate(vec_tile_shape=[1, 1, 1, shown + 1]))
    assert not _accepted(driver, candidate(vec_tile_shape=[shown + 1, 1, 1, 1]))


# --- R7: alternates and patience --------------------------------------------------------------


def _alternates_shown(driver: Driver) -> list[str]:
    status = _bodies(driver)["status"]
    if "### Alternates" not in status:
        return []
    table = status.split("### Alternates", 1)[1]
    return re.findall(r"^\| `([0-9a-f]{12})` \|", table, flags=re.MULTILINE)


@pytest.mark.parametrize("keep", [None, 0, 1, 2, 5, 9])
def test_memory_and_status_show_the_alternates_the_decider_keeps(keep: int | None) -> None:
    driver = in_point()
    times = {32: 90.0, 16: None, 48: 70.0, 8: 95.0, 24: 80.0, 40: 99.0, 56: 85.0}
    for width, time in times.items():
        attempt = driver.start(candidate(prior=f"kernel-{width}", vec_tile_shape=vec(width)))
        if time is None:
            driver.run(cmd.Fail(attempt=attempt, category="compile"))
        else:
            driver.verify(attempt, time)
    if keep is not None:
        driver.run(cmd.SetPolicy(key="alternates", value=keep))
    kept = alternates(driver.state)
    expected = DEFAULT_POLICY["alternates"] if keep is None else keep
    assert len(kept) == min(expected, 5)
    assert _alternates_shown(driver) == kept
    assert [row["attempt"] for row in status_view.status(driver.state)["alternates"]] == kept


def _mutate_without_gain(driver: Driver, width: int) -> None:
    attempt = driver.start(cmd.TryMutation(param="vec_tile_shape", value=vec(width)))
    assert driver.verify(attempt, 100.0)["verdict"] == "no-gain"  # the baseline's time


@pytest.mark.parametrize(
    ("stage", "point", "n"),
    [
        ("frontend", "F-1", None),
        ("swimlane", "S-1", None),
        ("incore", "I-1", None),
        ("frontend", "F-1", 1),
        ("swimlane", "S-1", 3),
        ("incore", "I-1", 7),
    ],
)
def test_the_patience_memory_shows_is_the_streak_that_exhausts_a_point(
    stage: str, point: str, n: int | None
) -> None:
    """MEMORY.md's `streak / N` names the N after which the decider closes the point (R7)."""
    driver = in_point(stage, point)
    if n is not None:
        driver.run(cmd.SetPolicy(key=f"patience.{stage}", value=n))
    width = 10  # never the baseline's 64, which would be a retry (R9)
    while driver.state.points[point].is_open:
        row = rf"\| `{point}` \| \*\*open\*\* \| \d+ \| \d+ \| (\d+) / (\d+) \|"
        shown = re.search(row, _bodies(driver)["status"])
        assert shown is not None
        streak, limit = int(shown.group(1)), int(shown.group(2))
        assert streak == driver.state.points[point].streak
        assert limit == patience(effective_policy(driver.state), stage)
        _mutate_without_gain(driver, width)
        width += 6
    assert driver.state.points[point].outcome == "exhausted"
    assert streak + 1 == limit == (DEFAULT_POLICY[f"patience.{stage}"] if n is None else n)


# --- R10: where the utilization stop is judged --------------------------------------------------


@pytest.mark.parametrize("judged", [None, ["incore"], ["frontend", "incore"], []])
def test_memory_names_the_stages_where_the_decider_judges_the_utilization_stop(
    judged: list[str] | None,
) -> None:
    """A busy best stops the campaign in exactly the stages MEMORY.md's status names (R10)."""
    for stage, point in (("frontend", "F-1"), ("swimlane", "S-1"), ("incore", "I-1")):
        driver = in_point(stage, point)
        if judged is not None:
            driver.run(cmd.SetPolicy(key="utilization_stop_stages", value=judged))
        stop = next(
            line for line in _bodies(driver)["status"].splitlines() if line.startswith("- Stop:")
        )
        narrowed = re.search(r"\(judged in (.*?)\)", stop)
        named = (
            {"frontend", "swimlane", "incore", "algorithm"}
            if narrowed is None
            else set(narrowed.group(1).removesuffix(" only").split(", ")) - {"no stage"}
        )
        stops = utilization_stop(driver.state, 95.0, 1.0) is not None
        assert stops == (stage in named), (judged, stage, stop)
