"""Priors (R7 candidate phase): where candidate configs come from and how they are ranked.

`rank` (the pure ranking), `sources` (other ops' ledgers, kernel sources, the built-in
knowledge file `data/priors.json`), `scan` (config values in kernel sources, read with `ast`),
`profile` (what an op is, from SPEC.md, and how alike two ops are).
"""
