"""A way forward in the caller's terms: one `Step` value, rendered as a CLI command line or as
an MCP tool call (issue 28.1).

A decider names the step it points to once, `Step("point close", op, name=..., reason=TEXT)`,
checked against `ACTIONS` (the step's arguments, by their MCP names). Hints stay text: a Step
formatted into one (`f"close it first ({step})"`) becomes a marker that carries the value,
and the output's edge (the CLI's printing, run for the CLI or for the MCP server) renders every
marker for its caller, so the same refusal reads `tune-ledger point close rms_norm tile
--reason TEXT` in a terminal and `point_close(op="rms_norm", name="tile", reason=TEXT)` over
MCP. Files written for people (MEMORY.md, the report) keep their own CLI wording.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any, Literal, NamedTuple

Caller = Literal["cli", "mcp"]

# Who the output is for: the MCP server sets "mcp" around each in-process command.
CALLER: ContextVar[Caller] = ContextVar("tune_ledger_caller", default="cli")


class Fill(str):
    """A value the caller fills in (TEXT, NAME…): printed as is, never quoted."""

    __slots__ = ()


TEXT = Fill("TEXT")
NAME = Fill("NAME")


class Action(NamedTuple):
    """One step as both callers spell it: the CLI's words and the MCP tool, the positional
    arguments (in order) and the options, by their MCP names; `flags` holds the CLI options
    whose name differs from `--` + the argument's name with dashes."""

    words: str
    tool: str
    positional: tuple[str, ...] = ("op",)
    options: tuple[str, ...] = ()
    flags: Mapping[str, str] = {}

    def flag(self, argument: str) -> str:
        """The CLI option of an argument."""
        return self.flags.get(argument, "--" + argument.replace("_", "-"))


def _action(
    words: str, positional: tuple[str, ...] = ("op",), options: str = "", **flags: str
) -> Action:
    return Action(words, words.replace(" ", "_").replace("-", "_"), positional,
                  tuple(options.split()), flags)  # fmt: skip


# The steps a hint may point to, by their CLI words (stages.allowed's names), with the
# arguments their MCP tools take (tests/test_mcp_end_to_end.py compares them with the server's).
ACTIONS: dict[str, Action] = {
    a.words: a
    for a in (
        _action("init"),
        _action("evidence compare", options="output max_diff from_json run from_spec python impl"),
        _action("evidence layout", options="exit_code run from_spec python impl"),
        _action("activate", options="impl"),
        _action(
            "target",
            options="baseline shape target target_source source_ref config tool "
            "util bubble run from_json from_spec metric cube_m python",
        ),
        _action("relax", options="what limit basis evidence"),
        _action("skill load", ("op", "name")),
        _action("skill unload", ("op", "name")),
        _action("stage enter", ("op", "name")),
        _action("stage exit", ("op", "name"), "reason user_stop hand_back"),
        _action("point open", ("op", "name"), "knob"),
        _action("point close", ("op", "name"), "reason not_applicable"),
        _action("candidate", options="config prior override_retry"),
        _action("try", options="change algorithm impl override_retry", change="--set"),
        _action("measure", ("op", "attempt"), "dry_run python"),
        _action(
            "verify",
            ("op", "attempt"),
            "output max_diff layout_exit time util bubble perf_dir from_json run timeout",
        ),
        _action("fail", ("op", "attempt"), "category detail"),
        _action("abandon", ("op", "attempt"), "reason"),
        _action("stop", options="reason"),
        _action("resume-campaign", options="reason"),
        _action("handback", options="summary"),
        _action("note", options="text"),
        _action("policy", ("op", "key", "value"), "reason"),
        _action("manifest"),
        _action("resolve", options="conflict resolution reason"),
        _action("status"),
        _action("resume"),
        _action("log", options="stage verdict failure limit attempt notes"),
        _action("priors", options="point keys count from_source ledgers stage no_builtin"),
        _action("conflicts"),
        _action("report"),
        _action("render"),
        _action("audit"),
        _action("check-op"),
        _action("kernel restore", options="attempt"),
    )
}


class Step:
    """One step to take next: an action of `ACTIONS` and its arguments (MCP names); a
    misnamed action or argument is a bug, raised where the hint is built."""

    __slots__ = ("action", "args")

    def __init__(self, action: str, op: Any = None, /, **args: Any) -> None:
        known = ACTIONS.get(action)
        if known is None:
            raise ValueError(f"no step {action!r} (known: {', '.join(ACTIONS)})")
        given = {k: v for k, v in {"op": op, **args}.items() if v is not None}
        unknown = sorted(set(given) - {*known.positional, *known.options})
        if unknown:
            raise ValueError(f"step {action!r} takes no argument {', '.join(unknown)}")
        self.action = action
        self.args: tuple[tuple[str, Any], ...] = tuple(given.items())

    def __repr__(self) -> str:
        return f"Step({self.action!r}, {dict(self.args)!r})"

    def __str__(self) -> str:
        """The step as a marker in a hint's text, rendered at the output's edge."""
        args = [[name, value, _is_fill(value)] for name, value in self.args]
        # ASCII: no value can hold the closing bracket, whatever text it carries.
        return _OPEN + json.dumps([self.action, args]) + _CLOSE

    def render(self, caller: Caller) -> str:
        """The step in the caller's terms."""
        return _render_mcp(self) if caller == "mcp" else _render_cli(self)


