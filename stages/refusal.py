"""A decider's "no": the rule, the blocking fact, what to do next, and the exit-code class."""

from __future__ import annotations

from typing import Literal

from attrs import frozen

from ledger.errors import HandBack, LedgerError, RetryRefusal, RuleRefusal, StoppedRefusal
from ledger.schema.events import Payload

RefusalKind = Literal["rule", "retry", "hand-back", "stopped"]

_ERRORS: dict[str, type[LedgerError]] = {
    "rule": RuleRefusal,
    "retry": RetryRefusal,
    "hand-back": HandBack,
    "stopped": StoppedRefusal,
}


@frozen
class Refusal:
    """Why a command may not run now. A hand-back still records `events` (the failed check)."""

    rule: str
    message: str
    blocking: str
    next_step: str
    allowed: tuple[str, ...] = ()
    kind: RefusalKind = "rule"
    events: tuple[Payload, ...] = ()

    def to_error(self) -> LedgerError:
        """The LedgerError the shell raises for this refusal (exit 3, 4, 5 or 6)."""
        return _ERRORS[self.kind](
            self.message,
            rule=self.rule,
            blocking=self.blocking,
            hint=self.next_step,
            allowed=self.allowed,
        )
