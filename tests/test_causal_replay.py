"""Audit's CausalReplay: each batch of a fork is decided on a State of its own (a State is an
accumulator owned by one replay, so none is shared between two branches)."""

from __future__ import annotations

from driver import PROVENANCE, in_point

from ledger.domain.replay import evolve, replay
from ledger.git.merge import CausalReplay
from ledger.log.record import Draft, Event, seal
from ledger.schema.events import NoteAdded
from ledger.shell.audit import batches


def _branch(trunk: list[Event], text: str) -> Event:
    """One note appended after the trunk's head, as a branch of the log would append it."""
    head = trunk[-1]
    event, _line = seal(
        Draft(payload=NoteAdded(text=text), provenance=PROVENANCE),
        (head.id,),
        head.lamport + 1,
        (0, 1),
    )
    return event


def test_the_branches_of_a_fork_never_share_a_state() -> None:
    """Folding one branch's batch leaves the state the other branch is decided on untouched."""
    trunk = in_point().events
    ours, theirs, third = (_branch(trunk, text) for text in ("ours", "theirs", "third"))
    causal = CausalReplay([*trunk, ours, theirs, third])
    for _index, batch in batches(trunk):
        state = causal.before(batch)
        for event in batch:
            evolve(state, event)
        causal.after(batch, state)
    seen = []
    for branch in (ours, theirs, third):
        state = causal.before([branch])
        assert state == replay(trunk), f"{branch.data['text']} starts from the trunk"
        assert all(state is not other for other in seen)
        evolve(state, branch)
        assert state.notes == [branch.data["text"]]
        seen.append(state)
