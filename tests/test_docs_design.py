"""docs/ names files that exist; DESIGN.md gives one module per rule and every exit code."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from ledger import errors
from ledger.errors import EXIT_CODES

REPO = Path(__file__).resolve().parents[1]
DESIGN = REPO / "docs" / "DESIGN.md"
RULES = [f"R{number}" for number in range(1, 12)]

_FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)
_SPAN = re.compile(r"`([^`\n]+)`")
_REPO_PATH = re.compile(r"(?:ledger|stages|tools|tests)/[\w./-]*")
_RULE_HEADING = re.compile(r"^### (R\d+)\b.*$", re.MULTILINE)
_STAGES_MODULE = re.compile(r"`(stages/[\w/]+\.py)`")
_TABLE_ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*([^|]*?)\s*\|", re.MULTILINE)
_PACKAGE = r"((?:ledger|stages)/[\w./]*)"
_LAYER_LINE = re.compile(rf"^ {{2}}{_PACKAGE}(?:\s+\|\s+{_PACKAGE})?")


def _text() -> str:
    return DESIGN.read_text("utf-8")


def _section(text: str, heading: str) -> str:
    """The body of the `## ` or `### ` section whose heading starts with `heading`."""
    match = re.search(rf"^(#+) {re.escape(heading)}.*$", text, re.MULTILINE)
    assert match is not None, f"no section {heading!r} in docs/DESIGN.md"
    level = len(match.group(1))
    end = re.compile(rf"^#{{1,{level}}} ", re.MULTILINE).search(text, match.end())
    return text[match.end() : end.start() if end else len(text)]


def repo_paths(text: str) -> list[str]:
    """Every inline-code span outside fenced blocks that is a repository path."""
    prose = _FENCE.sub("", text)
    return [span for span in _SPAN.findall(prose) if _REPO_PATH.fullmatch(span)]


def rule_modules(text: str) -> dict[str, list[str]]:
    """For each `### Rn` section, the distinct `stages/` modules it names, in order."""
    headings = list(_RULE_HEADING.finditer(text))
    found: dict[str, list[str]] = {}
    for index, heading in enumerate(headings):
        following = headings[index + 1].start() if index + 1 < len(headings) else len(text)
        section_end = re.compile(r"^#{1,3} ", re.MULTILINE).search(text, heading.end())
        stop = min(following, section_end.start() if section_end else len(text))
        body = text[heading.start() : stop]
        found[heading.group(1)] = list(dict.fromkeys(_STAGES_MODULE.findall(body)))
    return found


@pytest.mark.parametrize("name", ["DESIGN.md", "CONTRACTS.md"])
def test_every_repository_path_in_backticks_exists(name: str) -> None:
    """A file or folder a doc names (ledger/..., stages/..., tools/..., tests/...) exists."""
    paths = repo_paths((REPO / "docs" / name).read_text("utf-8"))
    assert len(paths) >= 5, f"too few paths found to trust the parser: {paths}"
    missing = sorted({p for p in paths if not (REPO / p.rstrip("/")).exists()})
    assert missing == [], f"docs/{name} names paths that do not exist: {missing}"


def test_the_path_check_catches_a_missing_file() -> None:
    """The parser sees a path in backticks and ignores paths inside fenced blocks."""
    text = "see `ledger/nowhere.py` and `stages/decide.py`\n```\n`tools/absent.py`\n```\n"
    assert repo_paths(text) == ["ledger/nowhere.py", "stages/decide.py"]


def test_every_rule_has_its_own_section() -> None:
    """R1..R11 each have exactly one `### Rn` section, in order."""
    headings = _RULE_HEADING.findall(_text())
    assert headings == RULES


@pytest.mark.parametrize("rule", RULES)
def test_each_rule_names_one_stages_module_that_enforces_it(rule: str) -> None:
    """A rule's section names exactly one stages/ module; it exists and cites the rule."""
    modules = rule_modules(_text()).get(rule, [])
    assert len(modules) == 1, f"{rule} names {len(modules)} stages/ modules: {modules}"
    module = REPO / modules[0]
    assert module.is_file(), f"{rule}: {modules[0]} does not exist"
    assert re.search(rf"\b{rule}\b", module.read_text("utf-8")), (
        f"{rule}: {modules[0]} never mentions {rule}"
    )


def test_a_rule_naming_two_modules_is_caught() -> None:
    """Two stages/ modules in one rule's section are both seen (the check above fails)."""
    text = "### R1 A — `stages/activation.py`\nalso `stages/skills.py`\n### R2 B\nnone\n## next\n"
    assert rule_modules(text) == {
        "R1": ["stages/activation.py", "stages/skills.py"],
        "R2": [],
    }


def test_the_exit_code_table_has_every_code_of_ledger_errors() -> None:
    """§5's table lists each code of EXIT_CODES once, and each class it names has that code."""
    rows = _TABLE_ROW.findall(_section(_text(), "§5 "))
    codes = [int(code) for code, _class in rows]
    assert sorted(codes) == sorted(EXIT_CODES), f"table codes {codes}, EXIT_CODES {EXIT_CODES}"
    for code, cell in rows:
        name = cell.strip("`")
        if name in ("", "–", "-"):
            continue
        error_class = getattr(errors, name, None)
        assert isinstance(error_class, type), f"exit {code}: no class {name} in ledger/errors.py"
        assert issubclass(error_class, errors.LedgerError)
        assert error_class.code == int(code), f"{name}.code is {error_class.code}, not {code}"


def test_the_layer_diagram_follows_the_import_contract() -> None:
    """§7.1's diagram lists the layers of pyproject.toml's import-linter contract, top down."""
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["tool"]["importlinter"]
    layers = next(c["layers"] for c in contracts["contracts"] if c["type"] == "layers")
    expected = [tuple(part.strip() for part in layer.split("|")) for layer in layers]
    diagram = _FENCE.search(_section(_text(), "§7.1 "))
    assert diagram is not None, "§7.1 has no diagram"
    drawn = []
    for line in diagram.group(0).splitlines():
        match = _LAYER_LINE.match(line)
        if match:
            names = [n for n in match.groups() if n]
            drawn.append(tuple(_module_name(n) for n in names))
    assert drawn == expected
    for layer in drawn:
        for name in layer:
            path = REPO / name.replace(".", "/")
            assert path.is_dir() or path.with_suffix(".py").is_file(), name


def _module_name(path: str) -> str:
    """`ledger/errors.py` -> `ledger.errors`, `stages/` -> `stages`."""
    return path.removesuffix(".py").rstrip("/").replace("/", ".")
