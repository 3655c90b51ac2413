"""What a decider returns: the events of an accepted command, or a Refusal naming its rule."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from attrs import frozen

from ledger.errors import BadInput
from ledger.log import codec
from ledger.schema.events import Payload
from stages.refusal import Refusal, RefusalKind

P = TypeVar("P")


@frozen
class Decision:
    """An accepted command: the events to append, and warnings for the caller (e.g. R7 policy)."""

    events: tuple[Payload, ...]
    warnings: tuple[str, ...] = ()


Result = Decision | Refusal


def accept(*events: Payload, warnings: Iterable[str] = ()) -> Decision:
    """A Decision appending `events`."""
    return Decision(events=tuple(events), warnings=tuple(warnings))


def refuse(
    rule: str, message: str, blocking: str, next_step: str, kind: RefusalKind = "rule"
) -> Refusal:
    """A Refusal; `decide` fills in the commands allowed instead."""
    return Refusal(rule=rule, message=message, blocking=blocking, next_step=next_step, kind=kind)


def plain(value: Any, what: str) -> Any:
    """`value` as it will read back from the ledger (tuples become lists); BadInput if not JSON."""
    try:
        return codec.loads(codec.canonical_json(value))
    except (TypeError, ValueError, OverflowError) as e:
        raise BadInput(f"{what} is not plain JSON data: {e}") from e


def build(factory: Callable[..., P], what: str, /, **fields: Any) -> P:
    """Construct a payload; a value the event refuses (R11) becomes BadInput (exit 2)."""
    try:
        return factory(**fields)
    except (TypeError, ValueError, OverflowError) as e:
        raise BadInput(f"invalid {what}: {e}") from e


def nonempty(text: Any, what: str) -> str:
    """`text` when it is non-blank text, else BadInput."""
    if not isinstance(text, str) or not text.strip():
        raise BadInput(f"{what} must be non-empty text, got {text!r}")
    return text
