"""Upcasting: old schema versions of a payload are rewritten, on read, to the current one."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ledger.schema.events import PAYLOAD_TYPES

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]

# (type name, version) -> function from that version's payload to the next version's.
# Schema 1 is the first published version, so there is nothing to upcast yet; a change to a
# payload adds an entry here and a golden ledger of the old version under tests/data/.
UPCASTERS: Mapping[tuple[str, int], Upcaster] = {}


def upcast(
    type_name: str,
    version: int,
    payload: dict[str, Any],
    upcasters: Mapping[tuple[str, int], Upcaster] = UPCASTERS,
) -> dict[str, Any]:
    """Return `payload` rewritten from `version` to the current schema of `type_name`."""
    current = PAYLOAD_TYPES[type_name].SCHEMA
    if version > current:
        raise ValueError(
            f"{type_name} has schema {version}, newer than this tune-ledger knows ({current}); "
            "upgrade tune-ledger"
        )
    while version < current:
        step = upcasters.get((type_name, version))
        if step is None:
            raise ValueError(f"no upcaster for {type_name} schema {version}")
        payload = step(payload)
        version += 1
    return payload
