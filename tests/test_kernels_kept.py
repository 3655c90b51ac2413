"""Kernels kept (issue 27.6): every kernel the ledger binds a measurement or evidence to is kept
in custom/OP/kernels/<sha256>.py; `kernel restore` and `kernel diff` read them back, `audit`
checks each against its name, and `status` names the command that undoes a rolled-back
algorithm attempt."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from cli_harness import OP, Cli, run_main
from kernel_campaign import KERNEL, candidate, impl, measured_op, to_algorithm

FASTER_TILE = 16


def _kept(cli: Cli) -> dict[str, bytes]:
    folder = cli.root / "custom" / OP / "kernels"
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def rolled_back(tmp_path: Path) -> tuple[Cli, str, str]:
    """A campaign whose algorithm attempt was rolled back (its kernel is slower), the kernel
    file still holding that attempt's kernel; (cli, the best attempt, the algorithm attempt)."""
    cli = measured_op(tmp_path / "root")
    best = candidate(cli, FASTER_TILE)
    assert best["verdict"] == "adopt"
    to_algorithm(cli)
    impl(cli).write_text(KERNEL.replace("time_us: 20", "time_us: 30"), "utf-8")
    algorithm = cli.ok("try", OP, "--algorithm", "unfused rows", "--impl", str(impl(cli)))[
        "attempt"
    ]
    assert cli.ok("measure", OP)["verdict"] == "rollback"
    return cli, str(best["attempt"]), str(algorithm)


def test_every_bound_kernel_is_kept_under_its_digest(rolled_back: tuple[Cli, str, str]) -> None:
    """The activation's kernel and the algorithm attempt's, each once, named by its sha256;
    the ledger still audits clean with them."""
    cli, _best, _algorithm = rolled_back
    slower = KERNEL.replace("time_us: 20", "time_us: 30").encode()
    assert _kept(cli) == {
        f"{_sha(KERNEL.encode())}.py": KERNEL.encode(),
        f"{_sha(slower)}.py": slower,
    }
    assert cli.ok("audit", OP)["clean"] is True


def test_status_names_the_restore_and_restore_undoes_the_rolled_back_attempt(
    rolled_back: tuple[Cli, str, str],
) -> None:
    """After the rollback, status says `tune-ledger kernel restore sm`; that command writes the
    best's kernel back (appending nothing), and the next attempt is allowed again."""
    cli, best, _algorithm = rolled_back
    warnings = cli.ok("status", OP)["warnings"]
    assert len(warnings) == 1 and f"`tune-ledger kernel restore {OP}`" in warnings[0]
    events = cli.ledger().read_bytes()
    restored = cli.ok("kernel", "restore", OP)
    assert restored == {
        "op": OP,
        "attempt": best,
        "impl_digest": _sha(KERNEL.encode()),
        "path": f"custom/{OP}/{OP}_impl.py",
        "changed": True,
    }
    assert impl(cli).read_text("utf-8") == KERNEL
    assert cli.ledger().read_bytes() == events
    assert cli.ok("status", OP)["warnings"] == []
    assert cli.ok("kernel", "restore", OP)["changed"] is False


def test_restore_of_one_attempt_and_the_diff_of_two(rolled_back: tuple[Cli, str, str]) -> None:
    """`--attempt` restores that attempt's kernel; `kernel diff A B` is the unified diff of
    the two kernels, `best` naming the best's; the same kernel twice differs in nothing."""
    cli, best, algorithm = rolled_back
    cli.ok("kernel", "restore", OP)
    assert cli.ok("kernel", "restore", OP, "--attempt", algorithm[:6])["attempt"] == algorithm
    assert "time_us: 30" in impl(cli).read_text("utf-8")
    diff = cli.ok("kernel", "diff", OP, best, algorithm)
    assert diff["same"] is False
    assert diff["diff"].splitlines()[:2] == [
        f"--- {best} ({_sha(KERNEL.encode())[:12]})",
        f"+++ {algorithm} ({diff['b']['impl_digest'][:12]})",
    ]
    assert "-    # time_us: 20" in diff["diff"] and "+    # time_us: 30" in diff["diff"]
    assert cli.ok("kernel", "diff", OP, "best", best)["diff"] == ""
    human = cli("kernel", "diff", OP, best, algorithm, as_json=False)
    assert human.code == 0 and "+    # time_us: 30" in human.stdout


def test_a_tampered_kept_kernel_fails_audit_and_restore_with_exit_7(
    rolled_back: tuple[Cli, str, str],
) -> None:
    """An edited file under kernels/ is named by audit (exit 7) and refused by restore (exit
    7), which writes nothing."""
    cli, _best, _algorithm = rolled_back
    kept = cli.root / "custom" / OP / "kernels" / f"{_sha(KERNEL.encode())}.py"
    kept.write_text(KERNEL.replace("20", "2"), "utf-8")
    audited = cli("audit", OP)
    assert audited.code == 7
    name = f"custom/{OP}/kernels/{kept.name}"
    assert name in audited.json["error"] and "was edited" in audited.json["error"]
    before = impl(cli).read_bytes()
    refused = cli("kernel", "restore", OP)
    assert (refused.code, refused.json["kind"]) == (7, "damaged")
    assert name in refused.json["error"]
    assert impl(cli).read_bytes() == before


def test_restore_never_writes_through_a_link(
    rolled_back: tuple[Cli, str, str], tmp_path: Path
) -> None:
    """An OP_impl.py that is a link out of the root is refused (exit 2); its target is kept."""
    cli, _best, _algorithm = rolled_back
    outside = tmp_path / "outside.py"
    outside.write_text("elsewhere\n", "utf-8")
    impl(cli).unlink()
    os.symlink(outside, impl(cli))
    assert cli("kernel", "restore", OP).code == 2
    assert outside.read_text("utf-8") == "elsewhere\n"


def test_a_kernel_never_kept_is_refused_with_the_way_back(
    rolled_back: tuple[Cli, str, str],
) -> None:
    """A ledger older than the store (the kept file gone): restore says so, exit 2."""
    cli, _best, _algorithm = rolled_back
    (cli.root / "custom" / OP / "kernels" / f"{_sha(KERNEL.encode())}.py").unlink()
    refused = cli("kernel", "restore", OP)
    assert refused.code == 2 and "is not kept" in refused.json["error"]
    assert "git" in refused.json["next"]


def test_the_tools_restore_and_diff_as_the_cli_does(rolled_back: tuple[Cli, str, str]) -> None:
    """`kernel_restore` and `kernel_diff` over MCP run the same commands."""
    pytest.importorskip("mcp")
    import json

    from ledger.mcp.invoke import Invoker
    from ledger.mcp.reads import ReadTools
    from ledger.mcp.steps import StepTools

    cli, best, algorithm = rolled_back
    invoker = Invoker(cli.root)
    restored = StepTools(invoker).kernel_restore(OP)
    assert not restored.is_error
    assert json.loads(restored.content[0].text)["attempt"] == best  # type: ignore[union-attr]
    assert impl(cli).read_text("utf-8") == KERNEL
    diffed = ReadTools(invoker).kernel_diff(OP, best, algorithm)
    assert "+    # time_us: 30" in json.loads(diffed.content[0].text)["diff"]  # type: ignore[union-attr]
    unknown = StepTools(invoker).kernel_restore(OP, attempt="ffffffff")
    assert unknown.is_error


def test_kernel_needs_an_op_with_a_ledger(tmp_path: Path) -> None:
    """No ledger: exit 2, as every command that reads one."""
    assert run_main(["--root", str(tmp_path), "--json", "kernel", "restore", OP]).code == 2
