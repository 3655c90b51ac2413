"""Turning command-line text into validated values (exit 2 with a clear message otherwise)."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ledger.domain.hints import Fill, arg
from ledger.domain.units import parse_time_us
from ledger.errors import BadInput
from ledger.log import codec, safe_files
from ledger.schema.events import OutputCheck

_TRUE = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def parse_json_value(text: str, what: str) -> Any:
    """Parse a JSON value given on the command line; NaN and infinities are refused."""
    try:
        value = json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_unique_keys)
    except ValueError as e:
        raise BadInput(
            f"{what} is not valid JSON: {text!r} ({e})",
            hint=_JSON_HINTS.get(
                what,
                'give a JSON value: a number, true/false, "text" '
                "(quoted), [a list] or {an object}; quote it for the shell",
            ),
        ) from e
    return value


_JSON_HINTS = {
    "--config": "quote JSON for the shell, e.g. --config '{\"vec_tile_shape\": [1, 32, 1, 256]}'",
    "--set": "VALUE is JSON: --set vec_tile_shape=[1,32,1,256], --set stitch=64, "
    "--set mode='\"fast\"' (strings in double quotes)",
}


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # JSON leaves repeated keys to the reader; "the last one wins" would silently drop one.
    value = dict(pairs)
    if len(value) != len(pairs):
        repeated = sorted({k for k, _ in pairs if sum(1 for j, _ in pairs if j == k) > 1})
        raise ValueError(f"key {', '.join(map(repr, repeated))} repeats in one object")
    return value


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


def parse_json_object(text: str, what: str) -> dict[str, Any]:
    """Parse a JSON object (a config)."""
    value = parse_json_value(text, what)
    if not isinstance(value, dict):
        raise BadInput(
            f"{what} must be a JSON object, got {text!r}",
            hint='e.g. {"vec_tile_shape": [1, 32, 1, 256]}',
        )
    return value


def split_assignment(text: str, what: str) -> tuple[str, str]:
    """Split NAME=VALUE; the name must be non-empty."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise BadInput(f"{what} {text!r} is not NAME=VALUE", hint=f"e.g. {what} y=true")
    return name.strip(), value.strip()


def parse_bool(text: str, what: str) -> bool:
    """Parse true/false (also 1/0, yes/no)."""
    try:
        return _TRUE[text.lower()]
    except KeyError:
        raise BadInput(
            f"{what} must be true or false, got {text!r}",
            hint=f"e.g. {arg('output', ['y=true'])} (also 1/0, yes/no)",
        ) from None


