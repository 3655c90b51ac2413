"""Which kernel each attempt ran, as the ledger recorded it (issue 27.6): pure, from events.

A kernel is named by the sha256 of the implementation file's bytes. An attempt runs the
kernel its measurement is bound to (the verifier's `impl_digest`, R11); without a binding
(a result typed in), the one the rules expected it to run when it started: its own for an
algorithm change, else the best's (stages/binding.py). The bytes behind each digest are kept
in the op folder by ledger/shell/kernels.py; this module only names them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from ledger.domain.keys import attempt_id
from ledger.domain.replay import evolve
from ledger.domain.state import State
from ledger.log.record import Event
from stages.binding import expected_impl_digest

DIGEST = re.compile(r"[0-9a-f]{64}")
# The events that bind an implementation: evidence names the file it is for, an algorithm
# change its new kernel, a measurement the kernel the verifier says it ran.
_BINDING_TYPES = ("evidence.compare", "evidence.layout", "attempt.started", "attempt.measured")


def attempt_kernels(events: Iterable[Event]) -> dict[str, str]:
    """Each attempt's kernel digest (attempts with none known are left out)."""
    state = State()
    kernels: dict[str, str] = {}
    for event in events:
        if event.type == "attempt.measured":
            attempt = state.attempts.get(event.data.get("attempt", ""))
            bound = _binding_digest(event.data)
            if bound is None and attempt is not None:
                bound = expected_impl_digest(state, attempt)
            if bound is not None and attempt is not None:
                kernels[attempt.id] = bound
        evolve(state, event)
        if event.type == "attempt.started":
            started = state.attempts.get(attempt_id(event.id))
            if started is not None:
                expected = expected_impl_digest(state, started)
                if expected is not None:
                    kernels.setdefault(started.id, expected)
    return kernels


def bound_digests(events: Sequence[Event], before: State) -> list[str]:
    """The kernel digests the new `events` bind, decided on the state `before` them (a
    measurement without a binding binds the kernel its attempt was expected to run)."""
    found: list[str] = []
    for event in events:
        if event.type not in _BINDING_TYPES:
            continue
        digest = _binding_digest(event.data) or event.data.get("impl_digest")
        if digest is None and event.type == "attempt.measured":
            attempt = before.attempts.get(event.data.get("attempt", ""))
            digest = None if attempt is None else expected_impl_digest(before, attempt)
        if isinstance(digest, str) and DIGEST.fullmatch(digest) and digest not in found:
            found.append(digest)
    return found


def _binding_digest(data: dict[str, Any]) -> str | None:
    binding = data.get("binding")
    digest = binding.get("impl_digest") if isinstance(binding, dict) else None
    return digest if isinstance(digest, str) else None


def kernel_diff(a: str, b: str, a_name: tuple[str, str], b_name: tuple[str, str]) -> list[str]:
    """The unified diff of two kernels' text, each side named by its attempt and digest: what
    `kernel diff` prints and the dashboard shows."""
    import difflib  # only these two readers need it, not every append

    return list(
        difflib.unified_diff(
            a.splitlines(keepends=True),
            b.splitlines(keepends=True),
            fromfile=f"{a_name[0]} ({a_name[1][:12]})",
            tofile=f"{b_name[0]} ({b_name[1][:12]})",
        )
    )
