"""The keys replay files things under: an attempt's id, and a config's measured-config key (R9)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ledger.domain.configs import canonical_config
from ledger.domain.state import State
from ledger.log import codec

ATTEMPT_ID_LEN = 12

# JSON text that may hold a float: orjson writes every float with a "." or an exponent
# ("e+16", "e-07") right after a digit. Text with no ".", no "E" and no digit followed by "e"
# holds ints only and is canonical already. Three cheap tests rather than one regex
# `\d[.eE]`: a pattern that starts with a literal is searched for that character first,
# which cuts the test from 1.5 to 0.25 µs per config (replay makes one per measured attempt).
_DIGIT_E = re.compile(r"e(?<=[0-9]e)")


def _maybe_float(text: str) -> bool:
    """True when JSON text from orjson may hold a float (false positives only cost time)."""
    return "." in text or "E" in text or _DIGIT_E.search(text) is not None


def attempt_id(event_id: str) -> str:
    """An attempt's id: the first 12 hex characters of its attempt.started event id."""
    return event_id[:ATTEMPT_ID_LEN]


def config_key(config: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> str:
    """The key under which a config counts as measured (R9): equal by value, equal keys.

    Numbers are compared by value (`128.0`, `1.28e2` and `128` are one; `-0.0` is `0`), and
    each knob default the config leaves out is filled in (the manifest's), so a config that
    spells a default out and one that omits it share a key. Only ever compared with other
    keys made here, in memory: it is never written, so old ledgers replay unchanged.
    """
    filled = {**defaults, **config} if defaults else config
    text = codec.sorted_json(filled)
    # Replay makes one key per measured attempt: the fast path keeps it at orjson's speed
    # (`_maybe_float`, inlined: a call is a tenth of the key's cost).
    if "." in text or "E" in text or _DIGIT_E.search(text) is not None:
        return codec.sorted_json(canonical_config(filled))
    return text


def measured_key(state: State, config: Mapping[str, Any]) -> str:
    """`config_key` with the knob defaults of the manifest in use filled in (R9)."""
    manifest = state.manifest
    return config_key(config) if manifest is None else config_key(config, manifest.defaults())


def rekey_measured(state: State) -> None:
    """File every measured config again under the manifest now in use (R9).

    A manifest recorded after attempts were measured changes which defaults are filled in;
    the keys follow, in the order the configs were measured (a later one wins a shared key).
    """
    order = list(state.measured_configs.values())
    state.measured_configs.clear()
    for measured_by in order:
        if measured_by == "baseline":
            config = state.baseline_config
        else:
            config = state.attempts[measured_by].config
        state.measured_configs[measured_key(state, config)] = measured_by
