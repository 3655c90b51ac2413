"""attrs' own `__repr__`, written once and shared, instead of generated for every class.

attrs writes each class's repr as source and compiles it when the class is defined, and the
repr's f-string is the costliest part of that: with it, defining the event schema, the
commands and the other value classes took about twice as long, at every start of every
command (measured: 25 ms vs 12 ms for `ledger.schema.events` alone). A class declared
`@frozen(repr=False)` with this base gets the very text attrs would give
(`Name(field=value!r, ...)`, `...` for an object already being shown), computed from its
fields when a repr is asked for, which is rare (messages, debugging).
tests/test_shared_repr.py compares it with attrs' generated repr for every such class.
"""

from __future__ import annotations

import threading
from typing import Any

import attrs

# The objects being shown, per thread (a repr that reaches itself again shows `...`).
_showing = threading.local()


class SharedRepr:
    """Base of a `@frozen(repr=False)` class: attrs' repr without generating one per class."""

    __slots__ = ()

    def __repr__(self) -> str:
        showing: set[int] | None = getattr(_showing, "ids", None)
        if showing is None:
            showing = _showing.ids = set()
        if id(self) in showing:
            return "..."
        showing.add(id(self))
        try:
            parts = []
            cls: Any = type(self)  # an attrs class (the base is for attrs classes only)
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
