"""The schema: the closed set of event payloads and their value types (the bottom layer).

Everything above reads and writes these; this package imports nothing of the project but
`ledger.errors`.
"""
