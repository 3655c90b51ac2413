"""The stage machines: pure deciders over replayed state, one module per protocol concern.

`decide(state, command)` returns a `Decision` (the events to append, and warnings) or a
`Refusal` naming its rule; `allowed(state)` lists the protocol steps allowed next.

The names below are imported from their modules on first use: a process lives for one command,
and a read that needs only `stages.policy` (MEMORY.md's tables, `log`) must not import every
decider (the search, the R9 text comparison, the verdict). Three of them (`allowed`,
`alternates`, `decide`) share their name with their module; the package returns the function
even after that module was imported, as an eager `from stages.decide import decide` did.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stages.allowed import ALWAYS, COMMAND_NAMES, InFlight, allowed, command_name, in_flight
    from stages.alternates import alternates
    from stages.decide import decide
    from stages.outcome import Decision, Result
    from stages.policy import DEFAULT_POLICY, effective_policy
    from stages.refusal import Refusal
    from stages.verdict import Comparison, compute_verdict

_HOME = {
    "ALWAYS": "allowed",
    "COMMAND_NAMES": "allowed",
    "InFlight": "allowed",
    "allowed": "allowed",
    "command_name": "allowed",
    "in_flight": "allowed",
    "alternates": "alternates",
    "decide": "decide",
    "Decision": "outcome",
    "Result": "outcome",
    "DEFAULT_POLICY": "policy",
    "effective_policy": "policy",
    "Refusal": "refusal",
    "Comparison": "verdict",
    "compute_verdict": "verdict",
}
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
assert sorted(__all__) == sorted(_HOME)
_SHADOWED = ("allowed", "alternates", "decide")


def _load(name: str) -> Any:
    module = importlib.import_module(f"{__name__}.{_HOME[name]}")
    return getattr(module, name)


def _shadowed(name: str) -> property:
    """The function `name`, never its module of the same name (which the import system sets
    on the package when the module is first imported: that assignment is ignored)."""

    def get(_package: types.ModuleType) -> Any:
        return _load(name)

    def ignore(_package: types.ModuleType, _value: Any) -> None:
        pass

    return property(get, ignore)


class _Package(types.ModuleType):
    """This package, whose exported names are imported when first looked up."""

    allowed = _shadowed("allowed")
    alternates = _shadowed("alternates")
    decide = _shadowed("decide")

    def __getattr__(self, name: str) -> Any:
        if name not in _HOME:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = _load(name)
        setattr(self, name, value)
        return value

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *_HOME})


sys.modules[__name__].__class__ = _Package
