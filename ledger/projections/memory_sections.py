"""The bodies of MEMORY.md's managed sections, rendered from the replayed state (DESIGN §4).

`render_sections` is a pure function of the state and the effective policy: one body per
section, LF line ends. Output is deterministic and bounded: long lists show their most recent
rows and summarise the rest, pointing at `tune-ledger log`. Putting the bodies into the file,
under a header that records where they came from, is `memory_file`'s part.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ledger.domain.state import State
from ledger.projections.memory_activation import render_activation
from ledger.projections.memory_history import render_adopted, render_failed, render_history
from ledger.projections.memory_layout import op_name
from ledger.projections.memory_status import render_status
from ledger.projections.memory_target import render_target_sheet
from ledger.projections.timeline import steps


def render_sections(state: State, policy: Mapping[str, Any]) -> dict[str, str]:
    """The bodies of the managed sections (all but the header) for `state`, LF line ends."""
    op = op_name(state.op)
    walk = steps(state)
    bodies = {
        "activation": render_activation(state, op),
        "target-sheet": render_target_sheet(state, op),
        "status": render_status(state, policy, op),
        "adopted": render_adopted(state, op, walk),
        "failed": render_failed(op, walk),
        "history": render_history(state, op, walk),
    }
    return {name: _ending(body) for name, body in bodies.items()}


def _ending(body: str) -> str:
    return body.rstrip("\n") + "\n"
