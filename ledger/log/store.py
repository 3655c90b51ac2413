"""The event store, the only code that writes `events.jsonl` (DESIGN §4): the names callers use.

The rules live in `store_interface` (read, stream, append), the backends in `file_store` and
`memory_store`, where the ledger ends in `position`, torn-tail repair in `quarantine`.
"""

from __future__ import annotations

from ledger.log.chain import Log
from ledger.log.file_store import FileStore, chain_findings
from ledger.log.files import ledger_path
from ledger.log.memory_store import MemoryStore
from ledger.log.position import Position
from ledger.log.quarantine import Quarantined
from ledger.log.store_interface import AppendResult, Store

__all__ = [
    "AppendResult",
    "FileStore",
    "Log",
    "MemoryStore",
    "Position",
    "Quarantined",
    "Store",
    "chain_findings",
    "ledger_path",
]
