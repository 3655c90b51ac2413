"""Projections: pure renderings of a replayed state, and the files they are written to.

MEMORY.md (`memory_sections` assembles one `memory_*` module per section; `memory_file`,
`splice`), the tuning report (`report`) and its chart (`report_chart`), the attempts in order
with the best each was compared with (`timeline`), `status` and `resume` (`status_view`,
`resume_view`), attempts as rows and results (`attempt_rows`, `verdict_result`), `audit`'s text
(`audit_text`), fixed number formats (`formatting`). Rule constants come from `stages/`, never
copied here.
"""
