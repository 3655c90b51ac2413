"""The pure core of priors (R7): which keys, which candidates, what is filtered, how they rank."""

from __future__ import annotations

import json
import pkgutil
import re
from typing import Any

import pytest
from driver import BASE_CONFIG, Driver, candidate, in_point, in_stage, vec, with_sheet
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.domain.configs import config_key
from ledger.errors import BadInput
from ledger.log import codec
from ledger.priors.diversity import config_distance
from ledger.priors.focus import STAGE_KEYS, Focus, keys_of_point, resolve_focus
from ledger.priors.knowledge import parse_knowledge
from ledger.priors.prior import FailedConfig, Prior, PriorKind
from ledger.priors.rank import proposal_json, propose
from stages import commands as cmd

FRONTEND = Focus(stage="frontend", point="F-1", keys=STAGE_KEYS["frontend"])


def prior(kind: PriorKind = "source", weight: float = 0.5, name: str = "p", **values: Any) -> Prior:
    """A prior setting `values`, named `name`."""
    return Prior(values=values, kind=kind, provenance=f"{kind} {name}", weight=weight)


def configs(proposal_candidates: Any) -> list[str]:
    return [config_key(c.config) for c in proposal_candidates]


# --- which keys ------------------------------------------------------------------------------


def test_the_open_points_stage_gives_the_keys() -> None:
    focus = resolve_focus(in_point("swimlane", "S-1").state)
    assert (focus.stage, focus.point, focus.keys) == ("swimlane", "S-1", STAGE_KEYS["swimlane"])
    assert focus.explicit == ()


def test_a_point_named_after_a_config_key_tunes_that_key_only() -> None:
    focus = resolve_focus(in_point("frontend", "unroll_list").state)
    assert (focus.keys, focus.explicit) == (("unroll_list",), ("unroll_list",))


@pytest.mark.parametrize(
    ("name", "keys"),
    [
        ("F-vec-tile", ("vec_tile_shape",)),
        ("S3 stitch", ("stitch_function_max_num", "stitch_function_num_initial")),
        ("I-2_nbuffer", ("vec_nbuffer_setting", "cube_nbuffer_setting")),
        ("F-1", ()),
    ],
)
def test_words_in_a_point_name_say_which_keys_it_tunes(name: str, keys: tuple[str, ...]) -> None:
    assert keys_of_point(name) == keys


def test_keys_given_explicitly_win_over_point_and_stage() -> None:
    focus = resolve_focus(in_point().state, keys=["stitch_function_max_num", "unroll_list"])
    assert focus.keys == focus.explicit == ("stitch_function_max_num", "unroll_list")


def test_without_a_stage_or_in_the_algorithm_stage_there_are_no_keys() -> None:
    with pytest.raises(BadInput):
        resolve_focus(with_sheet().state)
    with pytest.raises(BadInput):
        resolve_focus(in_stage("algorithm").state)
    assert resolve_focus(with_sheet().state, stage="incore").keys == STAGE_KEYS["incore"]


def test_tile_keys_the_best_config_lacks_are_left_out_but_framework_options_are_added() -> None:
    state = in_point("incore", "I-1").state
    proposal = propose(
        state,
        resolve_focus(state),
        [prior(cube_nbuffer_setting={"-1": 2}), prior(vec_nbuffer_setting={"-1": 2})],
    )
    assert proposal.keys == ("vec_nbuffer_setting", "sg_set_scope")
    assert any("cube_nbuffer_setting: not proposed" in n for n in proposal.notes)
    assert [c.config for c in proposal.candidates] == [
        {**BASE_CONFIG, "vec_nbuffer_setting": {"-1": 2}}
    ]
    explicit = propose(
        state,
        resolve_focus(state, keys=["cube_nbuffer_setting"]),
        [prior(cube_nbuffer_setting={"-1": 2})],
    )
    assert [c.config for c in explicit.candidates] == [
        {**BASE_CONFIG, "cube_nbuffer_setting": {"-1": 2}}
    ]


# --- candidates and what is filtered ----------------------------------------------------------


