"""The MCP round-trip figures (tools/bench/mcp_roundtrip.py) have the report's keys, and their
goals are judged on the medians as stated."""

from __future__ import annotations

from tools.bench.mcp_roundtrip import CALLS, SIZES, figures


def test_figures_have_their_keys_and_judge_the_goals() -> None:
    # Seconds per call: the server 10 ms everywhere but 100k (14 ms); the CLI 300 ms.
    samples = {
        str(size): {
            name: {
                "server": [0.010, 0.011, 0.009] if size != 100_000 else [0.014, 0.015, 0.013],
                "cli": [0.3, 0.31, 0.29],
            }
            for name in CALLS
        }
        for size in SIZES
    }
    report = figures(samples)
    for name in CALLS:
        speedup, growth = report[name]["speedup_10k"], report[name]["growth_100k"]
        for figure in (speedup, growth):
            assert {"value", "reference", "ratio", "goal", "met", "noise", "unit"} <= set(figure)
            assert set(figure["noise"]) == {"value", "reference"}
            assert {"min", "median", "max"} <= set(figure["noise"]["value"])
        assert speedup["ratio"] == 30.0 and speedup["met"] is True
        assert growth["ratio"] == 1.4 and growth["met"] is True
        assert report[name]["per_size"]["100000"]["server"] == 0.014
