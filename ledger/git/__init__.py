"""Git: merging ledgers of two branches, the merge drivers, and protocol conflicts.

`merge` (union by id in canonical order, normalize), `drivers` (what git runs, `git-setup`),
`resolve` (conflicts the merged state records, and the decider of their resolutions).
"""
