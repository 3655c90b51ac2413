"""The keys replay files things under: an attempt's id, and a config's measured-config key (R9)
with the knob defaults of the manifest in use."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ledger.domain.configs import config_key
from ledger.domain.state import State

ATTEMPT_ID_LEN = 12


def attempt_id(event_id: str) -> str:
    """An attempt's id: the first 12 hex characters of its attempt.started event id."""
    return event_id[:ATTEMPT_ID_LEN]


def knob_defaults(state: State) -> dict[str, Any]:
    """The knob defaults of the manifest in use (none without a manifest)."""
    return state.manifest.defaults() if state.manifest is not None else {}


def measured_key(state: State, config: Mapping[str, Any]) -> str:
    """`config_key` with the knob defaults of the manifest in use filled in (R9)."""
    return config_key(config, knob_defaults(state))


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
