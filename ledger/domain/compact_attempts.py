"""Attempts held compactly before a state is kept on disk, so a restored state is small.

Each attempt's config and metrics are parsed from its own line into a dict of their own, and
a mutation repeats every knob of the best but one: ~1 KB per attempt, 30 MB of a 32k-attempt
state, restored whole by every command that starts from the state snapshot
(ledger/shell/state_snapshot.py). Before a snapshot is written:

- each attempt's config is held as its JSON text: the very string object that keys the
  config in `measured_configs` (R9) when the two texts are equal (the config's keys in order,
  no knob default filled in), else a text of its own; its metrics likewise;
- each word the attempts repeat (kind, stage, point, knob, prior, verdict, failure, the
  origin of a measurement; parsed anew from each line: ~11 MB at 32k attempts) and each
  value a mutated knob or a detail repeats becomes one object, and the best an attempt was
  compared with is named by that attempt's own id string.

Done here, when a snapshot is written (~0.2 s at 32k attempts replayed whole), not in the fold: a
replay then pays nothing for it, and only a restored state, which every command after the
first starts from, needs to be small.

`Attempt.config` and `Measurement.metrics` decode the text on each read: configs are values
throughout the code (nothing edits one in place), so a fresh dict reads as the old one did.
The text is orjson's, which reads back the same keys in the same order and the same numbers
of the same types (`1`, `1.0`, `true`, `-0.0` stay apart); a value it cannot write (not
JSON data: a state built in memory) stays a dict.
"""

from __future__ import annotations

from typing import Any

import orjson

from ledger.domain.state import State

_dumps = orjson.dumps


def compact_attempts(state: State) -> None:
    """Hold every attempt's config and metrics as JSON text and share repeated values, in
    place (see the module docstring)."""
    key_of = {measured_by: key for key, measured_by in state.measured_configs.items()}
    seen: dict[Any, Any] = {}
    word = seen.setdefault  # for str or None: the first equal one seen
    attempts = state.attempts
    for attempt in attempts.values():
        attempt.kind = word(attempt.kind, attempt.kind)
        attempt.stage = word(attempt.stage, attempt.stage)
        attempt.point = word(attempt.point, attempt.point)
        attempt.param = word(attempt.param, attempt.param)
        attempt.prior = word(attempt.prior, attempt.prior)
        attempt.verdict = word(attempt.verdict, attempt.verdict)
        attempt.failure = word(attempt.failure, attempt.failure)
        best = attempts.get(attempt.compared_best) if attempt.compared_best else None
        if best is not None:
            attempt.compared_best = best.id
        config = attempt._config  # as held: `config` would decode a text
        text = _text(config) if type(config) is dict else config
        if type(text) is str:
            # Already text when restored from a snapshot while it was pending: it is linked
            # to its key once measured.
            key = key_of.get(attempt.id)
            if text is not config or (key is not None and text is not key):
                attempt.hold_config_text(key if key == text else text)
        if attempt.value is not None:
            attempt.value = _shared(seen, attempt.value)
        if attempt.detail:  # a failure's or abandon's reason, often the same words
            attempt.detail = _shared(seen, attempt.detail)
        measurement = attempt.measurement
        if measurement is None:
            continue
        measurement.origin_level = word(measurement.origin_level, measurement.origin_level)
        if type(measurement._metrics) is dict:
            text = _text(measurement._metrics)
            if text is not None:
                measurement.hold_metrics_text(word(text, text))


def _text(value: dict[str, Any]) -> str | None:
    try:
        return str(_dumps(value), "utf-8")
    except TypeError:  # orjson's JSONEncodeError is a TypeError
        return None


def _shared(seen: dict[Any, Any], value: Any) -> Any:
    """The first value seen equal to `value` (by JSON text and type), or `value` itself.

    Only strings, lists and dicts: a pickle writes every number anew (it keeps no record of
    the ints and floats it wrote), so sharing them would not outlast the snapshot."""
    kind = type(value)
    if kind is str:
        key: Any = value
    elif kind is list or kind is dict:
        try:
            key = (kind, _dumps(value))
        except TypeError:
            return value  # not a JSON value (a state built in memory): left as it is
    else:
        return value
    return seen.setdefault(key, value)
