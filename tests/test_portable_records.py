"""Portable records (issue 27.7): nothing recorded names a path of the machine, so a campaign
copied (or cloned) to another folder audits, checks, renders and reports the same; a ledger
written before, with absolute paths, still replays and names its files relative to the root."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from cli_harness import OP, Cli
from driver import REPORTED, Driver
from kernel_campaign import candidate, measured_op

from ledger.log.files import ledger_path
from ledger.log.record import to_line
from ledger.schema.events import OutputCheck
from ledger.shell.portable import portable
from stages import commands as cmd


def _views(cli: Cli) -> dict[str, object]:
    return {
        "audit": cli.ok("audit", OP),
        "check": cli.ok("check", OP),
        "status": cli.ok("status", OP),
        "memory": (cli.root / "custom" / OP / "MEMORY.md").read_bytes(),
    }


def test_a_campaign_copied_to_another_folder_means_the_same(tmp_path: Path) -> None:
    """Measured by the ledger in one root, copied to another: audit, check, status and
    MEMORY.md are identical, a report written in each is identical, and no event names
    either folder or this interpreter."""
    first = measured_op(tmp_path / "first")
    candidate(first, 16)
    candidate(first, 32)
    copied = Cli(tmp_path / "elsewhere" / "second")
    shutil.copytree(first.root, copied.root)
    assert _views(copied) == _views(first)
    assert copied.ok("render", OP)["changed"] is False
    for cli in (first, copied):
        text = cli.ledger().read_text("utf-8")
        assert str(tmp_path) not in text
        assert sys.executable not in text
        commands = [json.loads(line)["provenance"]["command"] for line in text.splitlines()]
        assert "tune-ledger --root {root} --json measure sm" in commands
    measured = [e for e in first.events() if e["type"] == "attempt.measured"]
    assert measured[0]["payload"]["origin"]["command"] == (
        "{python} {root}/verifier.py {root}/custom/sm '{\"vec_tile_shape\":[1,16,1,64]}'"
    )
    reports = []
    for cli in (first, copied):
        cli.ok("report", OP)
        reports.append((cli.root / "custom" / OP / f"{OP}_tuning_report.md").read_bytes())
    assert reports[0] == reports[1]


def test_a_command_is_recorded_as_its_template_plus_values(tmp_path: Path) -> None:
    """The root in any spelling (as given, absolute, links resolved) is `{root}`, the
    interpreter `{python}`; a folder that only starts like the root, and every other value,
    stay as they were."""
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    python = sys.executable
    assert (
        portable(f"{python} {link}/v.py --root={real} file:{link}/perf x{real}", link)
        == f"{{python}} {{root}}/v.py --root={{root}} file:{{root}}/perf x{real}"
    )
    assert portable(f"{real}-other/x '{{\"a\":1}}'", real) == f"{real}-other/x '{{\"a\":1}}'"


def test_an_old_ledger_with_absolute_paths_still_replays_relative(tmp_path: Path) -> None:
    """Events written before 27.7 by hand-built commands (an --impl under the root, recorded
    absolute on the machine that wrote them): audit is clean, and MEMORY.md names the kernel
    `custom/sm/sm_impl.py`, not the other machine's path."""
    old = "/home/someone/repo/custom/sm/sm_impl.py"
    driver = Driver()
    driver.run(cmd.Init(op=OP))
    for step in (
        cmd.RecordCompare(
            outputs=(OutputCheck(name="y", all_close=True),),
            impl_path=old,
            impl_digest="a" * 64,
            origin=REPORTED,
        ),
        cmd.RecordLayout(exit_code=0, impl_path=old, impl_digest="a" * 64, origin=REPORTED),
    ):
        driver.run(step)
    path = ledger_path(tmp_path, OP)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(to_line(e) for e in driver.events))
    assert old in path.read_text("utf-8")
    cli = Cli(tmp_path)
    cli.ok("render", OP)
    memory = (path.parent / "MEMORY.md").read_text("utf-8")
    assert "custom/sm/sm_impl.py" in memory and "/home/someone" not in memory
    assert cli.ok("audit", OP)["clean"] is True
    # Appending goes on from there, and what is appended is portable.
    cli.ok("note", OP, "--text", "copied from another machine")
    assert str(tmp_path) not in path.read_text("utf-8")
