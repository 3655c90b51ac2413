"""Builds the golden bootstrap ledger: a campaign whose every verdict is a bootstrap interval.

tests/data/ledger/v1-bootstrap.jsonl was written by this builder while the bootstrap still
drew its indices with NumPy's `Generator.integers` (before issue 27 item 9), so it holds the
intervals old ledgers recorded; tests/test_bootstrap_draw.py checks that the current draw
re-derives them. It is never regenerated: a ledger written by the current code is what the
test compares it with.
"""

from __future__ import annotations

from golden_ledger import BASE, IMPL, MEASURED, Writer, _ok

from stages import commands as cmd


def build() -> bytes:
    """The golden bootstrap ledger's bytes: adopt, no-gain, rollback and target-reached."""
    writer = Writer("golden-bootstrap/events.jsonl")
    run, start = writer.run, writer.start
    run(cmd.Init(op="golden-bootstrap"))
    run(cmd.RecordCompare(outputs=_ok(), impl_path="g.py", impl_digest=IMPL, origin=MEASURED))
    run(cmd.RecordLayout(exit_code=0, impl_path="g.py", impl_digest=IMPL, origin=MEASURED))
    run(cmd.Activate(impl_digest=IMPL))
    run(
        cmd.SetTarget(
            baseline_us=80.0,
            shape="32x256 fp32",
            target_us=20.0,
            target_source="spec",
            source_ref=None,
            config=BASE,
            origin=MEASURED,
            baseline_samples_us=(80.5, 79.0, 80.0, 81.25, 79.5),
        )
    )
    run(cmd.EnterStage(stage="frontend"))
    run(cmd.OpenPoint(name="vec_tile_shape"))
    # Sample counts odd and even, on both sides: the medians of both kinds are re-derived.
    samples_by_config = [
        ([1, 16, 1, 64], (40.25, 41.0, 39.5, 40.0)),  # adopt
        ([1, 32, 1, 64], (40.5, 39.0, 41.5, 40.0, 38.75, 42.0)),  # no-gain
        ([1, 8, 1, 64], (52.0, 51.5, 53.25)),  # rollback
        ([1, 2, 1, 64], (18.0, 18.5, 17.75, 19.0, 18.25, 18.0, 17.5)),  # target-reached
    ]
    for shape, times in samples_by_config:
        attempt = start(cmd.ProposeCandidate(config={**BASE, "vec_tile_shape": shape}, prior="g"))
        run(
            cmd.Verify(
                attempt=attempt, outputs=_ok(), layout_exit=0, times_us=times, origin=MEASURED
            )
        )
    return writer.store.raw
