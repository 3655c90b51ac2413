"""The device of a measurement (issue 29): how two are compared and how one is named.

A measurement names its device as `{run_mode, soc, id, cann, driver}` (ledger/schema/values.py
`Device`, or that object as plain data in the replayed state); None is a device unknown. Two
measurements are comparable when run mode, part, CANN and driver agree: the device's number is
left out, since the NPUs of one host are the same part (R8). Unknown compares only with unknown.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# The fields that decide whether two measurements may be compared (not `id`, see above).
COMPARED = ("run_mode", "soc", "cann", "driver")
FIELDS = ("run_mode", "soc", "id", "cann", "driver")


def plain(device: Any) -> dict[str, Any] | None:
    """A device (a `Device`, its plain data, or None) as plain data with every field."""
    if device is None:
        return None
    if isinstance(device, Mapping):
        return {name: device.get(name) for name in FIELDS}
    return {name: getattr(device, name, None) for name in FIELDS}


def comparable(device: Any) -> tuple[Any, ...] | None:
    """What two measurements' devices must share to be compared; None: device unknown."""
    data = plain(device)
    return None if data is None else tuple(data[name] for name in COMPARED)


def same_kind(first: Any, second: Any) -> bool:
    """True when a verdict may compare measurements made on these two devices (R8)."""
    return comparable(first) == comparable(second)


def label(device: Any) -> str:
    """A device in a few words: `npu Ascend910B3 #3 (CANN 8.0.RC3, driver 24.1.rc2)`,
    `sim (<the simulated part>)`, or `unknown`."""
    data = plain(device)
    if data is None:
        return "unknown"
    head = " ".join(
        str(part)
        for part in (
            data["run_mode"] or "?",
            data["soc"] if data["run_mode"] != "sim" else None,
            f"#{data['id']}" if data["id"] is not None else None,
        )
        if part
    )
    if data["run_mode"] == "sim":
        return f"{head} ({data['soc']})" if data["soc"] else head
    versions = [
        f"{name} {data[key]}"
        for name, key in (("CANN", "cann"), ("driver", "driver"))
        if data[key] is not None
    ]
    return f"{head} ({', '.join(versions)})" if versions else head


def differences(first: Any, second: Any) -> list[str]:
    """The compared fields on which two devices differ, as `field a != b` texts."""
    a, b = plain(first), plain(second)
    if a is None or b is None:
        return ["one device is unknown"] if (a is None) != (b is None) else []
    return [f"{name} {a[name]!r} != {b[name]!r}" for name in COMPARED if a[name] != b[name]]
