"""One object for each value the attempts' configs repeat, before a state is kept on disk.

Each attempt's config is parsed from its own line: a mutation repeats every knob of the best
but one, and each repeated list, nested dict and large int is a separate object (~750 bytes
per config, 24 MB of a 32k-attempt state). Replacing each value with the first equal one
seen makes the state snapshot (ledger/shell/state_snapshot.py) hold, and a restored state
keep, every distinct value once.

Configs are values throughout the code (the best's config is its attempt's own dict, a
mutation is `{**best, param: value}`): nothing edits one in place, so sharing their parts
changes no result. Equal means the same JSON text, so `1`, `1.0`, `true` and `-0.0`, `0.0`
stay apart (each prints as it was recorded).
"""

from __future__ import annotations

from typing import Any

import orjson

from ledger.domain.state import State

_dumps = orjson.dumps


def share_config_values(state: State) -> None:
    """Make equal values of the attempts' configs (and their mutated values and details) one
    object each, in place."""
    seen: dict[Any, Any] = {}
    for attempt in state.attempts.values():
        config = attempt.config
        for name, value in config.items():
            shared = _shared(seen, value)
            if shared is not value:
                config[name] = shared
        if attempt.value is not None:
            attempt.value = _shared(seen, attempt.value)
        if attempt.detail:  # a failure's or abandon's reason, often the same words
            attempt.detail = _shared(seen, attempt.detail)


def _shared(seen: dict[Any, Any], value: Any) -> Any:
    kind = type(value)
    if kind is str:
        key: Any = value
    elif kind is list or kind is dict or kind is float:
        try:
            key = (kind, _dumps(value))
        except orjson.JSONEncodeError:
            return value  # not a JSON value (a config built in memory): left as it is
    elif kind is int:
        if -5 <= value <= 256:
            return value  # the interpreter shares these already
        key = (kind, value)
    else:
        return value  # True, False, None: one object each already
    return seen.setdefault(key, value)