def test_a_candidate_is_the_best_config_with_the_priors_values_for_the_focus_keys() -> None:
    state = in_point().state
    proposal = propose(
        state, FRONTEND, [prior(vec_tile_shape=vec(32), stitch_function_max_num=64, name="k.py:3")]
    )
    [only] = proposal.candidates
    assert only.config == {**BASE_CONFIG, "vec_tile_shape": vec(32)}
    assert only.prior == "source k.py:3" and only.kinds == ("source",)
    assert only.reasons[0] == "sets vec_tile_shape [1,8,1,64] -> [1,8,1,32]"


def test_priors_leading_to_one_config_merge_and_their_agreement_raises_the_score() -> None:
    state = in_point().state
    proposal = propose(
        state,
        FRONTEND,
        [
            prior("builtin", 0.5, "typical", unroll_list=[8, 4, 2, 1]),
            prior("source", 0.6, "k.py:9", unroll_list=[8, 4, 2, 1], vec_tile_shape=vec(64)),
        ],
    )
    [merged] = proposal.candidates
    assert merged.score == pytest.approx(1 - 0.5 * 0.4)
    assert merged.prior == "source k.py:9 (+1 more: builtin)"
    assert merged.kinds == ("source", "builtin")


def test_measured_configs_are_filtered_naming_the_attempt_and_its_outcome() -> None:
    driver = in_point()
    slow = driver.start(candidate(vec_tile_shape=vec(32)))
    driver.verify(slow, 120.0)
    proposal = propose(
        driver.state,
        FRONTEND,
        [prior(vec_tile_shape=vec(32)), prior(vec_tile_shape=vec(64)), prior(unroll_list=[8, 1])],
    )
    reasons = {
        codec.canonical_json(f.config["vec_tile_shape"]): (f.rule, f.reason)
        for f in proposal.filtered
    }
    assert reasons["[1,8,1,32]"] == ("R9", f"already measured by attempt {slow}: rollback")
    assert reasons["[1,8,1,64]"] == (
        "R9",
        "already measured by the baseline: the baseline of the target sheet",
    )
    assert configs(proposal.candidates) == [config_key({**BASE_CONFIG, "unroll_list": [8, 1]})]


def test_configs_beyond_an_unrelaxed_limit_are_filtered_until_it_is_relaxed() -> None:
    driver = in_point()
    wide = [prior(vec_tile_shape=[1, 8, 1, 128])]
    [beyond] = propose(driver.state, FRONTEND, wide).filtered
    assert beyond.rule == "R3" and "axis 3 is 128 > 64" in beyond.reason
    driver.run(
        cmd.Relax(person="Pat", what="vec", limit=256, basis="profile: tile 128 halves the tasks")
    )
    assert len(propose(driver.state, FRONTEND, wide).candidates) == 1


def test_invalid_values_are_filtered_with_the_validators_message() -> None:
    proposal = propose(in_point().state, FRONTEND, [prior(unroll_list=[1, 8])])
    [invalid] = proposal.filtered
    assert invalid.rule is None and "strictly descending" in invalid.reason


def test_a_config_that_failed_in_a_very_similar_op_is_left_out_with_the_reason() -> None:
    failed = FailedConfig(
        values={**BASE_CONFIG, "vec_tile_shape": vec(32)},
        op="softmax2",
        attempt="abc123",
        failure="compile",
        similarity=0.9,
    )
    proposal = propose(in_point().state, FRONTEND, [prior(vec_tile_shape=vec(32))], [failed])
    assert proposal.candidates == ()
    assert "failed (compile) in softmax2 attempt abc123" in proposal.filtered[0].reason


