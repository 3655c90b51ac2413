"""Capturing who writes an event (the shell's clock, host and process; never used in the core)."""

from __future__ import annotations

import datetime as _dt
import os
import sys
from pathlib import Path

from ledger import __version__
from ledger.log.record import Provenance


def utc_now() -> str:
    """The current UTC time as ISO 8601 with microseconds and a Z suffix."""
    now = _dt.datetime.now(_dt.UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def capture(command: str | None = None, root: Path | str | None = None) -> Provenance:
    """Provenance of an event written now by this process for `command` (default: argv, the
    program by its name); with `root`, the command is portable (ledger/shell/portable.py)."""
    if command is None:
        command = " ".join([os.path.basename(sys.argv[0]) if sys.argv else "", *sys.argv[1:]])
    if root is not None:
        from ledger.shell.portable import portable

        command = portable(command, root)
    return Provenance(
        at=utc_now(),
        tool="tune-ledger",
        version=__version__,
        host=_host(),
        pid=os.getpid(),
        command=command,
    )


def _host() -> str:
    """This machine's name, as socket.gethostname() gives it (on POSIX the kernel's node
    name), without importing socket into every writing command."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket

    return socket.gethostname()
