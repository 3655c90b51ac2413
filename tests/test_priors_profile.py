"""SPEC.md front matter (a tiny YAML subset) and the similarity of two ops."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from ledger.priors.profile import (
    OpProfile,
    front_matter,
    profile,
    shape_similarity,
    similarity,
)

SOFTMAX_SPEC = Path(__file__).parents[1] / "custom" / "softmax" / "SPEC.md"


def test_the_example_ops_spec_front_matter_is_read() -> None:
    matter = front_matter(SOFTMAX_SPEC.read_text("utf-8"))
    assert matter.problems == ()
    assert matter.values["supported_dtypes"] == ["fp32"]
    assert matter.values["p0_shapes"] == [[32, 32, 1, 256]]
    assert matter.values["tolerance"] == {"rtol": 1.0e-5, "atol": 1.0e-6}
    softmax = profile("softmax", matter.values)
    assert softmax == OpProfile(name="softmax", dtypes=("fp32",), shapes=((32, 32, 1, 256),))


def test_flow_lists_of_plain_words_block_lists_comments_and_quotes() -> None:
    text = "\n".join(
        [
            "---",
            "op_name: 'rms_norm'  # the op",
            "op_family: norm",
            "supported_dtypes: [fp16, bf16]",
            "p0_shapes:",
            "  - [8, 4096]",
            "  - [1, 4096]",
            "tolerance: {rtol: 1e-3, atol: 1e-5}",
            'note: "a # inside quotes"',
            "nested:",
            "  child: 1",
            "cube_k: 4096",
            "---",
            "# body",
            "not: front matter",
        ]
    )
    matter = front_matter(text)
    assert matter.problems == ()
    assert matter.values == {
        "op_name": "rms_norm",
        "op_family": "norm",
        "supported_dtypes": ["fp16", "bf16"],
        "p0_shapes": [[8, 4096], [1, 4096]],
        "tolerance": {"rtol": 1e-3, "atol": 1e-5},
        "note": "a # inside quotes",
        "nested": [],
        "cube_k": 4096,
    }
    norm = profile("custom_name", matter.values)
    assert norm == OpProfile(
        name="rms_norm",
        family="norm",
        dtypes=("bf16", "fp16"),
        shapes=((8, 4096), (1, 4096)),
        cube_k=4096,
    )


def test_no_front_matter_unreadable_lines_and_a_missing_fence_are_not_fatal() -> None:
    assert front_matter("# softmax\n\ntext\n").values == {}
    broken = front_matter("---\nop_name: x\n: no key\nshapes: [1, 2\n", "S.md")
    assert broken.values == {"op_name": "x"}
    assert [p.split(":")[1] for p in broken.problems[:2]] == ["3", "4"]
    assert broken.problems[-1] == "S.md: front matter has no closing '---'"
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
