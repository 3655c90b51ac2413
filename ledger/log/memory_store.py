"""The memory backend of the store: the same rules over bytes held in memory, for tests and
benchmarks, with hooks to simulate a crash or tampering."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from ledger.log.store_interface import Session, Store


class MemoryStore(Store):
    """A ledger held in memory with the same rules; tests may set its raw bytes directly."""

    def __init__(self, data: bytes = b"", name: str = "memory/events.jsonl") -> None:
        super().__init__(name)
        self._data = bytes(data)
        self._quarantined: dict[str, bytes] = {}
        self._lock = threading.Lock()
        self._generation = 0  # bumped by set_raw and rewrite: another holder of the bytes

    @property
    def raw(self) -> bytes:
        """The ledger's bytes as stored."""
        return self._data

    def set_raw(self, data: bytes) -> None:
        """Replace the stored bytes (to simulate a crash or tampering in tests)."""
        with self._lock:
            self._data = bytes(data)
            self._generation += 1

    def quarantine_names(self) -> list[str]:
        return list(self._quarantined)

    def quarantine_bytes(self, name: str) -> bytes:
        return self._quarantined[name]

    def add_quarantine(self, name: str, data: bytes) -> None:
        """Place a quarantine file beside the ledger (to simulate an interrupted repair)."""
        self._quarantined[name] = bytes(data)

    def quarantine_exists(self, name: str) -> bool:
        return name in self._quarantined

    def _read_from(self, offset: int) -> tuple[object, bytes]:
        with self._lock:
            return self._generation, self._data[offset:]

    @contextmanager
    def _session(self) -> Iterator[Session]:
        with self._lock:
            yield _MemorySession(self)


class _MemorySession:
    """The primitives of one append to a MemoryStore, used while its lock is held."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    def data(self) -> bytes:
        return self.store._data

    def stamp(self, tail: int) -> tuple[object, int, bytes]:
        data = self.store._data
        return self.store._generation, len(data), data[len(data) - tail :] if tail else b""

    def quarantine(self, name: str, torn: bytes) -> None:
        self.store._quarantined[name] = torn

    def truncate(self, size: int) -> None:
        self.store._data = self.store._data[:size]

    def write(self, lines: bytes) -> None:
        self.store._data += lines

    def replace(self, data: bytes) -> None:
        self.store._data = bytes(data)
        self.store._generation += 1  # as a renamed file: a position read before must not match
