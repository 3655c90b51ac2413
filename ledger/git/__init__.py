"""Git: merging ledgers of two branches and the merge drivers.

`merge` (union by id in canonical order, normalize), `drivers` (what git runs, `git-setup`).
The protocol conflicts a merged state holds are decided in stages/conflicts.py and resolved by
stages/resolve.py.
"""
