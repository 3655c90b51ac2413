"""The PyPTO adapter: measure a kernel config in pypto's simulator and read its artefacts.

The ledger never imports this package's pypto-facing modules (`child`, `host_verify_patch`);
it runs `python -m tools.pypto.run ... --json` and reads the printed document. The parsing
modules (`metrics`, `numerics`, `classify`, `spec`, `artefacts`) import neither pypto nor torch.
"""
