"""Compacting the attempts before a state snapshot is written (ledger/domain/compact_attempts.py)
changes no value: configs and metrics held as text read back as recorded (key order, number
types), equal values are shared only when their JSON text is equal, and a state compares
equal to itself before."""

from __future__ import annotations

import copy
from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from ledger.domain.compact_attempts import compact_attempts
from ledger.domain.keys import measured_key
from ledger.domain.state import Attempt, Measurement, State

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
        attempt = Attempt(
            aid, n + 1, "mutation", "incore", None, config, value=value, detail=detail
        )
        attempt.measurement = Measurement((1.0,), 1.0, None, None, "reported", {"c": n / 2})
        state.attempts[aid] = attempt
        state.measured_configs[measured_key(state, config)] = aid
    return state


@given(st.lists(st.tuples(_CONFIGS, _VALUES, st.sampled_from(["", "oom", "oom "])), max_size=8))
def test_sharing_changes_no_value(configs: list[tuple[dict[str, Any], Any, str]]) -> None:
    state = _state(configs)
    before = copy.deepcopy(state)
    compact_attempts(state)
    assert state == before
    for shared, kept in zip(state.attempts.values(), before.attempts.values(), strict=True):
        # The same text, key order and number types: 1, 1.0, True and -0.0, 0.0 stay apart.
        assert orjson.dumps(shared.config) == orjson.dumps(kept.config)
        assert shared.measurement is not None and kept.measurement is not None
        assert orjson.dumps(shared.measurement.metrics) == orjson.dumps(kept.measurement.metrics)
        assert orjson.dumps(shared.value) == orjson.dumps(kept.value)
        assert shared.detail == kept.detail


def test_configs_become_text_and_equal_values_one_object() -> None:
    # Parsed, as replay gets them: each line's values are objects of their own.
    lines = [
        '[{"depth": 1000, "n": {"-1": 8}, "tile": [1, 24]}, [1, 24], "oom"]',
        '[{"depth": 1000, "n": {"-1": 8}, "tile": [1, 25]}, [1, 24], "oom"]',
        '[{"tile": [1.0, 26], "depth": 1000.0, "n": {"-1": 8.0}}, null, ""]',
    ]
    state = _state([tuple(orjson.loads(line)) for line in lines])
    first, second, third = state.attempts.values()
    first_key = next(iter(state.measured_configs))
    compact_attempts(state)
    # Held as text: the R9 key's own string where the texts are equal (keys in order, ints).
    assert first._config is first_key
    assert first.config == {"depth": 1000, "n": {"-1": 8}, "tile": [1, 24]}
    assert isinstance(third._config, str) and third._config not in state.measured_configs
    assert list(third.config) == ["tile", "depth", "n"] and third.config["depth"] == 1000.0
    assert type(third.config["depth"]) is float
    assert first.value is second.value and second.detail is first.detail
