"""The shared methods (ledger/schema/shared_methods.py) behave as those attrs generates, for
every class that uses them: the very repr text, the same equality, equal hashes for equal
values; and those classes do not generate their own (which is what made defining them cost
twice as much at every start)."""

from __future__ import annotations

import functools
from types import ModuleType
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from test_codec import PAYLOADS

from ledger.domain import knobs, manifest
from ledger.log import chain, quarantine, record, store_interface, tip_stamp, verification
from ledger.priors import (
    focus,
    knowledge,
    learned,
    moves,
    prior,
    profile,
    rank,
    scan,
    sources,
)
from ledger.priors import record as priors_record
from ledger.projections import memory_file, splice, timeline
from ledger.schema import events, values
from ledger.schema.shared_methods import SharedRepr, SharedValue
from ledger.shell import api, op_folder, priors_load, rollback
from stages import allowed, alternates, commands, outcome, refusal, retry, verdict

# Every module whose classes use it.
MODULES = (
    *(events, values, commands),
    *(chain, quarantine, record, store_interface, tip_stamp, verification),
    *(memory_file, splice, timeline, api, rollback),
    *(allowed, alternates, outcome, refusal, retry, verdict),
    *(focus, knowledge, prior, profile, rank, scan, sources, priors_load),
    *(learned, moves, priors_record),
    *(knobs, manifest, op_folder),
)


def _classes(module: ModuleType) -> list[type[Any]]:
    return [
        cls
        for cls in vars(module).values()
        if isinstance(cls, type) and attrs.has(cls) and cls.__module__ == module.__name__
    ]


SHARED = [cls for module in MODULES for cls in _classes(module)]


@functools.cache  # one twin per class: instances of two twins are of two classes
def _twin(cls: type[Any]) -> type[Any]:
    """A class attrs makes with the same name and fields (each shown, compared and hashed or
    not, as in `cls`) and its own generated repr, equality and hash."""
    fields = {
        field.name: attrs.field(repr=field.repr, eq=field.eq_key or field.eq, hash=field.hash)
        for field in attrs.fields(cls)
    }
    return attrs.make_class(cls.__name__, fields, frozen=True)


def _both(cls: type[Any], fields: dict[str, Any]) -> tuple[Any, Any]:
    """An instance of `cls` and of its twin holding the same values (no validation)."""
    ours = object.__new__(cls)
    for name, value in fields.items():
        object.__setattr__(ours, name, value)
    return ours, _twin(cls)(**fields)


def _nested(value: Any) -> list[Any]:
    """Every attrs instance inside `value`, itself included."""
    found = [value] if attrs.has(type(value)) else []
    if attrs.has(type(value)):
        for field in attrs.fields(type(value)):
            found += _nested(getattr(value, field.name))
    elif isinstance(value, list | tuple):
        for item in value:
            found += _nested(item)
    elif isinstance(value, dict):
        for item in value.values():
            found += _nested(item)
    return found


@pytest.mark.parametrize("cls", SHARED, ids=[cls.__name__ for cls in SHARED])
def test_every_class_uses_the_shared_methods(cls: type[Any]) -> None:
    assert issubclass(cls, SharedRepr)
    assert cls.__repr__ is SharedRepr.__repr__  # attrs generated none (repr=False)
    if issubclass(cls, SharedValue):  # frozen: attrs generated no equality or hash either
        assert cls.__eq__ is SharedValue.__eq__ and cls.__hash__ is SharedValue.__hash__


VALUE_CLASSES = [cls for cls in SHARED if issubclass(cls, SharedValue)]
NAN = float("nan")


@pytest.mark.parametrize("cls", VALUE_CLASSES, ids=[cls.__name__ for cls in VALUE_CLASSES])
def test_equality_and_hash_are_those_attrs_generates(cls: type[Any]) -> None:
    names = [field.name for field in attrs.fields(cls)]
    # Pairs of values per field: equal, unequal, the same NaN (equal by identity in a tuple
    # but not by ==, so the chained comparison tells them apart), two NaNs.
    pairs = [("a", "a"), ("a", "b"), (NAN, NAN), (float("nan"), float("nan")), (1, 1.0)]
    for first, second in pairs:
        for changed in range(len(names) + 1):  # which field holds the pair; the others "x"
            one = {name: first if i == changed else "x" for i, name in enumerate(names)}
            two = {name: second if i == changed else "x" for i, name in enumerate(names)}
            (ours_one, twin_one), (ours_two, twin_two) = _both(cls, one), _both(cls, two)
            assert (ours_one == ours_two) == (twin_one == twin_two)
            assert (ours_one != ours_two) == (twin_one != twin_two)
            if ours_one == ours_two:
                assert hash(ours_one) == hash(ours_two)
    ours, twin = _both(cls, dict.fromkeys(names, "x"))
    assert ours.__eq__(twin) is NotImplemented and ours != twin  # another class: never equal
    assert ours == _both(cls, dict.fromkeys(names, "x"))[0]


@pytest.mark.parametrize("cls", SHARED, ids=[cls.__name__ for cls in SHARED])
def test_the_repr_is_the_one_attrs_generates(cls: type[Any]) -> None:
    samples = ['it\'s "quoted"\n', 3, -0.0, float("nan"), None, (1, "a"), {"k": [1.5]}, ()]
    names = [field.name for field in attrs.fields(cls)]
    fields = {name: samples[index % len(samples)] for index, name in enumerate(names)}
    ours, twin = _both(cls, fields)
    assert repr(ours) == repr(twin)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payload=PAYLOADS)
def test_payloads_and_their_values_show_as_attrs_shows_them(payload: Any) -> None:
    for value in _nested(payload):
        fields = {field.name: getattr(value, field.name) for field in attrs.fields(type(value))}
        assert repr(value) == repr(_both(type(value), fields)[1])


def test_an_object_that_reaches_itself_shows_dots_as_attrs_does() -> None:
    loop: dict[str, Any] = {}
    ours, twin = _both(events.PolicySet, {"key": "k", "value": loop, "reason": "", "person": None})
    loop["again"] = ours
    twin_loop: dict[str, Any] = {"again": twin}
    object.__setattr__(twin, "value", twin_loop)
    assert repr(ours) == repr(twin)
    assert "..." in repr(ours)
