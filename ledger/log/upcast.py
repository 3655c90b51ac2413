"""Upcasting: old schema versions of a payload are rewritten, on read, to the current one."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ledger.log.upcast_conflicts import conflict_resolved_1_to_2
from ledger.schema.events import PAYLOAD_TYPES

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]

# (type name, version) -> function from that version's payload to the next version's. A
# change to a payload adds an entry here and a golden ledger of the old version under
# tests/data/ (v1-merged.jsonl holds schema-1 conflict.resolved events).
UPCASTERS: Mapping[tuple[str, int], Upcaster] = {
    ("conflict.resolved", 1): conflict_resolved_1_to_2,
}


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
