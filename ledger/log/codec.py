"""Canonical JSON and content ids: the one byte format that is hashed, compared and committed."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import orjson

# orjson parses ~3x faster than json and gives the same values (see README); it only parses:
# the committed bytes are encoded by the standard library (`canonical_json`).
loads: Callable[[bytes | str], Any] = orjson.loads


ID_HEX = 32
# Every line starts with this prefix because "id" sorts before every other envelope key;
# that lets replay verify a content id from the raw bytes without re-encoding the record.
ID_PREFIX = b'{"id":"'
ID_END = len(ID_PREFIX) + ID_HEX
BODY_START = ID_END + 2  # where the record goes on: after the id's closing quote and comma


def canonical_json(value: Any) -> str:
    """Encode `value` canonically: sorted keys, no spaces, UTF-8 text, no NaN or infinity."""
    return _CANONICAL.encode(value)


def sorted_json(value: Any) -> str:
    """JSON with sorted keys, for in-memory keys only (orjson's floats may be spelled unlike
    the canonical encoding's): fast, and equal for equal JSON values."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        pass
    # numpy scalars or int keys: first make them the plain data they are stored as, so a
    # value has one key whether it was given or read back; what orjson cannot encode at all
    # (integers beyond 64 bits) takes the canonical encoding, again one key per value.
    plain = loads(canonical_json(value))
    try:
        return orjson.dumps(plain, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        return canonical_json(plain)


def _plain_scalar(value: Any) -> Any:
    # numpy scalars (np.float32, np.int64, ...) arrive where callers pass measurement arrays;
    # they become the equal Python number. Checked by duck type so numpy is not imported here.
    if hasattr(value, "dtype") and hasattr(value, "item") and getattr(value, "shape", None) == ():
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON data")


# Only the standard library encodes, so the committed bytes never depend on an optional
# package: orjson and json format some floats differently (1e+16 vs 1e16). One encoder for
# every call (json.dumps with options builds a new one each time).
_CANONICAL = json.JSONEncoder(
    sort_keys=True,
    separators=(",", ":"),
    ensure_ascii=False,
    allow_nan=False,
    default=_plain_scalar,
)


def digest(data: bytes) -> str:
    """The sha256 hex digest of `data`, the one content hash used everywhere."""
    return hashlib.sha256(data).hexdigest()


def content_id(body: str) -> str:
    """The content id of a record whose canonical encoding without its id is `body`."""
    return digest(body.encode("utf-8"))[:ID_HEX]


def encode_line(record_without_id: dict[str, Any]) -> tuple[str, bytes]:
    """Return (id, line bytes with trailing newline) for a record given without its id."""
    if "id" in record_without_id:
        raise ValueError("the record must not carry an id yet")
    encoded = canonical_json(record_without_id).encode("utf-8")
    event_id = digest(encoded)[:ID_HEX]
    return event_id, b'{"id":"' + event_id.encode("ascii") + b'",' + encoded[1:] + b"\n"


def id_of_line(line: bytes) -> str | None:
    """The id a line (without its newline) claims if its bytes hash to it, else None."""
    if len(line) <= BODY_START:
        return None
    actual = hashlib.sha256(b"{" + line[BODY_START:]).hexdigest()[:ID_HEX]
    # The line must start with exactly `{"id":"<that id>",`: the hash covers everything after.
    return actual if line.startswith(f'{{"id":"{actual}",'.encode()) else None


def is_canonical_line(line: bytes) -> bool:
    """True when a line (without its newline) is the canonical encoding of what it holds."""
    try:
        record = loads(line)
    except ValueError:
        return False
    if not isinstance(record, dict) or "id" not in record:
        return False
    event_id = record.pop("id")
    try:
        again_id, again = encode_line(record)
    except (TypeError, ValueError):
        return False
    return again == line + b"\n" and again_id == event_id