def arg(name: str, value: Any = None) -> str:
    """An argument of a step as a marker in a hint's text: `--override-retry REASON` for the
    CLI, `override_retry=REASON` over MCP (`change` is the CLI's `--set`)."""
    if not any(name in (*a.positional, *a.options) for a in ACTIONS.values()):
        raise ValueError(f"no step takes an argument {name!r}")
    fill = _is_fill(value)
    return _OPEN + json.dumps(["=arg", [[name, value, fill]]]) + _CLOSE


def named(words: str) -> str:
    """A step's name as a marker in a hint's text: `evidence compare` for the CLI,
    `evidence_compare` over MCP."""
    if words not in ACTIONS:
        raise ValueError(f"no step {words!r}")
    return _OPEN + json.dumps(["=name", [[words, None, False]]]) + _CLOSE


def _render_arg(name: str, value: Any, caller: Caller) -> str:
    if caller == "mcp":
        return name if value is None else f"{name}={_mcp_value(value)}"
    flag = "--set" if name == "change" else "--" + name.replace("_", "-")  # as `try` spells it
    return _cli_option(flag, name, value)


def _cli_option(flag: str, name: str, value: Any) -> str:
    """An option with its value; a list is the option repeated, except `limit`'s (one JSON)."""
    if value is None or value is True:
        return flag
    if isinstance(value, list) and name != "limit":
        return " ".join(f"{flag} {_cli_value(item)}" for item in value)
    return f"{flag} {_cli_value(value)}"


def _is_fill(value: Any) -> bool:
    """A placeholder, or a list of them (a repeated option's values to fill in)."""
    if isinstance(value, list):
        return bool(value) and all(isinstance(v, Fill) for v in value)
    return isinstance(value, Fill)


def _filled(value: Any) -> Any:
    return [Fill(v) for v in value] if isinstance(value, list) else Fill(value)


_OPEN, _CLOSE = "\u27e6step:", "\u27e7"
_MARKER = re.compile(re.escape(_OPEN) + r"(.*?)" + re.escape(_CLOSE))


def _cli_value(value: Any) -> str:
    if isinstance(value, Fill):
        return str(value)
    if isinstance(value, dict | list):
        return shlex.quote(json.dumps(value, sort_keys=True, separators=(",", ":")))
    return shlex.quote(str(value))


def _render_cli(step: Step) -> str:
    action = ACTIONS[step.action]
    args = dict(step.args)
    words = ["tune-ledger", action.words]
    words += [_cli_value(args[name]) for name in action.positional if name in args]
    words += [
        _cli_option(action.flag(name), name, value)
        for name, value in step.args
        if name not in action.positional and value is not False and value is not None
    ]
    return " ".join(words)


def _mcp_value(value: Any) -> str:
    if isinstance(value, Fill):
        return str(value)
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _render_mcp(step: Step) -> str:
    action = ACTIONS[step.action]
    args = ", ".join(f"{name}={_mcp_value(value)}" for name, value in step.args)
    return f"{action.tool}({args})"


def _rendered(match: re.Match[str], caller: Caller) -> str:
    """A marker in the caller's terms; text that only looks like one (a user's note quoting
    it, say) is left as it is."""
    try:
        return _rendered_step(match.group(1), caller)
    except (ValueError, TypeError, KeyError):
        return match.group(0)


def _rendered_step(marker: str, caller: Caller) -> str:
    action, args = json.loads(marker)
    given = {name: _filled(v) if fill else v for name, v, fill in args}
    if action == "=name":
        return step_name(next(iter(given)), caller)
    if action == "=arg":
        ((name, value),) = given.items()
        return _render_arg(name, value, caller)
    return Step(action, **given).render(caller)


def render_text(text: str, caller: Caller | None = None) -> str:
    """The text with every step marker rendered for the caller (default: the current one)."""
    if _OPEN not in text:
        return text
    who = caller or CALLER.get()
    return _MARKER.sub(lambda m: _rendered(m, who), text)


def step_name(words: str, caller: Caller | None = None) -> str:
    """A step's name (status `allowed`) as the caller calls it: CLI words or the MCP tool."""
    action = ACTIONS.get(words)
    if action is None or (caller or CALLER.get()) != "mcp":
        return words
    return action.tool


def render(value: Any, caller: Caller | None = None) -> Any:
    """A JSON value with every hint rendered for the caller, and the names of its `allowed`
    lists as the caller calls them."""
    who = caller or CALLER.get()
    if isinstance(value, str):
        return render_text(value, who)
    if isinstance(value, list):
        return [render(item, who) for item in value]
    if isinstance(value, dict):
        return {
            key: [step_name(n, who) for n in item]
            if key == "allowed" and isinstance(item, list)
            else render(item, who)
            for key, item in value.items()
        }
    return value
