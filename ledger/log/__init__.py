"""The log: bytes of `events.jsonl` and the guarantees they carry.

Canonical JSON and content ids (`codec`), the event envelope and batch sealing (`record`),
upcasting of old schema versions (`upcast`); checking each line against those before it
(`walker`), the fast scan and replay's stream (`chain`), audit's integrity check (`integrity`);
the store, the only writer of the ledger (rules in `store_interface`, backends in
`file_store` and `memory_store`, where the ledger ends in `position`, torn tails in
`quarantine`); bounded reads and writes that follow no link (`safe_files`), the ledger's locks
(`locks`) and where an op's files live (`files`). Knows the schema, not the protocol.
"""
