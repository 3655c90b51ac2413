"""Idempotency keys (DESIGN §5): a command retried with the key it was first given returns what
the first one appended, matched by a digest of the request; a key reused for another request is
bad input."""

from __future__ import annotations

from collections.abc import Sequence

from ledger.domain.state import State
from ledger.errors import BadInput, HandBack
from ledger.log import codec
from ledger.log.record import Event, converter

# Written by the store while appending a keyed command, not by the command itself.
_NOT_THE_COMMANDS = frozenset({"ledger.repaired", "ledger.newline_restored"})


def request_digest(command: object) -> str:
    """A digest of a command's type and arguments, to match retried idempotency keys."""
    body = {"command": type(command).__name__, "args": converter().unstructure(command)}
    return codec.digest(codec.canonical_json(body).encode("utf-8"))[:32]


def earlier_events(state: State, key: str, request: str) -> tuple[Event, ...]:
    """The events an earlier command with this idempotency key appended (none: a new key).

    Raises BadInput when the key was used for a different request, and the recorded hand-back
    again when the original command was a failed activation."""
    found = _events_for_key(state.keyed.get(key, ()), key, request)
    if found:
        _raise_recorded_refusal(found, state)
    return found


def _raise_recorded_refusal(events: Sequence[Event], state: State) -> None:
    """A retried failed activation fails again: its hand-back is the original result (R1)."""
    from stages.allowed import allowed

    failed = next((e for e in events if e.type == "activation.failed"), None)
    if failed is None:
        return
    problems = "; ".join(failed.data.get("problems", ())) or "activation failed"
    raise HandBack(
        f"activation failed: {problems}",
        rule="R1",
        blocking=problems,
        hint=f"hand back to {failed.data.get('handed_back_to', 'the orchestrator')}: fix "
        "accuracy, record passing evidence for the current implementation, then activate",
        allowed=allowed(state),
        details={"replayed": True},
    )


def _events_for_key(events: Sequence[Event], key: str, request: str) -> tuple[Event, ...]:
    found = tuple(
        e for e in events if e.provenance.get("key") == key and e.type not in _NOT_THE_COMMANDS
    )
    if found and found[0].provenance.get("request") != request:
        raise BadInput(
            f"idempotency key {key!r} was used before for a different command",
            hint="use a new key for a new command; reuse a key only to retry the same command",
        )
    return found
