"""The parts of a state snapshot after its header (ledger/shell/state_snapshot.py): R9's key
texts and the attempts, a few hundred to a pickle, each with its own tag, read from the open
file and unpickled only when the state reads one of them."""

from __future__ import annotations

import array
import contextlib
import hashlib
import hmac
import os
import pickle
import zlib
from collections.abc import Callable, Iterator
from itertools import accumulate
from typing import Any, BinaryIO

from ledger.domain import lazy_measured
from ledger.domain.lazy_attempts import LazyAttempts, SortedIds
from ledger.domain.state import Attempt, AttemptMap
from ledger.errors import LedgerError
from ledger.log.chain import paused_gc


def tag(secret: bytes, pieces: list[bytes]) -> bytes:
    """The HMAC-SHA256 of `pieces`, one after the other, under `secret`."""
    signature = hmac.new(secret, digestmod=hashlib.sha256)
    for piece in pieces:
        signature.update(piece)
    return signature.digest()


def parts_check(file: BinaryIO, header: dict[str, Any]) -> bool:
    """True when the bytes after the header are the parts the header lists, each with its own
    CRC-32: read part by part before the state is used, so that a damaged part means no
    snapshot (a full replay), as a damaged header does, rather than an error mid-command.

    This check is for damage only, at a third of an HMAC's cost over the ~10 MB of parts at
    100k events (~3 against ~9.6 ms): what a part holds is unpickled only after its own HMAC
    was checked, when it is read (`PartReader`). A part forged to keep its CRC fails there."""
    for size, crc in zip(header["part_sizes"], header["part_crcs"], strict=True):
        data = file.read(size)
        if len(data) != size or zlib.crc32(data) != crc:
            return False  # shorter than the header says, or changed
    return not file.read(1)  # nothing after the last part


def streamed(file: BinaryIO, size: int, take: Callable[[bytes], object]) -> int:
    """Hand the next `size` bytes of `file` to `take` in chunks; how many there were."""
    left = size
    while left:
        chunk = file.read(min(left, 1 << 16))
        if not chunk:
            break
        take(chunk)
        left -= len(chunk)
    return size - left


class PartReader:
    """Reads one part of the attempts from the open snapshot and checks its own tag: the file
    is the one whose tags were checked (a newer snapshot replaces it by a rename, and this
    descriptor still reads the old one); a part that changed since is refused."""

    def __init__(self, file: BinaryIO, at: int, secret: bytes, header: dict[str, Any]) -> None:
        self.file, self.secret = file, secret
        self.sizes: list[int] = header["part_sizes"]
        self.tags: list[bytes] = header["part_tags"]
        self.offsets = list(accumulate(self.sizes, initial=at))

    def unpickled(self, n: int) -> Any:
        """Part `n` (of all the parts after the header), read, checked and unpickled."""
        size = self.sizes[n]
        data = os.pread(self.file.fileno(), size, self.offsets[n])
        if len(data) != size or not hmac.compare_digest(tag(self.secret, [data]), self.tags[n]):
            # Its CRC matched when the snapshot was opened, so this is no accident: the cache is
            # dropped (the next command replays the ledger) and this command stops where it is;
            # the ledger is untouched by it (a step appended before this read stays recorded).
            path = getattr(self.file, "name", None)
            if isinstance(path, str):
                with contextlib.suppress(OSError):
                    os.unlink(path)
            raise LedgerError(
                "a part of the state snapshot changed after it was checked; the snapshot "
                f"({path}) was removed, the ledger is intact",
                hint="run `tune-ledger status OP` to see whether this step was recorded, then go "
                "on: the next command replays the ledger",
            )
        with paused_gc():
            return pickle.loads(data)

    def __del__(self) -> None:
        self.file.close()


def config_keys(attempts: AttemptMap, texts: list[str]) -> array.array[int]:
    """For each attempt, the place among R9's keys (`texts`) of the key its config text is
    (compact_attempts made them one object when equal), or -1."""
    place = {text: n for n, text in enumerate(texts)}
    keys = array.array("i")
    for attempt in attempts.values():
        config = attempt._config  # as held
        keys.append(place.get(config, -1) if type(config) is str else -1)
    return keys


def text_parts(texts: list[str], per_part: int) -> list[bytes]:
    """R9's key texts, in order, as pickles of `per_part` each."""
    return [
        pickle.dumps(texts[start : start + per_part], protocol=pickle.HIGHEST_PROTOCOL)
        for start in range(0, len(texts), per_part)
    ]


def attempt_parts(attempts: AttemptMap, keys: array.array[int], per_part: int) -> Iterator[bytes]:
    """The attempts, in order, as pickles of `per_part` each; a config that is its R9
    key is written as None (a text part holds the key)."""
    batch = list(attempts.values())
    for start in range(0, len(batch), per_part):
        part = batch[start : start + per_part]
        own = keys[start : start + per_part]
        held = [(a, a._config) for a, key in zip(part, own, strict=True) if key >= 0]
        for attempt, _config in held:
            attempt._config = None  # type: ignore[assignment]
        try:
            yield pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL)
        finally:
            for attempt, config in held:
                attempt.hold_config_text(config)  # type: ignore[arg-type]


def key_texts(reader: PartReader, header: dict[str, Any]) -> lazy_measured.KeyTexts:
    """R9's key texts after the header, each part read and unpickled when first used."""

    def load_part(n: int) -> list[str]:
        texts: list[str] = reader.unpickled(n)
        return texts

    return lazy_measured.KeyTexts(header["measured"]["count"], header["texts_per_part"], load_part)


def lazy_attempts(
    reader: PartReader, header: dict[str, Any], texts: lazy_measured.KeyTexts
) -> LazyAttempts:
    """The attempts after R9's key texts, as a map that reads and unpickles each part when
    one of its attempts is first read."""
    ids: list[str] = header["ids"]
    keys = array.array("i")
    keys.frombytes(header["keys"])
    per_part: int = header["per_part"]
    first: int = header["text_parts"]

    def load_part(n: int) -> list[Attempt]:
        part = reader.unpickled(first + n)
        if type(part) is not list or not part:
            raise ValueError("not a part of the snapshot's attempts")
        for position, attempt in enumerate(part, start=n * per_part):
            if type(attempt) is not Attempt or position >= len(ids) or attempt.id != ids[position]:
                raise ValueError("not the attempt the snapshot's header lists")
            attempt.id = ids[position]  # the header's string, shared with the points
            key = keys[position]
            if key >= 0:
                attempt.hold_config_text(texts[key])
            elif attempt._config is None:
                raise ValueError("an attempt without its config")
        return part

    positions = array.array("i")
    positions.frombytes(header["ids_positions"])
    return LazyAttempts(ids, per_part, load_part, SortedIds(header["ids_sorted"], positions))


def sorted_ids(ids: list[str]) -> tuple[list[str], bytes]:
    """`ids` sorted, and the position of each in `ids` (an int32 array's bytes), for
    `SortedIds`."""
    order = sorted(range(len(ids)), key=ids.__getitem__)
    return [ids[n] for n in order], array.array("i", order).tobytes()
