"""Replay's R9 key takes orjson's text as it is only when that text holds no float: the fast
test for a float never lets one through, so the key is always the canonical form's."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from test_codec import JSON, TEXT

from ledger.domain.configs import _maybe_float, canonical_config, config_key
from ledger.log import codec

# Numbers whose text has an exponent, a point, or neither; keys and strings that look alike.
NUMBERS = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([1e16, 1e-7, 5e-324, 1.5e300, -0.0, 128.0, 1e22, 123456789012345678.0]),
)
KEYS = st.one_of(TEXT, st.sampled_from(["1e5", "e1", "2.5", "x9e", "E", "l0c_reuse_depth"]))
CONFIG_VALUES = st.recursive(
    st.one_of(JSON, NUMBERS, KEYS),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=3)),
    max_leaves=10,
)
CONFIGS = st.dictionaries(KEYS, CONFIG_VALUES, max_size=6)


@settings(max_examples=500, deadline=None)
@given(config=CONFIGS, defaults=st.one_of(st.none(), CONFIGS))
def test_the_key_is_always_the_canonical_forms(
    config: dict[str, Any], defaults: dict[str, Any] | None
) -> None:
    """Whatever the config holds, its key is the sorted JSON of its canonical form."""
    filled = {**defaults, **config} if defaults else config
    assert config_key(config, defaults) == codec.sorted_json(canonical_config(filled))


@settings(max_examples=500, deadline=None)
@given(number=st.floats(allow_nan=False, allow_infinity=False))
def test_every_float_is_seen(number: float) -> None:
    """orjson's text of any float, alone or inside a config, is flagged as maybe a float."""
    assert _maybe_float(codec.sorted_json({"k": [number]}))
    assert _maybe_float(codec.sorted_json(number))


def test_ints_alone_take_the_fast_path() -> None:
    """A config of ints, lists and text without a point or an exponent is not flagged."""
    text = codec.sorted_json({"l0c_reuse_depth": 2, "unroll_list": [4, 2, 1], "v": {"-1": 2}})
    assert not _maybe_float(text)
