"""Projections: pure renderings of a replayed state, and the files they are written to.

MEMORY.md (`memory_sections` assembles one `memory_*` module per section; `memory_file`,
`splice`), the tuning report (`report`) and its chart (`report_chart`), the attempts in order
with the best each was compared with (`timeline`), the status/resume/log views (`views`),
fixed number formats (`formatting`). Rule constants
come from `stages/`, never copied here.
"""
