"""Typed payloads as plain data on the append path: one unstructuring function per class,
generated once from the class's own fields, giving exactly what the cattrs converter gives.

cattrs looks up the hook of every nested value at run time (optionals, tuples, dicts, values
typed Any), which cost about as much as encoding the payload. Here each field's conversion is
chosen once, from its declared type: plain JSON scalars as they are, tuples as lists, nested
attrs classes by their own function, and any type not known here by the converter itself, so
no value is ever handled differently (tests/test_plain_data.py compares both over every
payload class). The functions are generated as source, like cattrs' own: from the classes'
field names and types only, never from data.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol

import attrs

Unstructure = Callable[[Any], Any]


class Converter(Protocol):
    """What is used of a cattrs converter here (cattrs.Converter is one): its unstructuring,
    for the values the generated functions leave to it."""

    def unstructure(self, obj: Any, unstructure_as: Any = None) -> Any: ...


_SCALARS = frozenset({str, int, float, bool, type(None)})


def plain_json(value: Any, converter: Converter) -> Any:
    """A value of a field typed `Any` as the converter unstructures it (by its runtime type):
    JSON scalars as they are, lists and tuples as new lists, dicts with text keys copied."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is list or kind is tuple:
        return [item if type(item) in _SCALARS else plain_json(item, converter) for item in value]
    if kind is dict and all(type(key) is str for key in value):
        return {
            key: item if type(item) in _SCALARS else plain_json(item, converter)
            for key, item in value.items()
        }
    return converter.unstructure(value)  # numpy scalars and anything rarer: the converter's


def compile_unstructure(
    cls: type[Any],
    converter: Converter,
    omit_if_default: Mapping[type[Any], frozenset[str]],
) -> Unstructure:
    """The function that turns an instance of the attrs class `cls` into the dict the
    converter gives; fields named in `omit_if_default[cls]` are left out at their default."""
    hints = typing.get_type_hints(cls)
    omitted = omit_if_default.get(cls, frozenset())
    names: dict[str, Any] = {}
    always: list[str] = []
    optional: list[str] = []
    for field in attrs.fields(cls):
        convert = _converter_of(hints[field.name], converter, omit_if_default)
        value = f"instance.{field.name}"
        if convert is not None:
            names[f"convert_{field.name}"] = convert
            value = f"convert_{field.name}({value})"
        if field.name not in omitted:
            always.append(f"        {field.name!r}: {value},")
            continue
        if isinstance(field.default, attrs.Factory):  # type: ignore[arg-type]
            raise TypeError(f"{cls.__name__}.{field.name}: a factory default is not supported")
        names[f"default_{field.name}"] = field.default
        optional.append(
            f"    if instance.{field.name} != default_{field.name}:\n"
            f"        out[{field.name!r}] = {value}\n"
        )
    source = (
        "def unstructure(instance):\n"
        "    out = {\n" + "\n".join(always) + "\n    }\n" + "".join(optional) + "    return out\n"
    )
    namespace: dict[str, Any] = dict(names)
    exec(compile(source, f"<unstructure {cls.__qualname__}>", "exec"), namespace)
    made: Unstructure = namespace["unstructure"]
    return made


def _converter_of(
    hint: Any, converter: Converter, omit_if_default: Mapping[type[Any], frozenset[str]]
) -> Unstructure | None:
    """How a field of type `hint` is unstructured; None: the value as it is."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint in _SCALARS or origin is Literal:
        return None
    if hint is Any:
        return lambda value: plain_json(value, converter)
    if origin in (typing.Union, types.UnionType) and len(args) == 2 and type(None) in args:
        (inner,) = (arg for arg in args if arg is not type(None))
        present = _converter_of(inner, converter, omit_if_default)
        if present is None:
            return None
        return _optional(present)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item_converter = _converter_of(args[0], converter, omit_if_default)
        return list if item_converter is None else _each_item(item_converter)
    if origin is dict and len(args) == 2 and args[0] is str:
        if args[1] is Any:  # configs: mostly scalars, converted in place of a call each
            return lambda value: {
                key: item if type(item) in _SCALARS else plain_json(item, converter)
                for key, item in value.items()
            }
        value_converter = _converter_of(args[1], converter, omit_if_default)
        if value_converter is None:
            return lambda value: {key: item for key, item in value.items()}
        return _each_value(value_converter)
    if attrs.has(hint):
        return compile_unstructure(hint, converter, omit_if_default)
    # A type this module does not know: the converter's own hook, so nothing can differ.
    return lambda value: converter.unstructure(value, unstructure_as=hint)


def _optional(present: Unstructure) -> Unstructure:
    """A converter of `X | None` from that of X."""
    return lambda value: None if value is None else present(value)


def _each_item(convert: Unstructure) -> Unstructure:
    """A converter of `tuple[X, ...]` (to a list) from that of X."""
    return lambda value: [convert(item) for item in value]


def _each_value(convert: Unstructure) -> Unstructure:
    """A converter of `dict[str, X]` from that of X."""
    return lambda value: {key: convert(item) for key, item in value.items()}
