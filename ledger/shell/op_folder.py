"""The op-folder contract of docs/OP_FOLDER.md, checked: each violation with its file and fix.

Reads the folder's files (the kernel and golden with `ast`, never importing them) and may run
its layout check as a process; never imports pypto or torch.
"""

from __future__ import annotations

import ast
from pathlib import Path

from attrs import frozen

from ledger.domain.front_matter import read_front_matter
from ledger.domain.manifest import parse_manifest
from ledger.errors import BadInput
from ledger.log import safe_files
from ledger.shell import layout_check
from ledger.shell.manifest_file import read_spec

IMPL_NAMES = ("INPUT_NAMES", "OUTPUT_NAMES", "DTYPES", "resolve_config", "build_kernel")
GOLDEN_NAMES = ("make_inputs", "golden")


@frozen
class Violation:
    """One way the folder breaks the contract."""

    file: str
    problem: str
    fix: str

    def line(self) -> str:
        """The violation as one line of text."""
        return f"{self.file}: {self.problem} (fix: {self.fix})"


def _defined(path: Path) -> set[str]:
    """Module-level names a file assigns or defines (BadInput for a file that is not a
    regular UTF-8 file inside the root: ledger/log/safe_files.py)."""
    text = safe_files.read_text(path, limit=safe_files.TEXT_BYTES, root=path.parents[2])
    tree = ast.parse(text, str(path))
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
    try:
        text = read_spec(op_dir) or ""
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
        except BadInput as e:
            found.append(Violation(f"{rel}/{name}", e.message, e.hint or "replace the file"))
            continue
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
        found += _layout_violations(rel, op_dir, manifest.filled(manifest.baseline_config))
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


def _layout_violations(rel: str, op_dir: Path, config: dict[str, object]) -> list[Violation]:
    """Run the layout check as activation does; a non-zero exit is a violation."""
    done = layout_check.run(op_dir, config)
    if done.timed_out:
        return [
            Violation(
                f"{rel}/layout_check.py",
                f"ran over {layout_check.TIMEOUT_S:g} s",
                "make it a static check",
            )
        ]
    output = done.text()  # stdout and stderr, as they came
    if done.exit_code == 0:
        return []
    failing = [line for line in output.splitlines() if line.startswith("FAIL")]
    last_lines = output.strip().splitlines()[-1:]
    detail = "; ".join(failing) or (last_lines[0] if last_lines else "no output")
    package = layout_check.adapter_package()
    importable = package[0] if package else "none; pip install 'tune-ledger[pypto]'"
    return [
        Violation(
            f"{rel}/layout_check.py",
            f"exits {done.exit_code} on the baseline config: {detail}",
            "fix the kernel for the failing rule"
            if failing
            else f"make the adapter importable (adapter package: {importable})",
        )
    ]
