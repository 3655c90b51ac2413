"""The shell: the Python API and everything that touches the world for a command.

`api.OpLedger` (load, decide, append, render), `audit`, `runner` (running a verifier),
`provenance` (clock, host, process), `report_files` (writing the tuning report),
`priors_load` (gathering priors from files).
"""
