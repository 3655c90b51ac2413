"""attrs' own `__repr__`, `__eq__` and `__hash__`, written once and shared, instead of generated
for every class.

attrs writes these methods of each class as source and compiles them when the class is
defined, at every start of every command; the repr's f-string was the costliest part of it:
with the generated repr, defining the event schema took about twice as long (measured: 25 ms
vs 12 ms for `ledger.schema.events` alone), and the generated equality and hash another ~3 ms
for it and as much for the commands. A class declared `@frozen(repr=False, eq=False)` with the
base `SharedValue` (or `@frozen(repr=False)` / `@define(repr=False)` with `SharedRepr`, which
keep attrs' generated equality) behaves as attrs would make it:

- repr: the very text (`Name(field=value!r, ...)`, `...` for an object already being shown);
- equality: only with an instance of the very same class, field by field (fields with
  `eq=False` left out, `eq_key` applied), chained with `and` as attrs' method is, so the
  result is the first false comparison or the last one;
- hash: of the same fields, so equal instances hash alike (attrs salts the tuple with a
  per-class number that varies between processes; so does this).

They are computed from the class's fields when called, which for a repr is rare (messages,
debugging); equality and hashing of these values is not on any per-event path.
tests/test_shared_methods.py compares them with attrs' generated methods for every class.
"""

from __future__ import annotations

import threading
from typing import Any

import attrs

# The objects being shown, per thread (a repr that reaches itself again shows `...`).
_showing = threading.local()


class SharedRepr:
    """Base of a `@frozen(repr=False)` or `@define(repr=False)` class: attrs' repr without
    generating one per class."""

    __slots__ = ()

    def __repr__(self) -> str:
        showing: set[int] | None = getattr(_showing, "ids", None)
        if showing is None:
            showing = _showing.ids = set()
        if id(self) in showing:
            return "..."
        showing.add(id(self))
        try:
            cls: Any = type(self)  # an attrs class (the base is for attrs classes only)
            parts = []
            for field in attrs.fields(cls):
                if field.repr is False:
                    continue
                shown = repr if field.repr is True else field.repr
                value: Any = (
                    getattr(self, field.name)
                    if field.init
                    else getattr(self, field.name, attrs.NOTHING)
                )
                parts.append(f"{field.name}={shown(value)}")
            name = cls.__qualname__.rsplit(">.", 1)[-1]
            return f"{name}({', '.join(parts)})"
        finally:
            showing.discard(id(self))


class SharedValue(SharedRepr):
    """Base of a `@frozen(repr=False, eq=False)` class: attrs' repr, equality and hash
    without generating them per class."""

    __slots__ = ()

    def __eq__(self, other: object) -> Any:
        if other.__class__ is not self.__class__:
            return NotImplemented
        result: Any = True
        for field in _compared(type(self)):
            key = field.eq_key
            mine, theirs = getattr(self, field.name), getattr(other, field.name)
            result = key(mine) == key(theirs) if key else mine == theirs
            if not result:
                return result
        return result

    def __hash__(self) -> int:
        cls = type(self)
        values: list[Any] = [cls.__qualname__]
        for field in _hashed(cls):
            value = getattr(self, field.name)
            values.append(field.eq_key(value) if field.eq_key else value)
        return hash(tuple(values))


def _compared(cls: Any) -> tuple[Any, ...]:
    return tuple(field for field in attrs.fields(cls) if field.eq)


def _hashed(cls: Any) -> tuple[Any, ...]:
    return tuple(
        field
        for field in attrs.fields(cls)
        if field.hash is True or (field.hash is None and field.eq is True)
    )
