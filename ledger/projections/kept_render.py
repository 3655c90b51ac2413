"""Renderings kept in `State.derived` with the inputs they were rendered from.

A MEMORY.md section or table that reads a few fields of the state is a pure function of them:
kept under a key made of exactly those fields, it is rendered again only when one of them
changed, and a command that changes nothing it reads does not format it again (the warm MCP
server re-renders MEMORY.md after every step). Each caller names what its rendering reads in
its key; tests/test_kept_render.py renders every step of generated campaigns both ways.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from ledger.domain.state import State

_KEY = "kept-renderings"


def kept_render(state: State, name: str, key: Hashable, render: Callable[[], str]) -> str:
    """`render()`, or what it returned when last called for `name` with an equal `key`."""
    kept = state.derived.get(_KEY)
    if not isinstance(kept, dict):
        kept = state.derived[_KEY] = {}
    found = kept.get(name)
    if found is not None and found[0] == key:
        text: str = found[1]
        return text
    text = render()
    kept[name] = (key, text)
    return text
