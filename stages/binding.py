"""R11 Binding: a measurement counts only for the config and implementation it ran.

A verifier's result names the config it measured and the digest of the kernel file it ran.
Both are compared with what the measurement is recorded for (an attempt, or the target
sheet's baseline), after the manifest's knob defaults are filled in on both sides, so
`{}` and the defaults spelt out are one config and `128.0` is `128`. A result that names
neither is not bound: it is recorded with the weaker provenance "unbound".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ledger.domain.configs import filled
from ledger.domain.keys import knob_defaults
from ledger.domain.state import Attempt, State
from ledger.log import codec


def binding_problem(
    *,
    what: str,
    expected_config: Mapping[str, Any],
    expected_digest: str | None,
    measured_config: Mapping[str, Any] | None,
    measured_digest: str | None,
    defaults: Mapping[str, Any],
) -> str | None:
    """Why a result cannot be recorded for `what` (R11), or None when it is bound to it."""
    if measured_config is not None:
        want, got = filled(expected_config, defaults), filled(measured_config, defaults)
        if want != got:
            differ = sorted(k for k in set(want) | set(got) if want.get(k) != got.get(k))
            shown = ", ".join(
                f"{k}: measured {_json(got.get(k))}, expected {_json(want.get(k))}" for k in differ
            )
            return f"the verifier measured another config than {what}'s ({shown})"
    if None not in (measured_digest, expected_digest) and measured_digest != expected_digest:
        return (
            f"the verifier ran implementation {str(measured_digest)[:12]}, but {what} is "
            f"bound to implementation {str(expected_digest)[:12]}"
        )
    return None


def _json(value: Any) -> str:
    return "unset" if value is None else codec.canonical_json(value)


def best_impl_digest(state: State) -> str | None:
    """The digest of the implementation the best was measured with (R6: start from the best)."""
    for attempt_id in reversed(state.adopted):
        digest = state.attempts[attempt_id].impl_digest
        if digest is not None:
            return digest
    return state.activation_digest


def expected_impl_digest(state: State, attempt: Attempt) -> str | None:
    """The implementation an attempt runs: its own (algorithm changes) or the best's."""
    return attempt.impl_digest or best_impl_digest(state)


def kernel_of(state: State, attempt: Attempt) -> str | None:
    """The implementation an attempt ran: its own (an algorithm change), else the best's when
    it started, the kernel of the latest adopted algorithm change before it (R6: attempts
    start from the best, one at a time), else the activated one."""
    if attempt.impl_digest is not None:
        return attempt.impl_digest
    for adopted_id in reversed(state.adopted):
        adopted = state.attempts[adopted_id]
        if adopted.seq < attempt.seq and adopted.impl_digest is not None:
            return adopted.impl_digest
    return state.activation_digest


def attempt_binding_problem(
    state: State,
    attempt: Attempt,
    measured_config: Mapping[str, Any] | None,
    measured_digest: str | None,
    defaults: Mapping[str, Any] | None = None,
) -> str | None:
    """Why a measurement cannot be recorded for `attempt` (R11), or None; `defaults` are
    the recorded manifest's unless given (a manifest about to be recorded)."""
    return binding_problem(
        what=f"attempt {attempt.id}",
        expected_config=attempt.config,
        expected_digest=expected_impl_digest(state, attempt),
        measured_config=measured_config,
        measured_digest=measured_digest,
        defaults=knob_defaults(state) if defaults is None else defaults,
    )
