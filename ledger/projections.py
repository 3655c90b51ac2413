"""The public names of MEMORY.md's rendering, for callers that still import them from here.

The code lives in one module per concept, and new code imports from those:

- `ledger.steps`: the attempts in order, each with the best it was compared with;
- `ledger.attempt_markdown`: attempts, failures and points as Markdown (MEMORY.md and report);
- `ledger.memory_sections`: the bodies of MEMORY.md's managed sections;
- `ledger.memory_file`: the header, the splice into MEMORY.md, and `check_memory`.

This module only re-exports their public names, so `from ledger import projections` keeps
working; importing it imports all four (but not markdown-it, which `splice` loads on use).
"""

from __future__ import annotations

from ledger.attempt_markdown import (
    CELL,
    FAILED_GROUPS,
    FAILURE_ORDER,
    OUTCOME_ORDER,
    change_text,
    counts_text,
    failed_groups,
    patience,
    points_table,
    reason_text,
    time_text,
)
from ledger.memory_file import Position, check_memory, render_header, render_memory, section_digest
from ledger.memory_sections import (
    ADOPTED_ROWS,
    CONFIG,
    CUBE_TABLE,
    FAILED_ROWS,
    HISTORY_ROWS,
    NOTES,
    POINT_ROWS,
    SECTION_ORDER,
    TARGET_SOURCES,
    TITLES,
    VEC_DESIGN_RANGE,
    VEC_LIMIT,
    alternates,
    render_activation,
    render_adopted,
    render_failed,
    render_history,
    render_sections,
    render_status,
    render_target_sheet,
)
from ledger.steps import Step, baseline_config, config_diff, is_failed, outcome, steps

__all__ = [
    "ADOPTED_ROWS",
    "CELL",
    "CONFIG",
    "CUBE_TABLE",
    "FAILED_GROUPS",
    "FAILED_ROWS",
    "FAILURE_ORDER",
    "HISTORY_ROWS",
    "NOTES",
    "OUTCOME_ORDER",
    "POINT_ROWS",
    "SECTION_ORDER",
    "TARGET_SOURCES",
    "TITLES",
    "VEC_DESIGN_RANGE",
    "VEC_LIMIT",
    "Position",
    "Step",
    "alternates",
    "baseline_config",
    "change_text",
    "check_memory",
    "config_diff",
    "counts_text",
    "failed_groups",
    "is_failed",
    "outcome",
    "patience",
    "points_table",
    "reason_text",
    "render_activation",
    "render_adopted",
    "render_failed",
    "render_header",
    "render_history",
    "render_memory",
    "render_sections",
    "render_status",
    "render_target_sheet",
    "section_digest",
    "steps",
    "time_text",
]
