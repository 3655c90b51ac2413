"""Running `tune-ledger` in-process the way the console script does (`ledger.cli.main`, which maps
errors to exit codes), plus a ledger snapshot to prove that a refused command wrote nothing."""

from __future__ import annotations

import json
import shlex
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from ledger.cli import main
from ledger.log.files import ledger_path

OP = "sm"
IMPL_TEXT = "def kernel(x):\n    return x\n"
BASE_CONFIG = '{"vec_tile_shape":[1,8,1,64]}'


@dataclass(frozen=True)
class Result:
    """What one command did: exit code, stdout and stderr."""

    code: int
    stdout: str
    stderr: str

    @property
    def json(self) -> dict[str, Any]:
        """The one JSON object on stdout (fails the test when there is not exactly one)."""
        lines = [line for line in self.stdout.splitlines() if line.strip()]
        assert len(lines) == 1, f"expected one JSON line, got {self.stdout!r} / {self.stderr!r}"
        value = json.loads(lines[0])
        assert isinstance(value, dict), value
        return value


class Cli:
    """`tune-ledger --root ROOT [--json] ARGS...` in this process, through `ledger.cli.main`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.invoked: list[list[str]] = []

    def __call__(self, *args: str, as_json: bool = True, key: str | None = None) -> Result:
        argv = ["--root", str(self.root)]
        if as_json:
            argv.append("--json")
        if key is not None:
            argv += ["--idempotency-key", key]
        argv += list(args)
        self.invoked.append(list(args))
        return run_main(argv)

    def ok(self, *args: str, key: str | None = None) -> dict[str, Any]:
        """Run with --json; fail the test unless it exits 0; return its JSON object."""
        result = self(*args, key=key)
        assert result.code == 0, f"{args}: exit {result.code}: {result.stdout} {result.stderr}"
        return result.json

    def ledger(self, op: str = OP) -> Path:
        """The op's events.jsonl under this root."""
        return ledger_path(self.root, op)

    def events(self, op: str = OP) -> list[dict[str, Any]]:
        """The ledger's records, in file order."""
        return [json.loads(line) for line in self.ledger(op).read_text("utf-8").splitlines()]

    def types(self, op: str = OP) -> list[str]:
        """The ledger's event types, in file order."""
        return [record["type"] for record in self.events(op)]

    def script(self, name: str, body: str) -> str:
        """Write a Python script under the root; return a shell command that runs it."""
        path = self.root / name
        path.write_text(textwrap.dedent(body), "utf-8")
        return f"{shlex.quote(sys.executable)} {shlex.quote(str(path))}"


def run_main(argv: list[str], env: dict[str, str] | None = None) -> Result:
    """`ledger.cli.main(argv)` with stdout and stderr captured; SystemExit becomes the code."""
    runner = CliRunner()
    code = 0
    with runner.isolation(env=env) as streams:
        try:
            main(argv)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        stdout, stderr = streams[0], streams[1]
        out = stdout.getvalue().decode("utf-8", errors="replace")
        err = stderr.getvalue().decode("utf-8", errors="replace")
    return Result(code=code, stdout=out, stderr=err)


def run_process(root: Path, *args: str) -> Result:
    """`tune-ledger --root ROOT --json ARGS` as its own process, for input that could make a
    broken command hang (a FIFO) or read without end (/dev/zero): stopped after 60 s, and
    limited to 2 GiB of memory, so a regression fails the test instead of the machine."""
    import resource
    import subprocess

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    done = subprocess.run(
        [sys.executable, "-m", "ledger", "--root", str(root), "--json", *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        preexec_fn=limited,
        check=False,
    )
    return Result(code=done.returncode, stdout=done.stdout, stderr=done.stderr)


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under custom/ (the lock files aside) and its bytes."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in _files(root / "custom")
        if not p.name.endswith(".lock")
    }


