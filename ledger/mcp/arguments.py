"""The argument types the tools share (their JSON schemas tell a model what each value means),
and the mapping of a tool's typed arguments to the CLI's argv."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import Field

Op = Annotated[
    str,
    Field(
        description="The op's name: the folder custom/OP under the server's root that holds "
        "its ledger (events.jsonl), MEMORY.md and OP_impl.py (letters, digits, _ and -)."
    ),
]
Attempt = Annotated[
    str,
    Field(
        description="An attempt id (12 hex characters, or a unique prefix of at least 4) as "
        "`candidate`/`try` returned it, or the word `pending` for the pending attempt."
    ),
]
Percent = Annotated[
    float | None,
    Field(description="A percentage in [0, 100], e.g. 85.5.", ge=0, le=100),
]
Reason = Annotated[str, Field(description="Why, in one sentence: recorded in the ledger.")]
Stage = Literal["frontend", "swimlane", "incore", "algorithm"]
Failure = Literal["accuracy", "layout", "timeout", "oom", "compile", "runtime"]
Verdict = Literal["rollback", "no-gain", "adopt", "target-reached"]
Outputs = Annotated[
    list[str],
    Field(
        description="One `NAME=true|false` per output tensor: whether it matched the golden "
        "(all_close).",
        examples=[["y=true"]],
    ),
]
MaxDiffs = Annotated[
    list[str],
    Field(description="One `NAME=NUMBER` per output tensor: its largest absolute difference."),
]
Config = Annotated[
    dict[str, Any],
    Field(
        description="A config: a JSON object of PyPTO tuning parameters.",
        examples=[{"vec_tile_shape": [1, 4, 1, 64]}],
    ),
]
RunCommand = Annotated[
    str | None,
    Field(
        description="A shell command the ledger runs itself (in the root), recording its real "
        "exit code and output digest (provenance `ran`: a command nobody declared; under a "
        "manifest that declares a verifier, use from_spec or measure instead)."
    ),
]
Impl = Annotated[
    str | None,
    Field(
        description="The implementation file whose digest binds this (default "
        "custom/OP/OP_impl.py)."
    ),
]
OverrideRetry = Annotated[
    str | None,
    Field(description="Measure an idea already tried anyway (R9); the reason is recorded."),
]

Key = Annotated[
    str | None,
    Field(
        description="Idempotency key: a call retried with the same key (after a timeout or a "
        "crash) returns the original result without appending again; never reuse it for "
        "another call."
    ),
]
Python = Annotated[
    str | None,
    Field(
        description="The interpreter the verifier template's {python} stands for (default: the "
        "server's own)."
    ),
]
FromSpec = Annotated[
    bool,
    Field(
        description="Let the ledger run the check from the op folder on SPEC.md's baseline "
        "config (the verifier for the compare, layout_check.py for the layout): measured, "
        "the preferred source for an op with a manifest."
    ),
]
# The skills of R2 (ledger.schema.events.SKILLS; tests/test_mcp_arguments.py compares them).
Skill = Literal[
    "pypto-op-perf-tune", "perf-analyzer", "tune-frontend", "tune-swimlane", "tune-incore"
]


def options(**given: object) -> list[str]:
    """The CLI options for the given values: `--name value` (a list repeats it, True is a
    flag, None and False leave it out, an object is JSON); underscores in names become dashes."""
    argv: list[str] = []
    for name, value in given.items():
        flag = "--" + name.rstrip("_").replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            argv.append(flag)
        elif isinstance(value, dict):
            argv += [flag, json.dumps(value, sort_keys=True)]
        elif isinstance(value, list | tuple):
            argv += [part for item in value for part in (flag, str(item))]
        else:
            argv += [flag, str(value)]
    return argv


def command_line(
    words: list[str], values: list[str], argv: list[str] | None = None, **given: object
) -> list[str]:
    """A CLI command line: the global options of `given`, the command's `words` and options
    `argv`, then `--` and its positional `values`, so that a value such as `--help` given as
    an op's name is read as the op's name (and refused), never as an option."""
    return [*options(**given), *words, *(argv or []), "--", *values]
