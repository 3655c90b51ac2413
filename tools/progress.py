"""What a person sees while a campaign runs: one line per step, and a live line during a run.

On a terminal, `rich` keeps a live status line under the log (spinner, what runs, the PyPTO
phase the run reports through tools/pypto/phase.py, elapsed seconds); elsewhere (CI logs, a
pipe) each step is one plain line and a run prints nothing until it ends.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from rich.console import Console

from .pypto import phase


class Progress:
    """The campaign's output: plain lines, plus a live line when the output is a terminal."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(highlight=False)
        self.live = self.console.is_terminal
        self.best_us: float | None = None

    def say(self, text: str) -> None:
        """One line of the campaign's log."""
        self.console.print(text, markup=False, soft_wrap=True)

    def attempt(
        self,
        label: str,
        verdict: str,
        failure: str | None,
        time_us: float | None,
        best_us: float | None,
    ) -> None:
        """One measured attempt: its number, stage, point and change, verdict, best so far."""
        measured = f", {time_us:.2f} µs" if isinstance(time_us, int | float) else ""
        why = f" ({failure})" if failure else ""
        best = f"; best so far {best_us:.2f} µs" if best_us is not None else ""
        self.say(f"  {label}: {verdict}{why}{measured}{best}")

    @contextlib.contextmanager
    def running(self, what: str, phase_file: Path) -> Iterator[None]:
        """Show `what` with the run's phase and elapsed time while the block runs (terminal)."""
        with contextlib.suppress(OSError):
            phase_file.unlink()
        if not self.live:
            yield
            return
        started = time.monotonic()
        done = threading.Event()
        with self.console.status(f"{what}: starting PyPTO") as status:

            def refresh() -> None:
                while not done.wait(0.5):
                    now = phase.read(phase_file) or "starting PyPTO"
                    status.update(f"{what}: {now} ({time.monotonic() - started:.0f} s)")

            ticker = threading.Thread(target=refresh, daemon=True)
            ticker.start()
            try:
                yield
            finally:
                done.set()
                ticker.join()
