"""Autopilot: plays the optimizer agent for the configuration stages, through the ledger's API.

    python -m tools.autopilot --op softmax [--root .] [--max-attempts N]

Every decision is taken from the replayed ledger, so the loop is resumable: interrupt it at
any moment (Ctrl-C, a crash, a kill) and run it again; a pending attempt is measured again
(the simulator is deterministic) and verified, nothing is lost or repeated. Measurements come
from the PyPTO adapter (`python -m tools.pypto.run`), run by the ledger itself (`--run`), so
every verdict is recorded with provenance "measured".

`pilot` takes the protocol's steps and keeps time; `__main__` is the command.
"""
