"""tools/bench/phases.py: where a whole command's time goes, by layer (issue 19 goal 1)."""

from __future__ import annotations

from cli_harness import OP, Cli, frontend

from tools.bench.phases import OTHER, breakdown, layer_of


def test_each_module_is_counted_in_its_own_layer() -> None:
    """The project's layers by package, the floor's libraries by name, the rest as others."""
    assert layer_of("click.core") == "click"
    assert layer_of("attr._make") == layer_of("attrs") == "attrs"
    assert layer_of("ledger.schema.events") == "ledger.schema"
    assert layer_of("ledger.shell.api") == "ledger.shell"
    assert layer_of("ledger.cli.base") == layer_of("ledger.errors") == "ledger.cli"
    assert layer_of("stages.commands") == "stages"
    assert layer_of("ledgerish") == layer_of("pickle") == OTHER
    assert layer_of("inspect", frozenset({"inspect"})) == "click"  # what importing click loads


def test_a_command_is_split_into_imports_by_layer_and_its_work(cli: Cli) -> None:
    """A write's process: the floor's libraries and the project's layers it loads, summed to
    its imports; the interpreter's own start-up modules are not counted again."""
    frontend(cli)
    found = breakdown(cli.root, {"note": ("note", OP, "--text", "phases")}, repeats=1)
    note = found["note"]
    layers = note["imports_by_layer_ms"]
    assert {"click", "attrs", "ledger.schema", "ledger.log", "ledger.shell"} <= set(layers)
    assert "site" not in layers and "encodings" not in layers
    assert abs(sum(layers.values()) - note["imports_ms"]) < 0.1 * len(layers)
    assert note["wall_ms"] > 0 and found["bare_interpreter_ms"] > 0 and note["modules"] > 50
