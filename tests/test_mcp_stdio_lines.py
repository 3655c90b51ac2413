"""The server's stdio wire (ledger/mcp/stdio_lines.py): lines in whatever chunks they arrive,
answers larger than a pipe holds, and fd 0 and 1 kept off the wire while serving."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import pytest

from ledger.mcp.stdio_lines import LineReader, LineWriter

REPO = Path(__file__).resolve().parents[1]


def _read_all(fd: int) -> list[str]:
    async def collect() -> list[str]:
        return [line async for line in LineReader(fd)]

    return anyio.run(collect)


def test_lines_are_whole_however_the_bytes_arrive() -> None:
    """Chunks cut lines (and a UTF-8 character) anywhere; a line longer than a read, and a last
    line without its newline, come out whole."""
    lines = ['{"a":1}\n', '{"b":"é€"}\n', '{"long":"' + "x" * 200_000 + '"}\n', '{"last":true}']
    data = "".join(lines).encode("utf-8")
    read_end, write_end = os.pipe()

    def feed() -> None:
        cuts = [0, 3, 9, 13, 14, 70_000, 140_001, len(data) - 5, len(data)]
        for start, end in itertools.pairwise(cuts):
            _write_all(write_end, data[start:end])
            time.sleep(0.01)
        os.close(write_end)

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        assert _read_all(read_end) == lines
    finally:
        feeder.join()
        os.close(read_end)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def test_an_answer_larger_than_the_pipe_arrives_whole_and_in_order() -> None:
    """The writer waits while the pipe is full (a slow client) instead of losing bytes."""
    text = "".join(f'{{"n":{n},"pad":"{"y" * 100}"}}\n' for n in range(10_000))  # ~1.2 MB
    read_end, write_end = os.pipe()
    received = bytearray()

    def slow_client() -> None:
        while chunk := os.read(read_end, 4096):
            received.extend(chunk)
            if len(received) < 100_000:
                time.sleep(0.001)

    client = threading.Thread(target=slow_client)
    client.start()
    try:
        writer = LineWriter(write_end)

        async def send() -> None:
            await writer.write(text)
            await writer.flush()

        anyio.run(send)
    finally:
        os.close(write_end)
        client.join()
        os.close(read_end)
    assert received.decode("utf-8") == text


CLAIM = """
import os, sys
from ledger.mcp import stdio_lines
assert stdio_lines.usable()
with stdio_lines.claimed_stdio() as (lines_in, lines_out):
    print("stray print", flush=True)        # fd 1 is stderr while serving
    os.write(1, b"stray write\\n")
    assert os.read(0, 10) == b""             # fd 0 reads /dev/null
print("after", os.get_blocking(0), os.get_blocking(1), flush=True)
"""


def test_while_serving_nothing_but_the_wire_reaches_stdout_and_all_is_restored() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CLAIM],
        cwd=REPO,
        stdin=subprocess.PIPE,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"after True True\n"
    assert b"stray print\nstray write\n" in done.stderr


@pytest.mark.parametrize("stdin_kind", ["file", "pipe"])
def test_only_pipes_and_sockets_take_the_loops_wire(stdin_kind: str, tmp_path: Path) -> None:
    """A regular file on stdin cannot be waited on by the loop: the SDK's transport serves it."""
    source = tmp_path / "in"
    source.write_bytes(b"")
    with open(source, "rb") as file:
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                "from ledger.mcp import stdio_lines; print(stdio_lines.usable())",
            ],
            cwd=REPO,
            stdin=file if stdin_kind == "file" else subprocess.PIPE,
            capture_output=True,
            check=False,
        )
    assert done.stdout.strip() == (b"True" if stdin_kind == "pipe" else b"False")
