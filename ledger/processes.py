"""Running a process for the ledger and its tools: in its own process group, under limits, and
leaving nothing behind.

Every process the ledger, its git drivers and its tools start goes through `run` (or `start`
then `watch`, for a process that outlives one call or is not a Popen: the adapter's warm fork).
Why one runner: two had grown, and one did not kill the process group on timeout, so a
verifier's grandchild (the kernel's run) went on after its parent was given up.

- The child leads a new process group (its own session): a limit, a cancel or an interrupt
  kills the whole group, grandchildren included; so does the end of the leader, for whatever
  it left behind.
- Limits: wall time, and the group's resident memory where one is set (read from /proc).
- Output: stdout and stderr (merged, or kept apart) are drained as they come; only the last
  `output_bytes` of each are kept, with the size and sha256 of the whole stream, so a chatty
  or hostile child cannot exhaust the caller's memory (a measurement is its last line).
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import hashlib
import os
import selectors
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Protocol

from attrs import frozen

OUTPUT_BYTES = 8 << 20  # the tail of a stream kept; a verifier's JSON is its last line
POLL_S = 0.1  # how often the leader's end, the wall time and the group's memory are checked
DRAIN_S = 2.0  # after the group is killed: how long to wait for a pipe held by an escapee
_CHUNK = 1 << 16
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


@frozen
class Limits:
    """What a run may take: wall time (s), the group's resident memory (MB), output kept."""

    wall_s: float | None = None
    memory_mb: float | None = None
    output_bytes: int = OUTPUT_BYTES


@frozen
class Finished:
    """What a run did: the leader's exit code (-N: killed by signal N), its output's tail and
    the digest of all of it, and which limit, if any, ended it."""

    argv: tuple[str, ...]
    exit_code: int
    output: bytes  # stdout's tail (stderr merged into it, unless kept apart)
    errors: bytes  # stderr's tail when kept apart, else b""
    output_digest: str  # sha256 of the whole of `output`'s stream
    output_truncated: bool
    duration_s: float
    timed_out: bool
    over_memory: bool
    peak_rss_mb: float

    @property
    def command(self) -> str:
        """The command, quoted for a POSIX shell (what provenance and messages show)."""
        return shlex.join(self.argv)

    def text(self) -> str:
        """The output's tail as text."""
        return self.output.decode("utf-8", errors="replace")


@frozen
class Watched:
    """How a watched process ended: by itself, or killed at a limit (with its peak memory)."""

    timed_out: bool
    over_memory: bool
    peak_rss_mb: float


class Process(Protocol):
    """What `watch` needs of a process: a Popen, or a fork handed over by another process."""

    @property
    def pid(self) -> int: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...


def start(
    argv: Sequence[str],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    log: Path | None = None,
    separate_stderr: bool = False,
    stdin_pipe: bool = False,
    tether: bool = False,
) -> subprocess.Popen[bytes]:
    """Start `argv` (no shell) leading a new process group; its output goes to pipes, or
    appended to `log`. `stdin_pipe`: a pipe to its stdin (the caller's lifeline to a worker),
    else /dev/null. `tether`: Linux kills it when the caller ends (a child in its own group is
    otherwise out of reach of a kill of the caller's group). OSError when it cannot start."""
    with contextlib.ExitStack() as files:
        if log is None:
            stdout: int | IO[bytes] = subprocess.PIPE
        else:
            stdout = files.enter_context(open(log, "ab"))
        return subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=None if env is None else dict(env),
            stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
            stdout=stdout,
            stderr=subprocess.PIPE if separate_stderr and log is None else subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent() if tether else None,
        )


def run(
    argv: Sequence[str],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    limits: Limits = Limits(),  # frozen: one shared default is safe
    separate_stderr: bool = False,
    tether: bool = False,
    on_start: Callable[[int], None] | None = None,
) -> Finished:
    """Run `argv` to its end or a limit, then kill its group; `on_start` is handed the group's
    id once it runs (to cancel it from another thread). OSError when it cannot start."""
    began = time.monotonic()
    process = start(argv, cwd=cwd, env=env, separate_stderr=separate_stderr, tether=tether)
    output = _Tail(limits.output_bytes)
    errors = _Tail(limits.output_bytes)
    streams = {process.stdout: output}
    if process.stderr is not None:
        streams[process.stderr] = errors
    try:
        if on_start is not None:
            on_start(process.pid)
        watched = watch(process, limits, began, streams)
    finally:
        # Whatever the leader left behind goes with it, also when the caller is interrupted.
        kill_group(process.pid)
        _drain(streams, time.monotonic() + DRAIN_S)
        process.wait()
    return Finished(
        argv=tuple(argv),
        exit_code=process.returncode,
        output=output.kept(),
        errors=errors.kept(),
        output_digest=output.digest.hexdigest(),
        output_truncated=output.truncated,
        duration_s=round(time.monotonic() - began, 6),
        timed_out=watched.timed_out,
        over_memory=watched.over_memory,
        peak_rss_mb=round(watched.peak_rss_mb, 1),
    )


