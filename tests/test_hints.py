"""One way forward, two renderings (issue 28.1): a `Step` in a hint reads as a command line for
the CLI and as a tool call for MCP; a misnamed step or argument fails where it is built."""

from __future__ import annotations

import pytest

from ledger.domain import hints
from ledger.domain.hints import NAME, TEXT, Fill, Step, arg, named


def test_a_step_renders_as_a_command_line_and_as_a_tool_call() -> None:
    text = f"close it ({Step('point close', 'rms_norm', name='tile', reason=TEXT)})"
    assert (
        hints.render_text(text, "cli")
        == "close it (tune-ledger point close rms_norm tile --reason TEXT)"
    )
    assert hints.render_text(text, "mcp") == (
        'close it (point_close(op="rms_norm", name="tile", reason=TEXT))'
    )


def test_options_named_apart_lists_and_objects_render_for_each_caller() -> None:
    step = Step("try", "sm", change=Fill("PARAM=JSON"), override_retry="a new kernel")
    assert hints.render_text(str(step), "cli") == (
        "tune-ledger try sm --set PARAM=JSON --override-retry 'a new kernel'"
    )
    knobs = Step("point open", "sm", name=NAME, knob=["a", "b"])
    assert (
        hints.render_text(str(knobs), "cli") == "tune-ledger point open sm NAME --knob a --knob b"
    )
    assert hints.render_text(str(knobs), "mcp") == 'point_open(op="sm", name=NAME, knob=["a", "b"])'
    config = Step("candidate", "sm", config={"t": [1, 2]}, prior="p")
    assert hints.render_text(str(config), "cli") == (
        "tune-ledger candidate sm --config '{\"t\":[1,2]}' --prior p"
    )


def test_arguments_and_names_alone_render_for_each_caller() -> None:
    text = f"add {arg('override_retry', Fill('REASON'))}; {named('evidence compare')} works"
    assert hints.render_text(text, "cli") == "add --override-retry REASON; evidence compare works"
    assert hints.render_text(text, "mcp") == "add override_retry=REASON; evidence_compare works"


def test_the_caller_is_the_context_s_and_allowed_lists_name_tools_over_mcp() -> None:
    data = {"next": str(Step("status", "sm")), "allowed": ["skill load", "stop"]}
    assert hints.render(data) == {
        "next": "tune-ledger status sm",
        "allowed": ["skill load", "stop"],
    }
    token = hints.CALLER.set("mcp")
    try:
        assert hints.render(data) == {"next": 'status(op="sm")', "allowed": ["skill_load", "stop"]}
    finally:
        hints.CALLER.reset(token)


def test_a_misnamed_step_or_argument_fails_where_the_hint_is_built() -> None:
    with pytest.raises(ValueError, match="no step"):
        Step("point shut", "sm")
    with pytest.raises(ValueError, match="takes no argument because"):
        Step("relax", "sm", because="x")
    with pytest.raises(ValueError, match="no step takes an argument"):
        arg("reasons")


def test_text_that_only_looks_like_a_marker_is_left_as_it_is() -> None:
    forged = 'a note: \u27e6step:not json\u27e7 and \u27e6step:["no such", []]\u27e7'
    assert hints.render_text(forged, "mcp") == forged
    quoted = Step("note", "sm", text="closing \u27e7 bracket")
    assert (
        hints.render_text(f"{quoted}", "cli")
        == "tune-ledger note sm --text 'closing \u27e7 bracket'"
    )
