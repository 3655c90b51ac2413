"""The server's end of the stdio wire: JSON-RPC lines read and written on the event loop itself.

Why not the SDK's default: it reads each line, writes each answer and flushes it through a
worker thread (anyio's file wrapper), three thread hand-offs per call that cost a warm call
about as much as a `status` itself on a loaded 2-core machine. Here the loop waits for the
descriptor to be readable (or writable when the pipe is full) and reads or writes without
blocking. The SDK's `stdio_server` still parses and serializes the messages: this module only
hands it lines (its `stdin` and `stdout` arguments).

While serving, fd 0 reads the null device and fd 1 writes to stderr, as the SDK's own claim
does, so a stray print or a child process can never write into the wire; both come back at the
end.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from collections.abc import AsyncIterator, Iterator

import anyio

_CHUNK = 1 << 16


class LineReader:
    """`async for line in reader`: the lines of a descriptor, each with its newline."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buffer = b""
        os.set_blocking(fd, False)

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line, self._buffer = self._buffer[: end + 1], self._buffer[end + 1 :]
                yield line.decode("utf-8", errors="replace")
                continue
            try:
                chunk = os.read(self._fd, _CHUNK)
            except BlockingIOError:
                await anyio.wait_readable(self._fd)
                continue
            if not chunk:  # the client closed its end
                if self._buffer:
                    yield self._buffer.decode("utf-8", errors="replace")
                return
            self._buffer += chunk


class LineWriter:
    """`await writer.write(text)`: all of it written before it returns; `flush` has nothing
    left to do."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        os.set_blocking(fd, False)

    async def write(self, text: str) -> None:
        data = memoryview(text.encode("utf-8"))
        while data:
            try:
                data = data[os.write(self._fd, data) :]
            except BlockingIOError:  # the pipe is full until the client reads
                await anyio.wait_writable(self._fd)

    async def flush(self) -> None:
        return None


def usable() -> bool:
    """Whether fd 0 and fd 1 are pipes or sockets, which the loop can wait on (a regular file
    or a terminal is left to the SDK's own transport)."""
    try:
        kinds = [os.fstat(fd).st_mode for fd in (0, 1)]
    except OSError:
        return False
    return all(stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) for mode in kinds)


@contextlib.contextmanager
def claimed_stdio() -> Iterator[tuple[LineReader, LineWriter]]:
    """The wire's private descriptors, while fd 0 reads /dev/null and fd 1 goes to stderr."""
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
    finally:
        os.close(null)
    try:
        yield LineReader(wire_in), LineWriter(wire_out)
    finally:
        # Blocking again, as they were: the mode belongs to the pipe, which fd 0 and 1 share.
        for wire, fd in ((wire_in, 0), (wire_out, 1)):
            os.set_blocking(wire, True)
            os.dup2(wire, fd)
            os.close(wire)
