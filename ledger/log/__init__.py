"""The log: bytes of `events.jsonl` and the guarantees they carry.

Canonical JSON and content ids (`codec`), the event envelope (`record`), verification of ids,
parents, Lamport counters and batches (`chain`), upcasting of old schema versions (`upcast`),
the store, the only writer of the ledger (`store`), atomic file replacement (`atomic`), and
where an op's files live and how they are locked (`files`). Knows the schema, not the protocol.
"""
