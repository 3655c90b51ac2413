"""The stage machines: pure deciders over replayed state, one module per protocol concern.

`decide(state, command)` returns a `Decision` (the events to append, and warnings) or a
`Refusal` naming its rule; `allowed(state)` lists the protocol steps allowed next.
"""

from __future__ import annotations

from stages.allowed import ALWAYS, COMMAND_NAMES, InFlight, allowed, command_name, in_flight
from stages.alternates import alternates
from stages.decide import decide
from stages.outcome import Decision, Result
from stages.policy import DEFAULT_POLICY, effective_policy
from stages.refusal import Refusal
from stages.verdict import Comparison, compute_verdict

__all__ = [
    "ALWAYS",
    "COMMAND_NAMES",
    "DEFAULT_POLICY",
    "Comparison",
    "Decision",
    "InFlight",
    "Refusal",
    "Result",
    "allowed",
    "alternates",
    "command_name",
    "compute_verdict",
    "decide",
    "effective_policy",
    "in_flight",
]
