"""The op-folder contract of docs/OP_FOLDER.md, checked: each violation with its file and fix.

Reads the folder's files (the kernel and golden with `ast`, never importing them) and may run
its layout check as a process; never imports pypto or torch.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from attrs import frozen

from ledger.domain.manifest import parse_manifest, read_front_matter
from ledger.errors import BadInput
from ledger.log import codec
from ledger.schema.shared_methods import SharedValue

IMPL_NAMES = ("INPUT_NAMES", "OUTPUT_NAMES", "DTYPES", "resolve_config", "build_kernel")
GOLDEN_NAMES = ("make_inputs", "golden")
LAYOUT_TIMEOUT_S = 120.0


@frozen(repr=False, eq=False)
class Violation(SharedValue):
    """One way the folder breaks the contract."""

    file: str
    problem: str
    fix: str

    def line(self) -> str:
        """The violation as one line of text."""
        return f"{self.file}: {self.problem} (fix: {self.fix})"


def adapter_folder() -> tuple[str, Path] | None:
    """The importable package holding the PyPTO adapter (the wheel's `tune_ledger_tools`, else
    this checkout's `tools`) and its own folder; top-level lookups import nothing."""
    for name in ("tune_ledger_tools", "tools"):
        found = importlib.util.find_spec(name)
        for folder in list(found.submodule_search_locations or []) if found else []:
            if (Path(folder) / "pypto" / "run.py").is_file():
                return name, Path(folder).resolve()
    return None


def adapter_package() -> tuple[str, Path] | None:
    """The adapter's package name and the folder to put on PYTHONPATH for it."""
    found = adapter_folder()
    return None if found is None else (found[0], found[1].parent)


def _defined(path: Path) -> set[str]:
    """Module-level names a file assigns or defines."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        for target in [*getattr(node, "targets", []), getattr(node, "target", None)]:
            if isinstance(target, ast.Name):
                names.add(target.id)
    return names


def check(op_dir: Path, op: str, run_layout: bool = True) -> list[Violation]:
    """Every violation of the contract by `op_dir` (empty when the folder follows it)."""
    rel = f"custom/{op}"
    found: list[Violation] = []
    spec = op_dir / "SPEC.md"
    if not op_dir.is_dir():
        return [Violation(rel, "no such op folder", f"tune-ledger new-op {op}")]
    if not spec.is_file():
        return [Violation(f"{rel}/SPEC.md", "missing", f"tune-ledger new-op {op} writes one")]
    text = spec.read_text(encoding="utf-8")
    try:
        manifest = parse_manifest(text, f"{rel}/SPEC.md")
        front = read_front_matter(text, f"{rel}/SPEC.md")
    except BadInput as e:
        return [Violation(f"{rel}/SPEC.md", e.message, e.hint or "see docs/OP_FOLDER.md")]
    found += _manifest_violations(rel, op, front, manifest.verifier is not None)
    if not manifest.knobs:
        found.append(
            Violation(f"{rel}/SPEC.md", "declares no knobs", "add `knobs:` (stage, kind, default)")
        )
    for name, needed, fix in (
        (f"{op}_impl.py", IMPL_NAMES, "define it (docs/OP_FOLDER.md, 'What the impl defines')"),
        (
            f"{op}_golden.py",
            GOLDEN_NAMES,
            "define it (docs/OP_FOLDER.md, 'What the golden defines')",
        ),
    ):
        path = op_dir / name
        if not path.is_file():
            found.append(
                Violation(
                    f"{rel}/{name}", "missing", f"tune-ledger new-op writes a skeleton; {fix}"
                )
            )
            continue
        try:
            defined = _defined(path)
        except SyntaxError as e:
            found.append(
                Violation(
                    f"{rel}/{name}:{e.lineno}", f"not valid Python ({e.msg})", "fix the syntax"
                )
            )
            continue
        for missing in [n for n in needed if n not in defined]:
            found.append(Violation(f"{rel}/{name}", f"does not define {missing}", fix))
    layout = op_dir / "layout_check.py"
    if not layout.is_file():
        found.append(
            Violation(
                f"{rel}/layout_check.py", "missing", "copy the one `tune-ledger new-op` writes"
            )
        )
    elif run_layout and not found:
        found += _layout_violations(rel, layout, manifest.filled(manifest.baseline_config))
    return found


def _manifest_violations(
    rel: str, op: str, front: dict[str, object], verifier: bool
) -> list[Violation]:
    where = f"{rel}/SPEC.md"
    found = []
    if front.get("op_name") != op:
        found.append(
            Violation(
                where,
                f"op_name is {front.get('op_name')!r}, the folder is {op!r}",
                f"set `op_name: {op}`",
            )
        )
    for key, fix in (
        ("supported_dtypes", 'e.g. supported_dtypes: ["fp32"]'),
        ("p0_shapes", "e.g. p0_shapes: [[32, 32, 1, 256]]"),
        ("tolerance", 'e.g. tolerance: {"rtol": 1.0e-5, "atol": 1.0e-6}'),
        ("perf_target", 'e.g. perf_target: {"time_us": 5.0, "metric": "max_work_time_us"}'),
        ("baseline_config", "the config the baseline is measured with"),
    ):
        if front.get(key) in (None, [], {}):
            found.append(Violation(where, f"declares no {key}", fix))
    if not verifier:
        found.append(
            Violation(
                where,
                "declares no verifier",
                "add `verifier: {command: [...]}` (docs/OP_FOLDER.md)",
            )
        )
    return found


def _layout_violations(rel: str, layout: Path, config: dict[str, object]) -> list[Violation]:
    """Run the layout check as activation does; a non-zero exit is a violation."""
    package = adapter_package()
    paths = [str(package[1])] if package else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*paths, os.environ.get("PYTHONPATH", "")])}
    try:
        done = subprocess.run(
            [
                sys.executable,
                str(layout),
                "--config",
                codec.canonical_json(config),
                "--before-tuning",
            ],
            capture_output=True,
            text=True,
            check=False,
            timeout=LAYOUT_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return [
            Violation(
                f"{rel}/layout_check.py",
                f"ran over {LAYOUT_TIMEOUT_S:g} s",
                "make it a static check",
            )
        ]
    if done.returncode == 0:
        return []
    failing = [line for line in done.stdout.splitlines() if line.startswith("FAIL")]
    last_lines = (done.stdout + done.stderr).strip().splitlines()[-1:]
    detail = "; ".join(failing) or (last_lines[0] if last_lines else "no output")
    importable = package[0] if package else "none; pip install 'tune-ledger[pypto]'"
    return [
        Violation(
            f"{rel}/layout_check.py",
            f"exits {done.returncode} on the baseline config: {detail}",
            "fix the kernel for the failing rule"
            if failing
            else f"make the adapter importable (adapter package: {importable})",
        )
    ]
