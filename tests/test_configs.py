"""Configs compare by value: one canonical form of numbers (R9 keys, R11 bindings)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.domain.configs import canonical_config, config_key, filled

SPELLINGS = [128, 128.0, 1.28e2, 12800e-2]


@pytest.mark.parametrize("value", SPELLINGS)
def test_integral_floats_are_their_int(value: float) -> None:
    """Every spelling of 128 gives the key of 128."""
    assert config_key({"stitch": value}) == config_key({"stitch": 128}) == '{"stitch":128}'


def test_minus_zero_is_zero_and_nesting_is_canonical() -> None:
    """-0.0 is 0, inside lists and objects too; key order does not matter."""
    assert config_key({"b": [-0.0, 2.0], "a": {"y": 1.0, "x": 0.5}}) == config_key(
        {"a": {"x": 0.5, "y": 1}, "b": [0, 2]}
    )


def test_non_finite_numbers_are_refused() -> None:
    """NaN and the infinities have no canonical form."""
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError, match="finite"):
            canonical_config({"k": bad})


@given(st.integers(min_value=-(2**52), max_value=2**52))
def test_an_int_and_its_float_share_one_key(number: int) -> None:
    """For every exactly representable integer, n and float(n) are one config."""
    assert config_key({"k": [number]}) == config_key({"k": [float(number)]})


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_canonical_form_is_idempotent_and_keeps_the_value(number: float) -> None:
    """Canonicalizing twice changes nothing, and the number's value is kept."""
    once = canonical_config({"k": number})
    assert canonical_config(once) == once
    assert once["k"] == number


def test_a_default_spelt_out_or_left_out_is_one_config() -> None:
    """Filling in the knob defaults is how every comparison sees a config (R6, R9, R11): a
    config that names a default and one that leaves it out fill to one config and one key; a
    value the config gives wins over the default."""
    defaults = {"stitch": 128, "unroll_list": [1]}
    spelt = {"vec": [1, 16], "stitch": 128.0}
    left_out = {"vec": [1, 16]}
    assert filled(spelt, defaults) == filled(left_out, defaults)
    assert filled(left_out, defaults) == {"stitch": 128, "unroll_list": [1], "vec": [1, 16]}
    assert config_key(spelt, defaults) == config_key(left_out, defaults)
    assert config_key(left_out, defaults) != config_key(left_out)
    assert filled({"stitch": 64}, defaults)["stitch"] == 64