def _files(folder: Path) -> Iterator[Path]:
    return (p for p in sorted(folder.rglob("*")) if p.is_file()) if folder.exists() else iter(())


# A fake verifier, run in --root: it names the kernel it ran (R11), as a real verifier does.
MEASURE = """
    import hashlib, json, sys
    time_us = float(sys.argv[1])
    ok = len(sys.argv) < 3 or sys.argv[2] != "bad"
    kernel = hashlib.sha256(open("custom/sm/sm_impl.py", "rb").read()).hexdigest()
    print("verifier log line before the result")
    print(json.dumps({"times_us": [time_us, time_us, time_us], "tool": "fake-sim",
                      "tool_version": "1.0", "layout_exit": 0, "util_pct": 50.0,
                      "bubble_pct": 20.0, "impl_digest": kernel,
                      "outputs": [{"name": "y", "all_close": ok, "max_diff": 0.0}]}))
"""


def new_op(cli: Cli, op: str = OP) -> None:
    """An op with a ledger and an implementation file."""
    (cli.root / "custom" / op).mkdir(parents=True, exist_ok=True)
    (cli.root / "custom" / op / f"{op}_impl.py").write_text(IMPL_TEXT, "utf-8")
    cli.ok("init", op)


def activate(cli: Cli, op: str = OP) -> None:
    """An op whose activation passed."""
    new_op(cli, op)
    cli.ok("evidence", "compare", op, "--output", "y=true")
    cli.ok("evidence", "layout", op, "--exit-code", "0")
    cli.ok("activate", op)


def frontend(cli: Cli, op: str = OP) -> None:
    """An activated op with a target sheet, in stage frontend with point F-1 open."""
    activate(cli, op)
    cli.ok(
        "target",
        op,
        "--baseline",
        "100us",
        "--shape",
        "32x32x1x256",
        "--target",
        "50us",
        "--target-source",
        "spec",
        "--config",
        BASE_CONFIG,
        "--tool",
        "sim",
    )
    cli.ok("skill", "load", op, "pypto-op-perf-tune")
    cli.ok("stage", "enter", op, "frontend")
    cli.ok("skill", "load", op, "tune-frontend")
    cli.ok("point", "open", op, "F-1")


def pending(cli: Cli, op: str = OP) -> str:
    """An op in frontend with one candidate pending; return its attempt id."""
    frontend(cli, op)
    started = cli.ok(
        "candidate",
        op,
        "--config",
        '{"vec_tile_shape":[1,8,1,32]}',
        "--prior",
        "kernels/softmax.py:12",
    )
    return str(started["attempt"])


def ambiguous_ledger(root: Path) -> tuple[str, str]:
    """Op `softmax` whose two attempts share their first 4 characters (the second pending).

    Content ids cannot be chosen, so the second candidate's prior text is varied until its id
    starts like the first's (about 65,000 hashes).
    """
    from driver import PROVENANCE, candidate, in_point, vec

    from ledger.log import codec
    from ledger.log.files import ledger_path
    from ledger.log.record import Draft, seal, to_line, to_record

    driver = in_point()
    first = driver.start(candidate(prior="prior 0", vec_tile_shape=vec(32)))
    driver.verify(first, 90.0)
    payload = driver.decision(candidate(prior="prior", vec_tile_shape=vec(48))).events[0]
    parents, lamport = (driver.events[-1].id,), driver.events[-1].lamport + 1
    record = to_record(
        seal(Draft(payload=payload, provenance=PROVENANCE), parents, lamport, (0, 1))[0]
    )
    for number in range(1, 10_000_000):
        record["payload"]["prior"] = f"prior {number}"
        if codec.encode_line(record)[0][:4] == first[:4]:
            break
    second = driver.start(candidate(prior=f"prior {number}", vec_tile_shape=vec(48)))
    assert second[:4] == first[:4]
    path = ledger_path(root, "softmax")
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(to_line(e) for e in driver.events))
    return first, second