def test_a_config_that_failed_in_a_less_similar_op_is_proposed_with_a_warning() -> None:
    failed = FailedConfig(
        values={"vec_tile_shape": vec(32), "unroll_list": [4, 1]},
        op="gelu",
        attempt="abc123",
        failure="oom",
        similarity=0.5,
    )
    other = FailedConfig(
        values={"vec_tile_shape": vec(32), "unroll_list": [2, 1]},
        op="gelu",
        attempt="def456",
        failure="oom",
        similarity=0.5,
    )
    proposal = propose(
        in_point().state, FRONTEND, [prior("source", 0.8, vec_tile_shape=vec(32))], [failed, other]
    )
    [warned] = proposal.candidates
    assert warned.score == pytest.approx(0.8 * 0.75)
    assert warned.reasons[-1] == (
        "warning: failed (oom) in gelu attempt abc123 (similarity 0.50); score lowered"
    )


def test_about_ten_candidates_less_those_the_point_already_has() -> None:
    driver = in_point()
    many = [prior(vec_tile_shape=[1, 8, 1, w]) for w in range(2, 40)]
    assert propose(driver.state, FRONTEND, many).count == 10
    first = driver.start(candidate(vec_tile_shape=vec(48)))
    driver.verify(first, 90.0)
    proposal = propose(driver.state, FRONTEND, many)
    assert proposal.count == 9 and len(proposal.candidates) == 9
    assert any("1 candidate(s) already" in n for n in proposal.notes)
    driver.run(cmd.SetPolicy(key="candidates_max", value=6, reason="short campaign"))
    assert propose(driver.state, FRONTEND, many).count == 5
    assert len(propose(driver.state, FRONTEND, many, count=6).candidates) == 6
    with pytest.raises(BadInput):
        propose(driver.state, FRONTEND, many, count=7)


def test_a_blocked_candidate_phase_is_noted() -> None:
    driver = in_point()
    driver.start(candidate(vec_tile_shape=vec(32)))
    notes = propose(driver.state, FRONTEND, [prior(vec_tile_shape=vec(16))]).notes
    assert any(n.startswith("R6: `candidate` would be refused now") for n in notes)


def test_no_best_config_means_nothing_to_start_from() -> None:
    driver = Driver()
    driver.run(cmd.Init(op="softmax"))
    with pytest.raises(BadInput):
        propose(driver.state, FRONTEND, [prior(vec_tile_shape=vec(32))])


# --- ranking and diversity ----------------------------------------------------------------------


def test_ten_near_copies_of_one_value_do_not_crowd_out_other_keys_and_sources() -> None:
    near = [
        prior("ledger", 0.9 - i / 1000, f"op{i}", vec_tile_shape=[1, 8, 1, 48 + i])
        for i in range(12)
    ]
    other = [
        prior("builtin", 0.4, "u8", unroll_list=[8, 4, 2, 1]),
        prior("builtin", 0.35, "u128", unroll_list=[128, 64, 16, 8, 1]),
        prior("source", 0.3, "k.py", vec_tile_shape=[1, 16, 1, 16]),
    ]
    chosen = propose(in_point().state, FRONTEND, [*near, *other]).candidates
    assert len(chosen) == 10
    assert {c.prior for c in chosen} >= {"builtin u8", "builtin u128", "source k.py"}
    assert [c.score for c in chosen] == sorted((c.score for c in chosen), reverse=True)


def test_config_distance_is_zero_only_for_equal_values_and_grows_with_the_ratio() -> None:
    keys = ["vec_tile_shape"]
    base = {"vec_tile_shape": vec(64)}
    assert config_distance(base, base, keys) == 0
    near = config_distance(base, {"vec_tile_shape": vec(32)}, keys)
    far = config_distance(base, {"vec_tile_shape": vec(4)}, keys)
    assert 0 < near < far <= 1
    assert config_distance(base, {"vec_tile_shape": [1, 64]}, keys) == 1


def test_proposal_json_has_candidates_with_config_prior_score_and_reasons() -> None:
    data = proposal_json(
        propose(
            in_point().state,
            FRONTEND,
            [prior(vec_tile_shape=vec(32)), prior(vec_tile_shape=vec(64))],
        )
    )
    assert data["keys"] == ["vec_tile_shape", "unroll_list"]
    [entry] = data["candidates"]
    assert set(entry) == {"rank", "config", "prior", "score", "reasons", "sources", "learned"}
    assert [set(f) for f in data["filtered"]] == [{"config", "prior", "reason", "rule", "learned"}]
    assert data["record"]["measured"] == 0 and data["record_text"].startswith("prior candidates")
    codec.canonical_json(data)  # plain JSON throughout


