"""Issue 15 item 1: a single-valued option given twice is bad input (exit 2), nothing written.

click keeps the last value of a repeated option silently; a dropped `--set` is a lost change
(R6), so every command refuses the repetition and names both values.
"""

from __future__ import annotations

from cli_harness import OP, Cli, frontend, new_op, snapshot


def test_two_set_options_are_refused_naming_both_and_nothing_is_written(cli: Cli) -> None:
    frontend(cli)
    before = snapshot(cli.root)
    result = cli("try", OP, "--set", "vec_tile_shape=[1,8,1,64]", "--set", "unroll_list=[2,1]")
    assert result.code == 2
    assert result.json["error"] == (
        "--set was given 2 times (--set 'vec_tile_shape=[1,8,1,64]' and --set "
        "'unroll_list=[2,1]'); it takes one value and nothing was recorded"
    )
    assert result.json["next"] == "give --set once: a mutation changes one parameter (R6)"
    assert snapshot(cli.root) == before


def test_repeated_option_spelled_with_equals_is_refused_too(cli: Cli) -> None:
    new_op(cli)
    before = snapshot(cli.root)
    result = cli("evidence", "layout", OP, "--exit-code", "0", "--exit-code=1")
    assert result.code == 2
    assert result.json["error"] == (
        "--exit-code was given 2 times (--exit-code '0' and --exit-code '1'); it takes one "
        "value and nothing was recorded"
    )
    assert result.json["next"] == "give --exit-code once"
    assert snapshot(cli.root) == before


def test_repeated_global_option_is_refused(cli: Cli) -> None:
    new_op(cli)
    result = cli("--root", str(cli.root), "status", OP)
    assert result.code == 2
    assert result.json["error"].startswith("--root was given 2 times")


def test_options_meant_to_repeat_still_repeat(cli: Cli) -> None:
    new_op(cli)
    cli.ok("evidence", "compare", OP, "--output", "y=true", "--output", "z=true")
    assert [o["name"] for o in cli.events()[-1]["payload"]["outputs"]] == ["y", "z"]


def test_a_value_that_looks_like_an_option_is_a_value(cli: Cli) -> None:
    new_op(cli)
    cli.ok("note", OP, "--text", "--text")
    assert cli.events()[-1]["payload"]["text"] == "--text"