def parse_float(text: str, what: str) -> float:
    """Parse a finite number."""
    try:
        value = float(text)
    except ValueError:
        raise BadInput(f"{what} must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise BadInput(f"{what} must be finite, got {text!r}", rule="R11")
    return value


def parse_percent(text: str | None, what: str) -> float | None:
    """Parse a percentage within [0, 100] (R11), or None."""
    if text is None:
        return None
    value = parse_float(text, what)
    if not 0 <= value <= 100:
        raise BadInput(f"{what} must be within [0, 100], got {text!r}", rule="R11")
    return value


def parse_seconds(text: str | None, what: str) -> float | None:
    """Parse a positive, finite number of seconds (a wall-time limit), or None."""
    if text is None:
        return None
    value = parse_float(text, what)
    if value <= 0:
        raise BadInput(f"{what} must be > 0 seconds, got {text!r}")
    return value


def parse_outputs(assignments: Iterable[str], max_diffs: Iterable[str]) -> tuple[OutputCheck, ...]:
    """Build output checks from `--output NAME=true|false` and `--max-diff NAME=X`."""
    closes: dict[str, bool] = {}
    for text in assignments:
        name, value = split_assignment(text, "--output")
        if name in closes:
            raise BadInput(
                f"output {name!r} is given twice",
                hint=f"give each output once: {arg('output', [Fill('NAME=true|false')])}",
            )
        closes[name] = parse_bool(value, f"--output {name}")
    diffs: dict[str, float] = {}
    for text in max_diffs:
        name, value = split_assignment(text, "--max-diff")
        if name not in closes:
            raise BadInput(
                f"--max-diff names {name!r}, which no --output gives",
                hint=f"add {arg('output', [f'{name}=true|false'])}, or fix the name",
            )
        diffs[name] = parse_float(value, f"--max-diff {name}")
    if not closes:
        raise BadInput(
            "no outputs given",
            hint=f"give {arg('output', [Fill('NAME=true|false')])} for every output",
        )
    return tuple(
        OutputCheck(name=n, all_close=c, max_diff=diffs.get(n)) for n, c in sorted(closes.items())
    )


def outputs_from_document(doc: Any, source: str) -> tuple[OutputCheck, ...]:
    """Read `outputs: [{name, all_close, max_diff}]` from a measurement or evidence document."""
    if not isinstance(doc, dict) or not isinstance(doc.get("outputs"), list):
        raise BadInput(f"{source} has no list 'outputs' of {{name, all_close, max_diff}}")
    checks = []
    for item in doc["outputs"]:
        try:
            all_close = item["all_close"]
            if not isinstance(all_close, bool):  # "false" must not count as true
                raise TypeError(f"all_close must be true or false, got {all_close!r}")
            checks.append(
                OutputCheck(
                    name=str(item["name"]), all_close=all_close, max_diff=item.get("max_diff")
                )
            )
        except (KeyError, TypeError, ValueError) as e:
            raise BadInput(
                f"{source}: bad output entry {item!r} ({e})",
                hint='each output is {"name": ..., "all_close": true|false, "max_diff": number}',
            ) from e
    if not checks:
        raise BadInput(f"{source} lists no outputs")
    return tuple(checks)


def parse_times(texts: Iterable[str]) -> tuple[float, ...]:
    """Parse repeated --time values into µs."""
    times = tuple(parse_time_us(t, arg("time")) for t in texts)
    if not times:
        raise BadInput(
            f"no {arg('time')} given",
            hint=f"give {arg('time', [Fill('TIME')])} (one per sample for several samples)",
        )
    return times


def read_json_file(path: str) -> tuple[Any, str]:
    """Read a JSON file (a regular file, bounded: ledger/log/safe_files.py); return its value
    and the digest of its bytes."""
    try:
        data = safe_files.read_bytes(path, limit=safe_files.JSON_BYTES)
    except OSError as e:
        raise BadInput(f"cannot read {path}: {e.strerror}") from e
    try:
        return codec.loads(data), codec.digest(data)
    except ValueError as e:
        raise BadInput(f"{path} is not valid JSON ({e})") from e


def file_digest(path: Path, root: Path | None = None) -> str:
    """sha256 of a file's bytes (binds evidence to an implementation, R1): a regular file,
    bounded; with `root`, the op's own file, whose links may not leave the root (safe_files)."""
    try:
        return safe_files.digest(path, limit=safe_files.TEXT_BYTES, root=root)
    except OSError as e:
        raise BadInput(
            f"cannot read the implementation {path}: {e.strerror}",
            hint=f"pass {arg('impl', Fill('PATH'))}, the kernel file under tuning (relative to the "
            "root)",
        ) from e


def recorded_path(path: Path, root: Path) -> str:
    """How a file is named in an event: relative to the root when it lies under it (nothing
    machine-specific is recorded), else as given."""
    absolute, base = os.path.abspath(path), os.path.abspath(root)
    if os.path.commonpath([absolute, base]) == base:
        return Path(os.path.relpath(absolute, base)).as_posix()
    return os.fspath(path)


def parse_shape(text: str, what: str) -> str:
    """A tensor shape, as SPEC.md writes it (`[32, 32, 1, 256]`) or as `32x32x1x256`, in the
    one form the ledger records: the JSON list."""
    body = text.strip()
    try:
        if body.startswith("["):
            dims = json.loads(body)
        else:
            dims = [int(d) for d in body.replace("×", "x").split("x")]
    except ValueError as e:
        raise BadInput(
            f"{what} {text!r} is not a shape",
            hint="give a JSON list of positive ints, e.g. [32, 32, 1, 256], or 32x32x1x256",
        ) from e
    if (
        not isinstance(dims, list)
        or not dims
        or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in dims)
    ):
        raise BadInput(
            f"{what} {text!r} is not a list of positive ints",
            hint="give a JSON list of positive ints, e.g. [32, 32, 1, 256], or 32x32x1x256",
        )
    return shape_text(dims)


def shape_text(dims: Iterable[int]) -> str:
    """The recorded form of a shape: `[32, 32, 1, 256]`, as SPEC.md's p0_shapes write it."""
    return "[" + ", ".join(str(int(d)) for d in dims) + "]"
