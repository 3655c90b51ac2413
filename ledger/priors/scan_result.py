"""What scanning kernel sources found (`ledger.priors.scan`): each call's config values with
its file:line, the arguments skipped as not literal, and the files that could not be read."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from attrs import frozen

MODULE_SCOPE = "<module>"  # the scope of a call outside every function


@frozen
class KernelValue:
    """Config values that one call in a kernel source sets, and where."""

    path: str
    line: int
    scope: str  # the enclosing function ("outer.inner"), or <module>
    call: str  # the call's dotted name as written, e.g. "pypto.set_vec_tile_shapes"
    values: dict[str, Any]  # config key -> plain JSON value
    via: tuple[str, ...] = ()  # module constants the values were read from, "NAME (file:line)"

    @property
    def where(self) -> str:
        """file:line of the call."""
        return f"{self.path}:{self.line}"


@frozen
class Skipped:
    """An argument the scanner could not read as a literal, with why."""

    path: str
    line: int
    call: str
    reason: str

    @property
    def where(self) -> str:
        """file:line of the argument."""
        return f"{self.path}:{self.line}"


@frozen
class Unreadable:
    """A file the scanner could not read or parse."""

    path: str
    line: int | None
    reason: str

    @property
    def where(self) -> str:
        """file:line of the problem (file alone when no line is known)."""
        return self.path if self.line is None else f"{self.path}:{self.line}"


@frozen
class ScanResult:
    """What scanning kernel sources found, skipped, and could not read."""

    findings: tuple[KernelValue, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    errors: tuple[Unreadable, ...] = ()
    files: int = 0


def merge(results: Iterable[ScanResult]) -> ScanResult:
    """One ScanResult holding every result's findings, skips, errors and file count."""
    found: list[KernelValue] = []
    skipped: list[Skipped] = []
    errors: list[Unreadable] = []
    files = 0
    for result in results:
        found.extend(result.findings)
        skipped.extend(result.skipped)
        errors.extend(result.errors)
        files += result.files
    return ScanResult(tuple(found), tuple(skipped), tuple(errors), files)
