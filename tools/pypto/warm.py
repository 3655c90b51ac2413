"""A warm worker: one process that imported pypto and torch once and runs each of the adapter's
child processes (the kernel's run, the op's layout check) in a fork of itself.

Why: each measurement started two fresh interpreters that import torch: the kernel's child
(torch + pypto, ~2.3 s of CPU here) and the op's layout check (it runs the golden, ~1.9 s), a
third of a softmax measurement on a 2-core host. A fork starts with both imported.

What stays as with a new process (runner.py starts one instead whenever the worker cannot be
used, and the document's `run.child` says which ran):
- one fork per run, so a failed compile (after which pypto refuses every later kernel), a
  compiled cache or a crash never outlives its run; the worker itself compiles nothing;
- each fork leads its own process group: the runner polls that group's memory and kills it at
  its limits as before; the worker reaps the fork and hands back its exit status (a signal
  included), and kills the fork's group when the runner goes away (killed by measure-ahead);
- the fork gets the argv, environment, working folder, stdin and outputs a new process would,
  and ends as a process does (exit handlers, flushed streams, C's exit: pypto writes
  `verify_result_brief.csv` only then), less the teardown of every module (`_exit_fork`);
- pypto opens its log under $HOME at import, so a fork logs under the worker's home: the
  worker moves the fork's log files (named by its pid) into the run's home once it ended,
  where the runner reads them to classify a compile failure;
- the worker is used only when it runs what a new process would: the same interpreter, the
  same adapter sources, the same pypto, torch and numpy, and the same environment (the
  per-run variables in PER_RUN aside); the worker's greeting says what it runs.

Protocol: a Unix socket named by $TUNE_LEDGER_PYPTO_WARM, one connection per run, one JSON
object per line. The worker greets ({"identity"}); the runner sends the job ({"kind": "child"
| "script", "argv", "cwd", "env", "stdout", "stderr", "home"}); the worker answers {"pid"}
once forked, then {"returncode"} once the fork ended.

    python -m tools.pypto.warm SOCKET [MODULE ...]   (the autopilot starts it: `start()`)
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import hashlib
import importlib
import json
import os
import runpy
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from ledger import processes

ENV = "TUNE_LEDGER_PYPTO_WARM"
# Variables a fork gets from its job like every other, and that nothing reads at import (so the
# worker's values cannot have shaped what it imported): not compared. Every other variable of
# the worker must equal the run's, since torch, pypto and Python read some at import.
PER_RUN = (
    "HOME",  # a run's own home (pypto's log folder is handled apart: `_hand_over_logs`)
    "TILE_FWK_OUTPUT_DIR",  # read by pypto when a kernel runs
    "TUNE_LEDGER_PYPTO_CACHE",  # read by host_verify_patch when a run activates it
    "TUNE_LEDGER_PROGRESS_FILE",  # the live progress line (phase.py)
    ENV,
)
PACKAGES = ("pypto", "torch", "numpy")
GREETING_TIMEOUT_S = 120.0  # the worker greets once its imports are done (seconds, loaded)
# What the worker imports once, for every fork: the heavy imports of the kernel's child.
PRELOAD = ("pypto", "torch", f"{__package__}.child", f"{__package__}.host_verify_patch")
ADAPTER = Path(__file__).resolve().parent


class WarmLost(RuntimeError):
    """The worker went away before it handed back a fork's exit status."""


def identity(python: str, environ: Mapping[str, str]) -> dict[str, Any]:
    """What a run in this interpreter and environment depends on, beside its own arguments."""
    return {
        "python": python,
        "adapter": adapter_digest(),
        "packages": {name: installed(name) for name in PACKAGES},
        "env": {k: v for k, v in sorted(environ.items()) if k not in PER_RUN},
    }