def watch(
    process: Process,
    limits: Limits,
    began: float,
    streams: Mapping[IO[bytes] | None, _Tail] | None = None,
) -> Watched:
    """Wait for the leader's end while reading `streams`; at a limit, kill the group. `began`
    is when it started (time.monotonic)."""
    selector = selectors.DefaultSelector()
    for stream in streams or {}:
        if stream is not None:
            selector.register(stream, selectors.EVENT_READ)
    peak = 0.0
    try:
        while process.poll() is None:
            if limits.memory_mb is not None:
                resident = group_rss_mb(process.pid)
                peak = max(peak, resident)
                if resident > limits.memory_mb:
                    kill_group(process.pid)
                    return Watched(timed_out=False, over_memory=True, peak_rss_mb=peak)
            elapsed = time.monotonic() - began
            if limits.wall_s is not None and elapsed > limits.wall_s:
                kill_group(process.pid)
                return Watched(timed_out=True, over_memory=False, peak_rss_mb=peak)
            pause = POLL_S
            if limits.wall_s is not None:
                pause = min(pause, max(0.0, limits.wall_s - elapsed) + 0.001)
            if selector.get_map():
                _read_ready(selector, streams or {}, pause)
            else:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=pause)
    finally:
        selector.close()
    return Watched(timed_out=False, over_memory=False, peak_rss_mb=peak)


def kill_group(pgid: int) -> None:
    """SIGKILL every process of the group `pgid` (it may have ended already)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def group_rss_mb(pgid: int) -> float:
    """Resident memory of every process in the group `pgid`, in MB (Linux's /proc)."""
    pages = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the process ended meanwhile
        # After the command name: fields[2] is the process group, fields[21] the RSS in pages.
        if int(fields[2]) == pgid:
            pages += int(fields[21])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


class _Tail:
    """The last `size` bytes of a stream, and the digest and size of all of it."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.digest = hashlib.sha256()
        self.total = 0
        self._chunks: collections.deque[bytes] = collections.deque()
        self._held = 0

    def add(self, chunk: bytes) -> None:
        self.digest.update(chunk)
        self.total += len(chunk)
        self._chunks.append(chunk)
        self._held += len(chunk)
        while self._held - len(self._chunks[0]) >= self.size:
            self._held -= len(self._chunks.popleft())

    @property
    def truncated(self) -> bool:
        return self.total > self.size

    def kept(self) -> bytes:
        return b"".join(self._chunks)[-self.size :] if self.size else b""


def _read_ready(
    selector: selectors.BaseSelector, streams: Mapping[IO[bytes] | None, _Tail], pause: float
) -> None:
    for key, _events in selector.select(pause):
        chunk = os.read(key.fd, _CHUNK)
        if chunk:
            streams[key.fileobj].add(chunk)  # type: ignore[index]
        else:
            selector.unregister(key.fileobj)


def _drain(streams: Mapping[IO[bytes] | None, _Tail], deadline: float) -> None:
    """Read what is left in the pipes once the group is dead, then close them; a pipe still
    held past `deadline` (by a process that left the group) is given up."""
    selector = selectors.DefaultSelector()
    try:
        for stream in streams:
            if stream is not None:
                selector.register(stream, selectors.EVENT_READ)
        while selector.get_map() and time.monotonic() < deadline:
            _read_ready(selector, streams, max(0.0, deadline - time.monotonic()))
    finally:
        selector.close()
        for stream in streams:
            if stream is not None:
                stream.close()


def _die_with_parent() -> Callable[[], None] | None:
    """A `preexec_fn` that has the new process SIGKILLed when this one ends (None where the
    kernel offers no such request: the child then outlives a kill of its parent)."""
    if not sys.platform.startswith("linux"):
        return None
    # Looked up before the fork: the function run in the new process only calls it.
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    parent = os.getpid()

    def tether() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent ended before the request was made
            os.kill(os.getpid(), signal.SIGKILL)

    return tether
