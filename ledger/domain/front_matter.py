"""SPEC.md's YAML front matter as plain data, and the line of every key in it (DESIGN §4).

Read by a real YAML parser (PyYAML's safe loader); an error names the file and line, so a
person fixes SPEC.md without guessing. The manifest (`ledger.domain.manifest`) validates what
it declares; tools that read other keys of the front matter take the plain data.
"""

from __future__ import annotations

from typing import Any

from ledger.errors import BadInput


def read_front_matter(text: str, source: str = "SPEC.md") -> dict[str, Any]:
    """The YAML front matter of `text` as plain data (BadInput naming file:line if invalid)."""
    return parsed_front_matter(text, source)[0]


def parsed_front_matter(
    text: str, source: str
) -> tuple[dict[str, Any], dict[tuple[str, ...], int]]:
    """The front matter as plain data, and the line of each key by its path of keys."""
    front, first_line = _front_matter(text, source)
    import yaml  # lazily: only commands that read SPEC.md pay for the parser

    # libyaml's safe loader when PyYAML has it: every writing command reads SPEC.md now (the
    # manifest is in force by its presence), and it parses this front matter in 2 ms, not 16.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        node = yaml.compose(front, Loader=loader)
        data = yaml.load(front, Loader=loader)  # a safe loader either way, as safe_load
    except yaml.YAMLError as e:
        # Where the broken construct starts (an unclosed bracket) says more than where the
        # parser gave up (often the end of the front matter).
        mark = getattr(e, "context_mark", None) or getattr(e, "problem_mark", None)
        line = first_line + mark.line if mark is not None else first_line
        raise BadInput(
            f"{source}:{line}: the front matter is not valid YAML ({_yaml_problem(e)})",
            hint="fix the YAML between the two '---' lines at the top of SPEC.md",
        ) from e
    if not isinstance(data, dict):
        raise BadInput(
            f"{source}:{first_line}: the front matter must be a mapping of keys to values",
            hint="write `key: value` lines between the two '---' lines",
        )
    return data, _key_lines(node, first_line)


def _front_matter(text: str, source: str) -> tuple[str, int]:
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise BadInput(
            f"{source}:1: no front matter (SPEC.md must start with a '---' line)",
            hint="put the op manifest (p0_shapes, perf_target, knobs, verifier, ...) "
            "between two '---' lines at the top of SPEC.md",
        )
    for number, line in enumerate(lines[1:], start=1):
        if line.strip() in ("---", "..."):
            return "\n".join(lines[1:number]) + "\n", 2
    raise BadInput(
        f"{source}: the front matter is not closed with a '---' line",
        hint="end the front matter with a line holding only '---'",
    )


def _key_lines(node: Any, first_line: int) -> dict[tuple[str, ...], int]:
    """The line of every mapping key, by its path of keys (for file:line errors)."""
    import yaml

    found: dict[tuple[str, ...], int] = {}

    def walk(mapping: Any, path: tuple[str, ...]) -> None:
        for key_node, value_node in mapping.value:
            key = (*path, str(key_node.value))
            found[key] = first_line + key_node.start_mark.line
            if isinstance(value_node, yaml.MappingNode):
                walk(value_node, key)

    if isinstance(node, yaml.MappingNode):
        walk(node, ())
    return found


def _yaml_problem(error: Exception) -> str:
    # The parser's own text names lines of the front matter alone; file:line is given above.
    parts = [getattr(error, "context", None), getattr(error, "problem", None)]
    text = ": ".join(p for p in parts if p) or str(error)
    return " ".join(text.split())
