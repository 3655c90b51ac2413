"""The built wheel works outside this repository, as a user installs it (not editable, in a
fresh virtual environment, with the `mcp` extra and the dependencies pip resolves): it ships
every package and data file of the checkout, the agent's MCP registration starts a server that
the SDK's own client drives, `agent-setup` and `new-op` write their files, and with the
`pypto` extra's packages the scaffolded op is measured by the shipped adapter (real PyPTO).
No `tools` package of this checkout is importable there."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from ledger.cli import agent_setup

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
# Files of the package folders that stay in the checkout on purpose; every other tracked file
# under ledger/, stages/ and tools/ must be in the wheel (tools/ as tune_ledger_tools/).
CHECKOUT_ONLY = (
    "tools/bench/",
    "tools/test.sh",
    "tools/oldest_numpy.sh",
    "tools/pypto/README.md",
)
# What a kernel repository gets from the wheel: its packages, and no `tools` package.
PACKAGES = ("ledger", "stages", "tune_ledger_tools")


def _run(
    argv: list[str], cwd: Path, env: dict[str, str], timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def _outside_env(venv: Path) -> dict[str, str]:
    """This environment without PYTHONPATH (no checkout importable), the venv's scripts first."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from a copy of the checkout's tracked files (a build in the checkout
    would ship whatever an earlier build left in build/), with this environment's setuptools
    (offline)."""
    source = tmp_path_factory.mktemp("source")
    for name in _tracked_files():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, source / name)
    dist = tmp_path_factory.mktemp("dist")
    built = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(dist),
            str(source),
        ],
        dist,
        _outside_env(Path(sys.executable).parent.parent),
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (found,) = dist.glob("tune_ledger-*.whl")
    return found


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel and its `mcp` extra, installed as a user would (pip resolves
    the dependencies from its index and cache), outside the checkout."""
    target = tmp_path_factory.mktemp("venv") / "env"
    env = _outside_env(target)
    made = _run([sys.executable, "-m", "venv", "--without-pip", str(target)], target.parent, env)
    assert made.returncode == 0, made.stderr
    installed = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(target / "bin" / "python"),
            "install",
            "-q",
            f"{wheel}[mcp]",
        ],
        target.parent,
        env,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return target


def _tracked_files(*folders: str) -> list[str]:
    """The checkout's tracked files (under `folders`) present in the work tree."""
    listed = _run(["git", "ls-files", "-z", *folders], REPO, dict(os.environ))
    assert listed.returncode == 0, listed.stderr
    return [name for name in listed.stdout.split("\0") if name and (REPO / name).is_file()]


def test_the_wheel_ships_every_package_and_data_file_of_the_checkout(wheel: Path) -> None:
    """Every tracked module and data file under ledger/, stages/ and tools/ is in the wheel
    (tools/ as tune_ledger_tools/), except the few named as checkout-only; nothing else is."""
    with zipfile.ZipFile(wheel) as archive:
        shipped = {n for n in archive.namelist() if not n.startswith("tune_ledger-")}
    expected = set()
    for name in _tracked_files("ledger", "stages", "tools"):
        if name.startswith(CHECKOUT_ONLY):
            continue
        expected.add("tune_ledger_tools/" + name[len("tools/") :] if name[:6] == "tools/" else name)
    assert sorted(expected - shipped) == [], "tracked files missing from the wheel"
    assert sorted(shipped - expected) == [], "files in the wheel that the checkout does not track"
    assert not any(n.startswith(("tools/", "tune_ledger_tools/bench/")) for n in shipped)


def test_agent_setup_and_new_op_write_their_files_from_the_installed_wheel(
    venv: Path, tmp_path: Path
) -> None:
    """`agent-setup` writes each client's shipped files byte for byte, `new-op` scaffolds an op
    naming the installed adapter, and the checkout's `tools` is not importable."""
    env = _outside_env(venv)
    probe = _run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import importlib.util as u; print([u.find_spec(n) is not None for n in "
            f"{[*PACKAGES, 'tools']!r}])",
        ],
        tmp_path,
        env,
    )
    assert probe.stdout.strip() == "[True, True, True, False]", probe.stdout + probe.stderr
    for client in ("claude", "opencode"):
        done = _run(["tune-ledger", "--json", "agent-setup", "--client", client], tmp_path, env)
        assert done.returncode == 0, done.stdout + done.stderr
        source = REPO / "tools" / "agents" / client
        files = sorted(p.relative_to(source).as_posix() for p in source.rglob("*") if p.is_file())
        # Besides the shipped files: the client's settings, with the permission rules merged in
        # (Claude Code's .claude/settings.json; opencode's is its shipped opencode.json).
        settings = agent_setup.SETTINGS[client]
        assert sorted(json.loads(done.stdout)["written"]) == sorted({*files, settings})
        for name in files:
            if name != settings:
                assert (tmp_path / name).read_bytes() == (source / name).read_bytes(), name
        assert "permission" in (tmp_path / settings).read_text("utf-8")
    made = _run(["tune-ledger", "--json", "new-op", "probe"], tmp_path, env)
    assert made.returncode == 0, made.stdout + made.stderr
    op_dir = tmp_path / "custom" / "probe"
    assert sorted(p.name for p in op_dir.iterdir()) == [
        "SPEC.md",
        "layout_check.py",
        "probe_golden.py",
        "probe_impl.py",
    ]
    assert "tune_ledger_tools.pypto.run" in (op_dir / "SPEC.md").read_text()
    assert "def build_kernel" in (op_dir / "probe_impl.py").read_text()


