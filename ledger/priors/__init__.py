"""Priors (R7 candidate phase): where candidate configs come from and how they are ranked.

`prior` (the values: a prior, a failed config, a candidate), `rank` (the pure proposal), with
its steps `focus` (which keys), `candidates` (built from priors and screened), `learned` (what
this op's own measurements say of each, read as `moves`) and `diversity` (distances and the
MMR pick), and `record` (how the op's prior candidates fared); where priors come from:
`sources` (other ops' ledgers, kernel sources), `knowledge` (the built-in knowledge file
`data/priors.json`), `scan` and `literals` (config values in kernel sources, read with `ast`;
what a scan found in `scan_result`), `profile` (what an op is, from SPEC.md, and how alike two
ops are). The file reading is in ledger/shell/priors_load.py, the command in
ledger/cli/priors.py.
"""