def adapter_digest() -> str:
    """sha256 over this package's Python sources (a fork runs the ones the worker imported)."""
    total = hashlib.sha256()
    for path in sorted(ADAPTER.glob("*.py")):
        total.update(path.name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return total.hexdigest()


def installed(name: str) -> str | None:
    """The installed version of a package for this interpreter (read from its metadata)."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


# ------------------------------------------------------------------------------- the runner


class _Lines:
    """JSON lines read from a socket without a hidden buffer, so `select` tells the truth."""

    def __init__(self, connection: socket.socket) -> None:
        self.connection = connection
        self._buffer = b""

    def readline(self, timeout: float | None) -> str | None:
        """The next line ('' at the end of the stream), or None after `timeout` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([self.connection], [], [], left)[0]:
                return None
            chunk = self.connection.recv(65536)
            if not chunk:
                return ""
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode("utf-8")


class WarmRun:
    """A fork of the worker, seen from the runner: the Popen methods the runner uses."""

    def __init__(self, lines: _Lines, pid: int) -> None:
        self._lines = lines
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        """The exit status once the fork ended, else None (never blocks)."""
        if self.returncode is None:
            self._read_status(0.0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Block until the fork ended; subprocess.TimeoutExpired after `timeout` seconds."""
        if self.returncode is None:
            self._read_status(timeout)
            if self.returncode is None:
                raise subprocess.TimeoutExpired("warm fork", timeout or 0.0)
        return self.returncode

    def _read_status(self, timeout: float | None) -> None:
        try:
            line = self._lines.readline(timeout)
        except OSError:
            line = ""
        if line is None:
            return
        self._lines.connection.close()
        if not line:
            raise WarmLost(f"the warm worker went away while fork {self.pid} ran")
        self.returncode = int(json.loads(line)["returncode"])


def start_run(
    *,
    kind: str,
    argv: list[str],
    cwd: Path,
    env: Mapping[str, str],
    python: str,
    stdout: Path,
    stderr: Path,
    home: Path | None = None,
) -> tuple[WarmRun | None, str]:
    """A fork of the worker named by $TUNE_LEDGER_PYPTO_WARM running the job, and how the run
    starts ("warm"), or None and why it must be a new process."""
    address = os.environ.get(ENV)
    if not address:
        return None, "cold"
    if python != sys.executable:
        # The installed packages checked below are this interpreter's.
        return None, "cold (the child's interpreter is not the adapter's)"
    try:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.connect(address)
        lines = _Lines(connection)
        greeting = lines.readline(GREETING_TIMEOUT_S)
    except OSError as e:
        return None, f"cold (warm worker unreachable: {e.strerror or e})"
    try:
        theirs = json.loads(greeting)["identity"] if greeting else None
        if theirs is None:
            raise ValueError("no greeting")
        mismatch = _mismatch(theirs, identity(python, env))
        if mismatch:
            connection.close()
            return None, f"cold (warm worker differs: {mismatch})"
        job = {
            "kind": kind,
            "argv": argv,
            "cwd": os.fspath(cwd),
            "env": dict(env),
            "stdout": os.fspath(stdout),
            "stderr": os.fspath(stderr),
            "home": None if home is None else os.fspath(home),
        }
        connection.sendall((json.dumps(job) + "\n").encode("utf-8"))
        answer = json.loads(lines.readline(GREETING_TIMEOUT_S) or "null")
        if not isinstance(answer, dict) or "pid" not in answer:
            raise ValueError(f"no fork: {answer}")
    except (OSError, ValueError, KeyError, TypeError) as e:
        connection.close()
        return None, f"cold (warm worker failed: {e})"
    return WarmRun(lines, int(answer["pid"])), "warm"


def _mismatch(theirs: Mapping[str, Any], ours: Mapping[str, Any]) -> str:
    """The first part of the identities that differs ('' when none)."""
    for part in ("python", "adapter", "packages"):
        if theirs.get(part) != ours.get(part):
            return part
    env_theirs, env_ours = theirs.get("env", {}), ours["env"]
    differ = sorted(
        k for k in set(env_theirs) | set(env_ours) if env_theirs.get(k) != env_ours.get(k)
    )
    return f"environment {', '.join(differ)}" if differ else ""


# ------------------------------------------------------------------------ starting a worker


class Worker:
    """A running warm worker, started by the autopilot for one campaign."""

    def __init__(self, process: subprocess.Popen[bytes], folder: Path) -> None:
        self.process = process
        self.folder = folder
        self.address = os.fspath(folder / "socket")

    def environment(self) -> dict[str, str]:
        """What the adapter's processes need in their environment to use the worker."""
        return {ENV: self.address}

    def close(self, timeout_s: float = 30.0) -> None:
        """Stop taking runs; the worker ends once the forks in flight handed back their
        status (a measurement in flight is never cut short by the campaign's end)."""
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()  # the forks are in their own groups: they go on
            self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def start(python: str, environ: Mapping[str, str], preload: tuple[str, ...] = PRELOAD) -> Worker:
    """Start a worker with `python` in the environment a new child would get (`environ`, from
    runner.child_environment), importing `preload`; it ends when the returned Worker is
    closed or this process ends (its stdin closes)."""
    folder = Path(tempfile.mkdtemp(prefix="tl-warm-"))  # short: socket paths are limited
    # Its stdin is its lifeline: the worker ends once that pipe closes (this process ended).
    process = processes.start(
        [python, "-m", f"{__package__}.warm", os.fspath(folder / "socket"), *preload],
        cwd=folder,
        env=environ,
        log=folder / "worker.log",
        stdin_pipe=True,
    )
    deadline = time.monotonic() + 10.0
    while not (folder / "socket").exists() and process.poll() is None:
        if time.monotonic() > deadline:
            break
        time.sleep(0.01)
    return Worker(process, folder)


# ------------------------------------------------------------------------------- the worker


class _Server:
    def __init__(self, address: str) -> None:
        self.address = address
        self.home = Path(address).parent / "home"
        self.home.mkdir(exist_ok=True)
        # pypto opens its logs under $HOME at import: under the worker's own home, from where
        # each fork's files go to its run's home (`_hand_over_logs`).
        os.environ["HOME"] = os.fspath(self.home)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # Listening before the name appears: the starter takes the name as "ready", and a
        # connect between bind and listen would be refused (a cold run on a loaded host).
        self.listener.bind(f"{address}.new")
        self.listener.listen(64)
        os.rename(f"{address}.new", address)
        self.connections: dict[socket.socket, Any] = {}  # waiting for their job
        self.runs: dict[int, tuple[socket.socket, Any, str | None]] = {}  # pid -> conn, home
        self.greeting = b""
        self.killed: set[int] = set()
        self.open = True

    def serve(self, preload: list[str]) -> int | None:
        """Run until stdin closes and no fork is left; a fork returns its exit code here."""
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the campaign's to handle
        for module in preload:
            importlib.import_module(module)

        self.greeting = (
            json.dumps({"identity": identity(sys.executable, os.environ)}) + "\n"
        ).encode("utf-8")
        while self.open or self.runs:
            watched: list[Any] = [*self.connections]
            watched += [c for pid, (c, _, _) in self.runs.items() if pid not in self.killed]
            if self.open:
                watched += [self.listener, sys.stdin]
            ready = select.select(watched, [], [], 0.05)[0]
            for item in ready:
                if item is self.listener:
                    self._accept()
                elif item is sys.stdin:
                    if not os.read(sys.stdin.fileno(), 4096):
                        self.open = False  # the campaign ended: finish what runs, then go
                        self.listener.close()
                elif item in self.connections:
                    code = self._fork(item)
                    if code is not None:
                        return code  # in the fork: its run is over
                else:
                    self._client_gone(item)
            self._reap()
        # What it made (the socket, its home). The folder and its log are the starter's, who
        # may have been killed: an empty log says nothing, and goes with the folder; one that
        # says something (an import error, a traceback) stays for whoever looks.
        with contextlib.suppress(OSError):
            os.unlink(self.address)
        shutil.rmtree(self.home, ignore_errors=True)
        folder = Path(self.address).parent
        with contextlib.suppress(OSError):
            if (folder / "worker.log").stat().st_size == 0:
                (folder / "worker.log").unlink()
                folder.rmdir()
        return None

    def _accept(self) -> None:
        connection, _ = self.listener.accept()
        try:
            connection.sendall(self.greeting)
        except OSError:
            connection.close()
            return
        self.connections[connection] = connection.makefile("r", encoding="utf-8")

    def _fork(self, connection: socket.socket) -> int | None:
        stream = self.connections.pop(connection)
        try:
            job = json.loads(stream.readline() or "null")
        except (OSError, ValueError):
            job = None
        if not isinstance(job, dict):
            connection.close()  # the runner went away, or changed its mind (cold)
            return None
        pid = os.fork()
        if pid == 0:
            return _run_fork(job, self)
        with contextlib.suppress(OSError):
            os.setpgid(pid, pid)  # also done by the fork: whichever runs first
        self.runs[pid] = (connection, stream, job.get("home"))
        try:
            connection.sendall((json.dumps({"pid": pid}) + "\n").encode("utf-8"))
        except OSError:
            processes.kill_group(pid)
        return None

    def _client_gone(self, connection: socket.socket) -> None:
        # A running fork's runner sends nothing more: readable means it went away (killed).
        for pid, (conn, _, _) in self.runs.items():
            if conn is connection:
                processes.kill_group(pid)
                self.killed.add(pid)  # nobody enforces its limits or reads its result any more

    def _reap(self) -> None:
        while self.runs:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            connection, stream, home = self.runs.pop(pid)
            self.killed.discard(pid)
            if home is not None:
                self._hand_over_logs(pid, Path(home))
            with contextlib.suppress(OSError):
                code = os.waitstatus_to_exitcode(status)
                connection.sendall((json.dumps({"returncode": code}) + "\n").encode("utf-8"))
            stream.close()
            connection.close()

    def _hand_over_logs(self, pid: int, home: Path) -> None:
        logs = self.home / "ascend" / "log"
        for path in logs.rglob(f"*-{pid}_*"):
            target = home / "ascend" / "log" / path.relative_to(logs)
            with contextlib.suppress(OSError):
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(os.fspath(path), os.fspath(target))

    def close_in_fork(self) -> None:
        """Drop the worker's sockets in a fork (they stay open in the worker)."""
        self.listener.close()
        for connection in [*self.connections, *(c for c, _, _ in self.runs.values())]:
            connection.close()


def _run_fork(job: dict[str, Any], server: _Server) -> int:
    """In a fresh fork: become the process a new child would be, run the job, return its
    exit code (the caller ends the fork: `_exit_fork`)."""
    try:
        os.setpgid(0, 0)
        server.close_in_fork()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.chdir(job["cwd"])
        os.environ.clear()
        os.environ.update(job["env"])
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
        os.dup2(os.open(job["stdout"], flags, 0o644), 1)
        os.dup2(os.open(job["stderr"], flags, 0o644), 2)
        argv = [str(a) for a in job["argv"]]
    except Exception:  # noqa: BLE001 - the fork could not be set up: the runner sees exit 1
        traceback.print_exc()
        return 1
    if job["kind"] == "child":
        from . import child

        sys.argv = [child.__file__, *argv]
        sys.path[0] = os.getcwd()  # as `python -m` puts the working folder first
        return child.main(sys.argv)
    sys.argv = argv
    sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))  # as `python SCRIPT` does
    try:
        runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            return e.code or 0
        print(e.code, file=sys.stderr)
        return 1
    except BaseException:  # noqa: BLE001 - as the interpreter reports an uncaught error
        traceback.print_exc()
        return 1
    return 0


def _exit_fork(code: int) -> None:
    """End a fork as a process ends, less the interpreter's teardown of its modules (0.75 s
    with torch and pypto loaded; nothing observable): Python's exit handlers, the streams'
    flush, then C's exit, whose handlers and destructors pypto needs (it writes
    verify_result_brief.csv only then; os._exit would lose it)."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    ctypes.CDLL(None).exit(code)
    os._exit(code)  # not reached


def main(argv: list[str]) -> int:
    code = _Server(argv[1]).serve(argv[2:])
    if code is not None:
        _exit_fork(code)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
