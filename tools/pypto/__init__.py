"""The PyPTO adapter: measure a kernel config on an Ascend NPU or in pypto's simulator, and read
its artefacts.

The ledger never imports this package's pypto-facing modules (`child`, `device_run`,
`host_verify_patch`); it runs `python -m tools.pypto.run ... --json` and reads the printed
document. The parsing modules (`metrics`, `device_profile`, `numerics`, `classify`, `spec`,
`artefacts`, `device`) import neither pypto nor torch.
"""
