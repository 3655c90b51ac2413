"""The op manifest (SPEC.md's front matter): parsed by YAML, validated with file:line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger.domain.manifest import parse_manifest
from ledger.errors import BadInput
from ledger.shell.manifest_file import read_manifest

GOOD = """---
op_name: demo
p0_shapes: [[32, 32, 1, 256]]
tolerance: {rtol: 1.0e-5, atol: 1.0e-6}
perf_target: {time_us: 5.0, metric: max_work_time_us, tool: pypto-sim 0.2.0}
baseline_config: {vec_tile_shape: [1, 4, 1, 64]}
knobs:
  vec_tile_shape: {stage: frontend, kind: tile, default: [1, 4, 1, 64]}
  stitch_function_max_num: {stage: swimlane, kind: int, default: 128, min: 1, max: 1024}
  device_sched_mode: {stage: swimlane, domain: [0, 1, 2, 3], default: 0}
  vec_nbuffer_setting: {stage: incore, kind: json, default: {-1: 1}}
verifier:
  command: ["{python}", "-m", "my.verifier", "--config", "{config}", "--shape", "{shape}"]
  timeout_s: 300
---

# demo
"""


def test_a_full_manifest_is_read() -> None:
    """Every field of the manifest is read, and YAML's int keys become JSON's string keys."""
    manifest = parse_manifest(GOOD)
    assert manifest.op_name == "demo"
    assert manifest.p0_shape == (32, 32, 1, 256)
    assert (manifest.target_us, manifest.metric) == (5.0, "max_work_time_us")
    assert (manifest.rtol, manifest.atol) == (1e-5, 1e-6)
    assert manifest.knobs["stitch_function_max_num"].stage == "swimlane"
    assert manifest.knobs["vec_nbuffer_setting"].default == {"-1": 1}
    assert manifest.verifier is not None and manifest.verifier.timeout_s == 300.0
    assert manifest.baseline_config == {"vec_tile_shape": [1, 4, 1, 64]}


def test_defaults_fill_a_config_canonically() -> None:
    """A config is completed with the knobs' defaults; 64.0 and 64 are one value."""
    manifest = parse_manifest(GOOD)
    assert manifest.filled({"stitch_function_max_num": 64.0}) == {
        "device_sched_mode": 0,
        "stitch_function_max_num": 64,
        "vec_nbuffer_setting": {"-1": 1},
        "vec_tile_shape": [1, 4, 1, 64],
    }
    assert manifest.filled({}) == manifest.filled(manifest.defaults())


def test_the_digest_follows_the_declarations_not_the_prose() -> None:
    """Editing SPEC.md's prose keeps the digest; changing a knob's default changes it."""
    digest = parse_manifest(GOOD).digest
    assert parse_manifest(GOOD + "\nMore prose.\n").digest == digest
    assert parse_manifest(GOOD.replace("default: 128", "default: 64")).digest != digest


def test_the_verifier_template_substitutes_one_argument_per_token() -> None:
    """A config with spaces and quotes stays one argument: no shell ever sees it."""
    verifier = parse_manifest(GOOD).verifier
    assert verifier is not None
    argv = verifier.command({"python": "/py", "config": '{"a": "x y; rm -rf /"}', "shape": "[1]"})
    assert argv == (
        "/py",
        "-m",
        "my.verifier",
        "--config",
        '{"a": "x y; rm -rf /"}',
        "--shape",
        "[1]",
    )


@pytest.mark.parametrize(
    ("edit", "line", "message"),
    [
        (
            ("stage: swimlane, kind: int", "stage: algorithm, kind: int"),
            9,
            "knobs.stitch_function_max_num.stage: 'algorithm' is not a configuration stage",
        ),
        (("{config}", "{cfg}"), 13, "verifier.command: unknown placeholder {cfg}"),
        (("max: 1024}", "max: 1024, step: 2}"), 9, "unknown field 'step'"),
        (("default: 128", "default: 0"), 9, "the default stitch_function_max_num=0 is below"),
        (
            ("domain: [0, 1, 2, 3], default: 0", "domain: [0, 1, 2, 3], default: 7"),
            10,
            "is outside its domain",
        ),
        (("p0_shapes: [[32", "p0_shapes: [[-32"), 3, "is not a list of positive integers"),
        (("time_us: 5.0", "time_us: .inf"), 5, "perf_target.time_us: inf is not a finite time"),
        (("time_us: 5.0", "time_us: -1"), 5, "is not a finite time > 0"),
        (("knobs:\n", "knobs: [\n"), 7, "the front matter is not valid YAML"),
        (
            ("vec_tile_shape: [1, 4, 1, 64]}", "vec_tile_shape: [1, 0, 1, 64]}"),
            6,
            "baseline_config.vec_tile_shape",
        ),
    ],
)
def test_a_bad_manifest_names_its_line(edit: tuple[str, str], line: int, message: str) -> None:
    """Each kind of mistake is refused as bad input naming SPEC.md's line and the key."""
    old, new = edit
    assert old in GOOD
    with pytest.raises(BadInput) as refused:
        parse_manifest(GOOD.replace(old, new, 1), "custom/demo/SPEC.md")
    assert str(refused.value).startswith(f"custom/demo/SPEC.md:{line}: ")
    assert message in str(refused.value)
    assert refused.value.hint


def test_no_front_matter_is_refused_by_the_parser() -> None:
    """A SPEC.md without the '---' block is not a manifest."""
    with pytest.raises(BadInput, match=r"SPEC.md:1: no front matter"):
        parse_manifest("# demo\n")
    with pytest.raises(BadInput, match="not closed"):
        parse_manifest("---\np0_shapes: [[1]]\n")


def test_an_op_without_spec_or_front_matter_has_no_manifest(tmp_path: Path) -> None:
    """No SPEC.md, or a SPEC.md of prose only: no manifest, and no error."""
    assert read_manifest(tmp_path) is None
    (tmp_path / "SPEC.md").write_text("# demo\n\nProse only.\n", encoding="utf-8")
    assert read_manifest(tmp_path) is None
    (tmp_path / "SPEC.md").write_text(GOOD, encoding="utf-8")
    manifest = read_manifest(tmp_path)
    assert manifest is not None and manifest.source == str(tmp_path / "SPEC.md")
