"""The append path's precompiled unstructuring gives exactly what the cattrs converter gives."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_codec import JSON, PAYLOADS, TEXT

from ledger.log import codec, record
from ledger.log.plain_data import plain_json
from ledger.log.record import Provenance, converter
from ledger.schema.events import AttemptMeasured, PointOpened, PolicySet
from ledger.schema.values import Binding, Origin, OutputCheck


def same(a: Any, b: Any) -> bool:
    """Equal values of the same types all the way down (a tuple is not a list here)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[key], b[key]) for key in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) or (a != a and b != b)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payload=PAYLOADS)
def test_every_payload_unstructures_as_the_converter_does(payload: Any) -> None:
    """For every payload class, the precompiled function gives the converter's very dict."""
    assert same(record.unstructure_payload(payload), converter().unstructure(payload))


@settings(max_examples=200, deadline=None)
@given(
    key=st.one_of(st.none(), TEXT),
    request=st.one_of(st.none(), TEXT),
    pid=st.integers(0, 2**31),
    text=TEXT,
)
def test_provenance_encodes_as_the_converter_does(
    key: str | None, request: str | None, pid: int, text: str
) -> None:
    """A provenance's canonical JSON is that of the converter's dict."""
    provenance = Provenance(
        at=text, tool="t", version="1", host=text, pid=pid, command=text, key=key, request=request
    )
    expected = codec.canonical_json(converter().unstructure(provenance))
    assert record.encode_provenance(provenance) == expected


# Values a caller may hand to a field typed Any: JSON, tuples, numpy scalars, odd keys.
ODD = st.recursive(
    st.one_of(
        JSON,
        st.floats(width=32, allow_nan=False).map(np.float32),
        st.integers(-(2**40), 2**40).map(np.int64),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.one_of(TEXT, st.integers(-3, 3)), inner, max_size=3),
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(value=ODD)
def test_any_values_unstructure_as_the_converter_does(value: Any) -> None:
    """A value of a field typed Any takes the converter's runtime dispatch exactly."""
    assert same(plain_json(value, converter()), converter().unstructure(value))
    policy = PolicySet(key="k", value=value)
    assert same(record.unstructure_payload(policy), converter().unstructure(policy))


def test_fields_added_later_are_left_out_at_their_default() -> None:
    """AttemptMeasured's binding and accuracy origin, PointOpened's knobs: omitted unset."""
    origin = Origin(level="measured")
    measured = AttemptMeasured(
        attempt="a",
        outputs=(OutputCheck(name="y", all_close=True),),
        layout_exit=0,
        times_us=(1.0,),
        origin=origin,
    )
    assert "binding" not in record.unstructure_payload(measured)
    assert "accuracy_origin" not in record.unstructure_payload(measured)
    bound = AttemptMeasured(
        attempt="a",
        outputs=(OutputCheck(name="y", all_close=True),),
        layout_exit=0,
        times_us=(1.0,),
        origin=origin,
        binding=Binding(config={"a": (1, 2)}),
        accuracy_origin=origin,
    )
    assert same(record.unstructure_payload(bound), converter().unstructure(bound))
    assert record.unstructure_payload(bound)["binding"] == {
        "config": {"a": [1, 2]},
        "impl_digest": None,
    }
    assert "knobs" not in record.unstructure_payload(PointOpened(stage="frontend", name="p"))
    knobs = PointOpened(stage="frontend", name="p", knobs=("a",))
    assert record.unstructure_payload(knobs)["knobs"] == ["a"]
