"""Audit by re-measurement (issue 27.8): `audit OP --remeasure N` runs SPEC.md's verifier again
on N measured attempts, the best first, each on its kept kernel and config in a temporary copy;
a result beyond the noise band exits 10, consistent results pass, nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_harness import OP, Cli, snapshot
from kernel_campaign import KERNEL, candidate, impl, lie, measured_op


@pytest.fixture(autouse=True)
def no_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """The campaign's runs are made, never read from a cache (the lie must reach the ledger)."""
    monkeypatch.setenv("TUNE_LEDGER_MEASURE_CACHE", "off")


def _campaign(tmp_path: Path, *, lying: bool) -> tuple[Cli, str, str]:
    """Two adopted candidates (tile 16, then 32); the second measured by a lying verifier when
    `lying`. Returns (cli, first attempt, second attempt)."""
    cli = measured_op(tmp_path / "root")
    first = candidate(cli, 16)
    assert first["verdict"] == "adopt"
    lie(cli, lying)
    second = candidate(cli, 32)
    assert second["verdict"] in ("adopt", "target-reached")
    lie(cli, False)
    return cli, str(first["attempt"]), str(second["attempt"])


def test_a_verifier_that_lied_is_caught_with_exit_10(tmp_path: Path) -> None:
    """The best was recorded at 2 µs by a verifier that lied; measured again it takes 5 µs:
    exit 10 naming it; the other attempt agrees; nothing in the root changes."""
    cli, first, second = _campaign(tmp_path, lying=True)
    recorded = cli.ok("status", OP)["best"]
    assert recorded["time_us"] == 2.0
    before = snapshot(cli.root)
    result = cli("audit", OP, "--remeasure", "2")
    assert result.code == 10
    error = result.json
    assert error["kind"] == "remeasure-disagrees"
    assert f"attempt {second} measured again disagrees" in error["error"]
    assert error["blocking"] == f"1 of 2 re-measured attempt(s) disagree: {second}"
    again = error["remeasure"]
    assert [r["attempt"] for r in again["remeasured"]] == [second, first]  # the best first
    lied, honest = again["remeasured"]
    assert (lied["agrees"], lied["recorded_us"], lied["again_us"]) == (
        False,
        [2.0, 2.02, 1.98],
        [5.0, 5.05, 4.95],
    )
    assert "beyond the noise band" in lied["why"]
    assert honest["agrees"] is True and "within the noise band" in honest["why"]
    assert snapshot(cli.root) == before  # no event, no kernel file, no MEMORY.md change
    human = cli("audit", OP, "--remeasure", "1", as_json=False)
    assert human.code == 10 and f"{second}: DISAGREES" in human.stdout


def test_an_honest_campaign_passes_and_the_users_kernel_is_never_run(tmp_path: Path) -> None:
    """Consistent results exit 0. The verifier ran the kept kernel, not the file on disk: a
    kernel being edited (a different time) changes nothing, and is left as it is."""
    cli, first, second = _campaign(tmp_path, lying=False)
    edited = KERNEL.replace("time_us: 20", "time_us: 90")
    impl(cli).write_text(edited, "utf-8")
    data = cli.ok("audit", OP, "--remeasure", "5")
    again = data["remeasure"]
    assert [r["attempt"] for r in again["remeasured"]] == [second, first]
    assert again["disagree"] == [] and all(r["agrees"] for r in again["remeasured"])
    assert impl(cli).read_text("utf-8") == edited
    assert data["clean"] is True


def test_the_baseline_is_the_best_until_an_attempt_is_adopted(tmp_path: Path) -> None:
    """With nothing adopted, the target sheet's measured baseline is what is measured again."""
    cli = measured_op(tmp_path / "root")
    again = cli.ok("audit", OP, "--remeasure", "1")["remeasure"]
    assert [(r["attempt"], r["agrees"]) for r in again["remeasured"]] == [("baseline", True)]


def test_remeasure_is_refused_without_something_measured_or_for_all_ops(tmp_path: Path) -> None:
    """Typed-in results cannot be measured again (exit 2), nor can --all take a count."""
    from cli_harness import activate

    cli = Cli(tmp_path)
    activate(cli)
    refused = cli("audit", OP, "--remeasure", "1")
    assert refused.code == 2 and "verifier" in refused.json["error"]
    assert cli("audit", "--all", "--remeasure", "1").code == 2
    assert cli("audit", OP, "--remeasure", "0").code == 2


def test_recheck_uses_the_noise_band_both_ways() -> None:
    """Within the band agrees; faster or slower beyond it disagrees (threshold and bootstrap)."""
    from stages import remeasure
    from stages.policy import DEFAULT_POLICY

    def agrees(recorded: list[float], again: list[float]) -> bool:
        return remeasure.agrees(remeasure.recheck(recorded, again, DEFAULT_POLICY, "a" * 12))

    threshold = float(DEFAULT_POLICY["noise_threshold"])
    assert agrees([20.0], [20.0 * (1 + threshold / 2)])
    assert not agrees([20.0], [20.0 * (1 + threshold * 2)])
    assert not agrees([20.0], [2.0])
    assert agrees([20.0, 20.2, 19.8], [20.1, 19.9, 20.0])
    assert not agrees([2.0, 2.02, 1.98], [20.0, 20.2, 19.8])
    assert not agrees([20.0, 20.2, 19.8], [2.0, 2.02, 1.98])


def test_a_file_the_op_folder_links_to_is_found_from_the_copy(tmp_path: Path) -> None:
    """SPEC.md a link to another op's (two ops sharing it): the temporary copy, which holds
    only this op's folder, links to the same file, and the re-measurement agrees."""
    cli, _first, _second = _campaign(tmp_path, lying=False)
    spec = cli.root / "custom" / OP / "SPEC.md"
    other = cli.root / "custom" / "other"  # another op's folder: not in the copy
    other.mkdir()
    (other / "SPEC.md").write_bytes(spec.read_bytes())
    spec.unlink()
    spec.symlink_to(Path("..") / "other" / "SPEC.md")
    again = cli.ok("audit", OP, "--remeasure", "1")["remeasure"]
    assert again["disagree"] == []
