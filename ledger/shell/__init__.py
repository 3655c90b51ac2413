"""The shell: the Python API and everything that touches the world for a command.

`api.OpLedger` (load, decide, append, render), `workflows` (measure, the target sheet and the
activation evidence from SPEC.md: the steps that run the op's own commands), `audit`, `runner`
and `measure` (running a verifier, reading its documents), `provenance` (clock, host, process),
`report_files` (writing the tuning report), `priors_load` (gathering priors from files).
"""