# --- properties ---------------------------------------------------------------------------------

WIDTHS = st.sampled_from([8, 16, 24, 32, 48, 64, 128])
UNROLLS = st.sampled_from([[1], [2, 1], [4, 1], [8, 4, 2, 1], [16, 8, 1], [128, 64, 16, 8, 1]])
KIND = st.sampled_from(["ledger", "source", "builtin"])
MEASURED = st.sampled_from([8, 16, 24, 32, 48])  # widths whose configs a test measures


@st.composite
def priors_strategy(draw: st.DrawFn) -> Prior:
    values: dict[str, Any] = {}
    if draw(st.booleans()):
        values["vec_tile_shape"] = [1, draw(st.sampled_from([4, 8, 16])), 1, draw(WIDTHS)]
    if draw(st.booleans()) or not values:
        values["unroll_list"] = draw(UNROLLS)
    return Prior(
        values=values,
        kind=draw(KIND),
        provenance=f"p{draw(st.integers(0, 99))}",
        weight=draw(st.floats(0.0, 1.0)),
    )


_BASE = in_point()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(priors_strategy(), max_size=40),
    st.lists(MEASURED, max_size=3, unique=True),
    st.integers(1, 15),
)
def test_candidates_are_distinct_unmeasured_bounded_and_from_several_sources(
    priors: list[Prior], measured: list[int], count: int
) -> None:
    driver = Driver()
    driver.events, driver.state = list(_BASE.events), _BASE.replayed()
    for width in measured:
        attempt = driver.start(candidate(vec_tile_shape=[1, 8, 1, width]))
        driver.run(cmd.Fail(attempt=attempt, category="compile", detail="x"))
    proposal = propose(driver.state, FRONTEND, priors, count=count)
    chosen = configs(proposal.candidates)
    assert len(chosen) == len(set(chosen))
    assert len(chosen) <= count <= 15
    assert not set(chosen) & set(driver.state.measured_configs)
    pool = [*proposal.candidates, *proposal.unselected]
    assert len(pool) == len({*chosen, *configs(proposal.unselected)})
    kinds = {k for c in pool for k in c.kinds}
    picked = {k for c in proposal.candidates for k in c.kinds}
    if count >= 2 and len(pool) >= 2 and len(kinds) >= 2:
        assert len(picked) >= 2
    if count >= len(kinds):
        assert picked == kinds
    assert len(proposal.candidates) == min(count, len(pool))


def _knowledge_doc() -> dict[str, Any]:
    data = pkgutil.get_data("ledger.priors", "data/priors.json")
    assert data is not None
    doc: dict[str, Any] = json.loads(data)
    return doc


@pytest.mark.parametrize(
    ("section", "key", "value", "said"),
    [
        ("value", "weight", 1.5, "priors.values[0]"),
        ("value", "weight", True, "priors.values[0].weight"),
        ("value", "key", 5, "priors.values[0].key"),
        ("value", "sources", [], "must name entries of 'sources'"),
        ("value", "sources", ["nowhere"], "must name entries of 'sources'"),
        ("vec_tile", "max_varied_axes", "2", "priors.vec_tile.max_varied_axes"),
        ("cube_tiles", "weight", -0.1, "priors.cube_tiles"),
        ("cube_tiles", "note", None, "priors.cube_tiles.note"),
    ],
)
def test_the_knowledge_file_is_checked_field_by_field(
    section: str, key: str, value: Any, said: str
) -> None:
    doc = _knowledge_doc()
    assert parse_knowledge(doc).cube_tiles is not None  # the shipped file parses
    part = doc["values"][0] if section == "value" else doc[section]
    part[key] = value
    with pytest.raises(ValueError, match=re.escape(said)):
        parse_knowledge(doc)
