"""An op's profile from SPEC.md's front matter (read by the manifest's YAML reader, the one
reader of SPEC.md) and the similarity of two ops."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from ledger.priors.profile import OpProfile, profile, shape_similarity, similarity
from ledger.shell.priors_load import read_profile

SOFTMAX = Path(__file__).parents[1] / "custom" / "softmax"


def test_the_example_ops_spec_front_matter_is_read() -> None:
    softmax, notes = read_profile(SOFTMAX, "softmax")
    assert notes == []
    assert softmax == OpProfile(name="softmax", dtypes=("fp32",), shapes=((32, 32, 1, 256),))


def test_flow_lists_of_plain_words_block_lists_comments_and_quotes(tmp_path: Path) -> None:
    (tmp_path / "SPEC.md").write_text(
        "\n".join(
            [
                "---",
                "op_name: 'rms_norm'  # the op",
                "op_family: norm",
                "supported_dtypes: [fp16, bf16]",
                "p0_shapes:",
                "  - [8, 4096]",
                "  - [1, 4096]",
                "tolerance: {rtol: 1.0e-3, atol: 1.0e-5}",
                'note: "a # inside quotes"',
                "nested:",
                "  child: 1",
                "cube_k: 4096",
                "---",
                "# body",
                "not: front matter",
            ]
        ),
        "utf-8",
    )
    norm, notes = read_profile(tmp_path, "custom_name")
    assert notes == []
    assert norm == OpProfile(
        name="rms_norm",
        family="norm",
        dtypes=("bf16", "fp16"),
        shapes=((8, 4096), (1, 4096)),
        cube_k=4096,
    )


def test_a_missing_spec_no_front_matter_or_broken_yaml_leave_the_name_only(
    tmp_path: Path,
) -> None:
    """Nothing about SPEC.md is fatal for priors: what cannot be read is a note, naming the
    file and line, and similarity uses the op's name."""
    missing, notes = read_profile(tmp_path, "op")
    assert missing == OpProfile(name="op") and "not found" in notes[0]
    (tmp_path / "SPEC.md").write_text("# op\n\ntext\n", "utf-8")
    assert read_profile(tmp_path, "op") == (OpProfile(name="op"), [])
    (tmp_path / "SPEC.md").write_text("---\nop_name: x\nshapes: [1, 2\n---\n", "utf-8")
    broken, notes = read_profile(tmp_path, "op")
    assert broken == OpProfile(name="op")
    assert f"{tmp_path / 'SPEC.md'}:3:" in notes[0] and "not valid YAML" in notes[0]
    assert profile("op", {"p0_shapes": "big", "supported_dtypes": 3}) == OpProfile(name="op")


def test_similarity_prefers_the_same_family_dtype_and_shape() -> None:
    softmax = OpProfile(name="softmax", dtypes=("fp32",), shapes=((32, 32, 1, 256),))
    twin = OpProfile(
        name="softmax_v2", family="softmax", dtypes=("fp32",), shapes=((32, 32, 1, 256),)
    )
    log_softmax = OpProfile(name="log_softmax", dtypes=("fp16",), shapes=((64, 32, 1, 512),))
    matmul = OpProfile(name="matmul", dtypes=("fp16",), shapes=((512, 512),))
    unknown = OpProfile(name="gelu")
    scores = [similarity(softmax, other)[0] for other in (twin, log_softmax, matmul)]
    assert scores[0] == 1.0 and scores[0] > scores[1] > scores[2]
    score, why = similarity(softmax, unknown)
    assert 0 < score < 1 and "dtypes unknown" in why and "shapes unknown" in why


@given(
    st.lists(st.integers(1, 4096), min_size=1, max_size=5),
    st.lists(st.integers(1, 4096), min_size=1, max_size=5),
)
def test_shape_similarity_is_symmetric_bounded_and_one_only_for_equal_shapes(
    a: list[int], b: list[int]
) -> None:
    score = shape_similarity(a, b)
    assert score == shape_similarity(b, a)
    assert 0.0 <= score <= 1.0
    assert (score == 1.0) == (a == b)