def test_the_registered_mcp_server_serves_the_sdk_client_from_the_installed_wheel(
    venv: Path, tmp_path: Path
) -> None:
    """The server that agent-setup's `.mcp.json` registers starts from the wheel; the SDK's
    client lists its tools and calls `init` and `status` on a new op, which lands in the
    ledger file."""
    env = _outside_env(venv)
    done = _run(["tune-ledger", "--json", "agent-setup", "--client", "claude"], tmp_path, env)
    assert done.returncode == 0, done.stdout + done.stderr
    server = json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]["tune-ledger"]
    command = shutil.which(server["command"], path=env["PATH"])
    assert command == str(venv / "bin" / "tune-ledger")
    results: dict[str, Any] = {}

    async def session() -> None:
        params = StdioServerParameters(
            command=command, args=server["args"], env=env, cwd=str(tmp_path)
        )
        with anyio.fail_after(120):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
                await client.initialize()
                results["tools"] = {tool.name for tool in (await client.list_tools()).tools}
                for name in ("init", "status"):
                    called = await client.call_tool(name, {"op": "probe"})
                    assert not called.is_error, called.content
                    results[name] = called.structured_content

    anyio.run(session)
    assert {"init", "status", "try", "measure", "verify"} <= results["tools"]
    assert results["status"]["op"] == "probe"
    ledger = (tmp_path / "custom" / "probe" / "events.jsonl").read_text().splitlines()
    assert json.loads(ledger[0])["type"] == "op.initialized"


def test_a_kernel_repository_scaffolds_and_measures_with_the_wheel(
    venv: Path, tmp_path: Path
) -> None:
    """In a new git repo: new-op, activation evidence and the measured baseline (--from-spec),
    with the `pypto` extra's packages (pypto, torch) of this environment behind the venv's."""
    pytest.importorskip("pypto")
    env = _outside_env(venv)
    # pypto and torch come from this environment (a copy of torch is gigabytes): its packages
    # as a plain path, whose .pth files (an editable install of this checkout among them) are
    # not processed, so `tools` and this checkout's `ledger` stay out of reach.
    env["PYTHONPATH"] = sysconfig.get_paths()["purelib"]
    repo = tmp_path / "kernels"
    repo.mkdir()
    assert _run(["git", "init", "-q"], repo, env).returncode == 0

    def tune_ledger(*args: str) -> dict[str, Any]:
        done = _run(["tune-ledger", "--json", *args], repo, env, timeout=900)
        assert done.returncode == 0, done.stdout + done.stderr
        result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return result

    tune_ledger("new-op", "probe")
    spec = repo / "custom" / "probe" / "SPEC.md"
    text = spec.read_text()
    spec.write_text(text.replace('"--verify-passes", "last"', '"--verify-passes", "graph"'))
    assert tune_ledger("check-op", "probe")["violations"] == []
    python = str(venv / "bin" / "python")
    tune_ledger("init", "probe")
    # SPEC.md declares the verifier, so only its own runs activate (issue 27: an ad-hoc --run
    # is refused): the ledger runs the verifier and the layout check the scaffold wrote.
    tune_ledger("evidence", "compare", "probe", "--from-spec", "--python", python)
    tune_ledger("evidence", "layout", "probe", "--from-spec", "--python", python)
    tune_ledger("activate", "probe")
    sheet = tune_ledger("target", "probe", "--from-spec", "--python", python)
    assert sheet["baseline_us"] > 0 and sheet["target_us"] == 2.0
    audit = _run(["tune-ledger", "--json", "audit", "probe"], repo, env)
    report = json.loads(audit.stdout)
    assert audit.returncode == 0 and report["clean"], audit.stdout
    # the compare, the layout check and the baseline: each run by the ledger itself
    assert report["ops"][0]["provenance"] == {
        "artefact": 0,
        "measured": 3,
        "ran": 0,
        "reported": 0,
        "unbound": 0,
    }
