"""One error root, one subclass per exit code of DESIGN §5; the CLI maps them to codes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class LedgerError(Exception):
    """Base of every error the ledger reports to a user; `code` is the process exit code."""

    code = 1
    kind = "error"

    def __init__(
        self,
        message: str,
        *,
        rule: str | None = None,
        blocking: str | None = None,
        allowed: Sequence[str] = (),
        hint: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.rule = rule
        self.blocking = blocking
        self.allowed = tuple(allowed)
        self.hint = hint
        self.details = dict(details or {})

    def to_json(self) -> dict[str, Any]:
        """The error as the one JSON object `--json` prints."""
        out: dict[str, Any] = {
            "error": self.message,
            "kind": self.kind,
            "rule": self.rule,
            "code": self.code,
        }
        if self.blocking is not None:
            out["blocking"] = self.blocking
        if self.allowed:
            out["allowed"] = list(self.allowed)
        if self.hint is not None:
            out["next"] = self.hint
        out.update(self.details)
        return out

    def human(self) -> str:
        """The error as lines of text for a terminal."""
        head = f"{self.rule}: {self.message}" if self.rule else self.message
        lines = [head]
        if self.blocking:
            lines.append(f"  blocked by: {self.blocking}")
        if self.hint:
            lines.append(f"  next: {self.hint}")
        if self.allowed:
            lines.append(f"  allowed now: {', '.join(self.allowed)}")
        return "\n".join(lines)


class BadInput(LedgerError):
    """Bad arguments or values (exit 2); nothing was written."""

    code = 2
    kind = "bad-input"


class RuleRefusal(LedgerError):
    """A protocol rule forbids the step (exit 3); nothing was written."""

    code = 3
    kind = "rule"


class RetryRefusal(LedgerError):
    """The step retries an idea already tried (exit 4, R9); nothing was written."""

    code = 4
    kind = "retry"


class HandBack(LedgerError):
    """Activation failed: hand back to the orchestrator (exit 5); the failed check was written."""

    code = 5
    kind = "hand-back"


class StoppedRefusal(LedgerError):
    """The campaign has stopped (exit 6, R10); nothing was written."""

    code = 6
    kind = "stopped"


class LedgerDamaged(LedgerError):
    """The ledger is damaged or was tampered with (exit 7); names file:line."""

    code = 7
    kind = "damaged"


class StorageError(LedgerError):
    """The file system refused a write (disk full, read-only, permission, file too large):
    exit 8; an append is atomic, so nothing of the command was written."""

    code = 8
    kind = "io-error"


class NotMeasured(LedgerError):
    """`audit --strict`: a decision rests on values the ledger did not measure with the op's
    declared verifier, or a guard is lowered (exit 9); nothing was written."""

    code = 9
    kind = "not-measured"


class RemeasureDisagrees(LedgerError):
    """`audit --remeasure`: the op's verifier, run again on a measured attempt's kept kernel
    and config, disagrees with what the ledger recorded beyond the noise band (exit 10);
    nothing was written."""

    code = 10
    kind = "remeasure-disagrees"


class Conflict(LedgerError):
    """Another writer appended first and the command's decision is stale (retry the command)."""

    code = 3
    kind = "conflict"


EXIT_CODES: dict[int, str] = {
    0: "done",
    1: "unexpected error (a bug)",
    2: "bad arguments or values",
    3: "refused by a protocol rule",
    4: "refused: retry of an idea already tried",
    5: "hand back to the orchestrator (activation failed)",
    6: "refused: the campaign has stopped",
    7: "the ledger is damaged or was tampered with",
    8: "the file system refused a write (disk full, read-only, permission)",
    9: "audit --strict: a decision rests on values not measured, or a guard is lowered",
    10: "a re-measurement disagrees with the ledger (audit --remeasure)",
}
