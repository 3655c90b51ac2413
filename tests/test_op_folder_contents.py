"""After campaign steps, as processes and in-process, the op folder holds only what people
commit (the ledger, MEMORY.md, the report, the kernels it bound, their own files) and the
ledger's lock: nothing derived from the ledger is kept beside it (issue 26: no
`.tune-ledger-cache`)."""

from __future__ import annotations

import re

from cli_harness import OP, Cli, frontend, run_process


def test_the_op_folder_holds_only_committed_files_and_the_lock(cli: Cli) -> None:
    frontend(cli)
    attempt = cli.ok("try", OP, "--set", "unroll_list=[2]")["attempt"]
    cli.ok("verify", OP, attempt, "--output", "y=true", "--layout-exit", "0", "--time", "90us")
    for args in (("status", OP), ("resume", OP), ("log", OP, "--limit", "5"), ("priors", OP)):
        assert run_process(cli.root, *args).code == 0, args
    assert run_process(cli.root, "note", OP, "--text", "a note").code == 0
    assert run_process(cli.root, "report", OP).code == 0
    folder = cli.root / "custom" / OP
    found = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))
    kernels = [name for name in found if name.startswith("kernels")]
    assert kernels[0] == "kernels"
    assert all(re.fullmatch(r"kernels/[0-9a-f]{64}\.py", name) for name in kernels[1:]), kernels
    found = [name for name in found if not name.startswith("kernels")]
    assert found == sorted(
        [
            "MEMORY.md",
            "events.jsonl",
            "events.jsonl.lock",
            f"{OP}_impl.py",  # the kernel, the user's own file
            f"{OP}_tuning_report.md",
            f"{OP}_tuning_report.svg",
        ]
    ), found
