"""Sharing the values of the attempts' configs before a state snapshot is written
(ledger/domain/shared_values.py) changes no value: equal JSON text only, and every config
reads and prints as it was recorded."""

from __future__ import annotations

import copy
from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from ledger.domain.shared_values import share_config_values
from ledger.domain.state import Attempt, State

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.sampled_from([0, 1, 1.0, 0.0, -0.0, 128, 128.0, 300, 300.0, 2.5]),
    st.sampled_from(["a", "b", "1", "true"]),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("xyz"), inner),
    max_leaves=6,
)
_CONFIGS = st.dictionaries(st.sampled_from(["k1", "k2", "k3", "k4"]), _VALUES, max_size=4)


def _state(configs: list[tuple[dict[str, Any], Any, str]]) -> State:
    state = State()
    for n, (config, value, detail) in enumerate(configs):
        aid = f"{n:012x}"
        state.attempts[aid] = Attempt(
            aid, n + 1, "mutation", "incore", None, config, value=value, detail=detail
        )
    return state


@given(st.lists(st.tuples(_CONFIGS, _VALUES, st.sampled_from(["", "oom", "oom "])), max_size=8))
def test_sharing_changes_no_value(configs: list[tuple[dict[str, Any], Any, str]]) -> None:
    state = _state(configs)
    before = copy.deepcopy(state)
    share_config_values(state)
    assert state == before
    for shared, kept in zip(state.attempts.values(), before.attempts.values(), strict=True):
        # The same text, key order and number types: 1, 1.0, True and -0.0, 0.0 stay apart.
        assert orjson.dumps(shared.config) == orjson.dumps(kept.config)
        assert orjson.dumps(shared.value) == orjson.dumps(kept.value)
        assert shared.detail == kept.detail


def test_equal_values_become_one_object() -> None:
    # Parsed, as replay gets them: each line's values are objects of their own.
    lines = [
        '[{"tile": [1, 24], "depth": 1000, "n": {"-1": 8}}, [1, 24], "oom"]',
        '[{"tile": [1, 24], "depth": 1000, "n": {"-1": 8}}, 1000, "oom"]',
        '[{"tile": [1.0, 24], "depth": 1000.0, "n": {"-1": 8.0}}, null, ""]',
    ]
    state = _state([tuple(orjson.loads(line)) for line in lines])
    first, second, third = state.attempts.values()
    assert second.config["tile"] is not first.config["tile"]
    share_config_values(state)
    for name in ("tile", "depth", "n"):
        assert second.config[name] is first.config[name]
        assert third.config[name] is not first.config[name]  # 1.0 is not written as 1
    assert first.value is first.config["tile"]
    assert second.value is first.config["depth"]
    assert second.detail is first.detail
