"""Fixtures shared by the CLI tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_harness import Cli


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    """A `tune-ledger` runner whose --root is a fresh temporary folder."""
    return Cli(tmp_path)
