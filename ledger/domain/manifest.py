"""The op manifest: what SPEC.md's YAML front matter declares about an op (DESIGN §4).

`parse_manifest` is pure (text in, `Manifest` or `BadInput` with file:line out). The front
matter is read by `ledger.domain.front_matter`; every error names the line of the key it is
about, so a person fixes SPEC.md without guessing.

A manifest declares the P0 shapes, the performance target, the tolerance, the baseline config,
the knobs (each with its stage, its kind or domain, and its default) and the verifier: the
command that measures one config and prints one measurement JSON. The ledger fills a config
with the knobs' defaults before comparing it (R6, R9, R11), so `{}` and the defaults spelt
out are one config.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
import shlex
from collections.abc import Mapping
from typing import Any

from attrs import frozen

from ledger.domain.configs import canonical_config, filled
from ledger.domain.front_matter import parsed_front_matter
from ledger.domain.knobs import (
    KNOB_KINDS,
    Knob,
    is_finite_positive,
    is_number,
    is_positive_int,
)
from ledger.errors import BadInput
from ledger.log import codec
from ledger.schema.vocabulary import CONFIG_STAGES

# Placeholders a verifier template may use; each is substituted into one argument, never
# through a shell, so the ledger does the quoting and a config cannot inject a command.
PLACEHOLDERS = {
    "python": "the interpreter running tune-ledger (sys.executable)",
    "root": "the folder that holds custom/",
    "op": "the op's name",
    "op_dir": "the op's folder, custom/<op>",
    "config": "the attempt's full config as canonical JSON (defaults filled in)",
    "shape": "the P0 shape as a JSON list",
    "timeout_s": "the wall-time limit in seconds",
    "memory_mb": "the memory limit in MB",
}
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
DEFAULT_TIMEOUT_S = 600.0
DEFAULT_MEMORY_MB = 8192.0


@frozen
class Verifier:
    """The command template that measures one config, and the limits it runs under."""

    argv: tuple[str, ...]
    timeout_s: float = DEFAULT_TIMEOUT_S
    memory_mb: float = DEFAULT_MEMORY_MB

    def command(self, values: Mapping[str, str]) -> tuple[str, ...]:
        """The argument vector with every placeholder replaced by its value."""
        return tuple(_PLACEHOLDER.sub(lambda m: values[m.group(1)], token) for token in self.argv)


# R3's sources of a target after SPEC.md's budget, in precedence order (DESIGN §3 R3).
FALLBACK_SOURCES = ("upstream", "torch-eager")


@frozen
class Fallback:
    """A command that measures one of R3's next sources of a target (a comparable upstream
    kernel, torch eager) when SPEC.md declares no budget: it prints `times_us` (issue 29.6)."""

    source: str
    verifier: Verifier


@frozen
class Manifest:
    """An op's declarations, as SPEC.md's front matter gives them."""

    source: str
    op_name: str | None
    p0_shapes: tuple[tuple[int, ...], ...]
    target_us: float | None
    metric: str | None
    tool: str | None
    rtol: float | None
    atol: float | None
    baseline_config: dict[str, Any]
    knobs: dict[str, Knob]
    verifier: Verifier | None
    digest: str
    # `target_fallbacks`, in R3's precedence order (upstream before torch eager)
    fallbacks: tuple[Fallback, ...] = ()

    @property
    def fallback(self) -> Fallback | None:
        """The source `target --from-spec` measures when SPEC.md declares no budget (R3)."""
        return self.fallbacks[0] if self.fallbacks else None

    @property
    def p0_shape(self) -> tuple[int, ...] | None:
        """The representative shape the target sheet is measured on (the first P0 shape)."""
        return self.p0_shapes[0] if self.p0_shapes else None

    def defaults(self) -> dict[str, Any]:
        """Each knob's default value (R6: a change to a default is no change)."""
        return {name: knob.default for name, knob in self.knobs.items()}

    def filled(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """`config` with every knob it leaves out set to the knob's default, canonical."""
        return filled(config, self.defaults())


# Every writing command reads SPEC.md's manifest (it is in force by its presence), so a process
# that appends many times (the autopilot, the MCP server) parsed the same front matter 138
# times in a 32-attempt campaign (0.47 of its 2.45 s in the ledger, profiled 6 Dec 2026). A
# Manifest is frozen, so the last few are kept, keyed by the text itself.
@functools.lru_cache(maxsize=8)
def parse_manifest(text: str, source: str = "SPEC.md") -> Manifest:
    """The manifest in the YAML front matter of `text` (BadInput naming file:line if not)."""
    data, lines = parsed_front_matter(text, source)
    try:
        return _Reader(source, lines).manifest(data)
    except ValueError as e:  # a non-finite number (.inf, .nan) anywhere in a value
        raise BadInput(
            f"{source}:2: the front matter holds {e}",
            hint="numbers in the manifest must be finite",
        ) from e


class _Reader:
    """Validates one front matter, naming the line of the key each error is about."""

    def __init__(self, source: str, lines: dict[tuple[str, ...], int]) -> None:
        self.source = source
        self.lines = lines

    def fail(self, path: tuple[str, ...], problem: str, hint: str) -> BadInput:
        line = next(
            (self.lines[path[:n]] for n in range(len(path), 0, -1) if path[:n] in self.lines),
            1,
        )
        return BadInput(f"{self.source}:{line}: {'.'.join(path)}: {problem}", hint=hint)

    def manifest(self, data: dict[str, Any]) -> Manifest:
        target_us, metric, tool = self.perf_target(data.get("perf_target"))
        rtol, atol = self.tolerance(data.get("tolerance"))
        knobs = self.knobs(data.get("knobs"))
        baseline = self.baseline(data.get("baseline_config"), knobs)
        declared = {
            key: data[key]
            for key in (
                "op_name",
                "p0_shapes",
                "perf_target",
                "tolerance",
                "baseline_config",
                "knobs",
                "verifier",
                "target_fallbacks",
            )
            if key in data
        }
        return Manifest(
            source=self.source,
            op_name=_opt(data.get("op_name")),
            p0_shapes=self.shapes(data.get("p0_shapes")),
            target_us=target_us,
            metric=metric,
            tool=tool,
            rtol=rtol,
            atol=atol,
            baseline_config=baseline,
            knobs=knobs,
            verifier=self.verifier(data.get("verifier")),
            fallbacks=self.fallbacks(data.get("target_fallbacks")),
            digest=hashlib.sha256(codec.canonical_json(_jsonable(declared)).encode()).hexdigest()[
                :16
            ],
        )

    def shapes(self, value: Any) -> tuple[tuple[int, ...], ...]:
        if value is None:
            return ()
        hint = "p0_shapes is a list of shapes, e.g. p0_shapes: [[32, 32, 1, 256]]"
        if not isinstance(value, list) or not value:
            raise self.fail(("p0_shapes",), "must be a non-empty list of shapes", hint)
        for shape in value:
            if (
                not isinstance(shape, list)
                or not shape
                or not all(is_positive_int(d) for d in shape)
            ):
                raise self.fail(
                    ("p0_shapes",), f"{shape!r} is not a list of positive integers", hint
                )
        return tuple(tuple(shape) for shape in value)

    def perf_target(self, value: Any) -> tuple[float | None, str | None, str | None]:
        if value is None:
            return None, None, None
        hint = 'e.g. perf_target: {time_us: 5.0, metric: "max_work_time_us"}'
        if not isinstance(value, dict):
            raise self.fail(("perf_target",), "must be a mapping", hint)
        time_us = value.get("time_us")
        if not is_finite_positive(time_us):
            raise self.fail(
                ("perf_target", "time_us"), f"{time_us!r} is not a finite time > 0 µs", hint
            )
        return float(time_us), _opt(value.get("metric")), _opt(value.get("tool"))

    def tolerance(self, value: Any) -> tuple[float | None, float | None]:
        if value is None:
            return None, None
        hint = "e.g. tolerance: {rtol: 1.0e-5, atol: 1.0e-6}"
        if not isinstance(value, dict):
            raise self.fail(("tolerance",), "must be a mapping of rtol and atol", hint)
        for key in ("rtol", "atol"):
            bound = value.get(key)
            if not (is_number(bound) and math.isfinite(bound) and bound >= 0):
                raise self.fail(("tolerance", key), f"{bound!r} is not a number ≥ 0", hint)
        return float(value["rtol"]), float(value["atol"])

    def knobs(self, value: Any) -> dict[str, Knob]:
        if value is None:
            return {}
        hint = (
            "knobs maps each config key to {stage: frontend|swimlane|incore, kind: "
            f"{'|'.join(KNOB_KINDS)} (or domain: [values]), default: VALUE}}"
        )
        if not isinstance(value, dict):
            raise self.fail(("knobs",), "must be a mapping of config keys", hint)
        return {str(name): self.knob(str(name), spec, hint) for name, spec in value.items()}

    def knob(self, name: str, spec: Any, hint: str) -> Knob:
        path = ("knobs", name)
        if not isinstance(spec, dict):
            raise self.fail(path, "must be a mapping with stage, kind or domain, default", hint)
        unknown = sorted(set(spec) - {"stage", "kind", "domain", "default", "min", "max"})
        if unknown:
            raise self.fail((*path, unknown[0]), f"unknown field {unknown[0]!r}", hint)
        stage = spec.get("stage")
        if stage not in CONFIG_STAGES:
            raise self.fail(
                (*path, "stage"),
                f"{stage!r} is not a configuration stage ({', '.join(CONFIG_STAGES)})",
                hint,
            )
        if "default" not in spec:
            raise self.fail(path, "has no default (the value the kernel uses unset)", hint)
        domain = spec.get("domain")
        if domain is not None and (not isinstance(domain, list) or not domain):
            raise self.fail((*path, "domain"), "must be a non-empty list of values", hint)
        kind = spec.get("kind", "json")
        if kind not in KNOB_KINDS:
            raise self.fail((*path, "kind"), f"{kind!r} is not one of {KNOB_KINDS}", hint)
        bounds = []
        for key in ("min", "max"):
            bound = spec.get(key)
            if bound is not None and not (is_number(bound) and math.isfinite(bound)):
                raise self.fail((*path, key), f"{bound!r} is not a finite number", hint)
            bounds.append(None if bound is None else float(bound))
        knob = Knob(
            name=name,
            stage=str(stage),
            kind=str(kind),
            default=_jsonable(spec["default"]),
            domain=None if domain is None else tuple(_jsonable(v) for v in domain),
            minimum=bounds[0],
            maximum=bounds[1],
        )
        problem = knob.refusal(knob.default)
        if problem:
            raise self.fail((*path, "default"), f"the default {problem}", hint)
        return knob

    def baseline(self, value: Any, knobs: Mapping[str, Knob]) -> dict[str, Any]:
        if value is None:
            return {}
        hint = "e.g. baseline_config: {vec_tile_shape: [1, 4, 1, 64], unroll_list: [1]}"
        if not isinstance(value, dict):
            raise self.fail(("baseline_config",), "must be a mapping (a config)", hint)
        config = _jsonable(value)
        for key, knob_value in config.items():
            knob = knobs.get(key)
            problem = knob.refusal(knob_value) if knob else None
            if problem:
                raise self.fail(("baseline_config", key), problem, hint)
        return canonical_config(config)

    def fallbacks(self, value: Any) -> tuple[Fallback, ...]:
        """`target_fallbacks`: a list of {source: upstream|torch-eager, command, timeout_s}."""
        if value is None:
            return ()
        hint = (
            'target_fallbacks: [{source: torch-eager, command: ["{python}", "-m", '
            '"tools.pypto.reference", "--op-dir", "{op_dir}", "--json"]}]; sources: '
            + ", ".join(FALLBACK_SOURCES)
        )
        if not isinstance(value, list) or not value:
            raise self.fail(("target_fallbacks",), "must be a non-empty list", hint)
        found: dict[str, Fallback] = {}
        for entry in value:
            source = entry.get("source") if isinstance(entry, dict) else None
            if source not in FALLBACK_SOURCES:
                raise self.fail(
                    ("target_fallbacks",), f"{source!r} is not one of {FALLBACK_SOURCES}", hint
                )
            if source in found:
                raise self.fail(("target_fallbacks",), f"{source} is declared twice", hint)
            spec = {k: v for k, v in entry.items() if k != "source"}
            verifier = self.verifier(spec, ("target_fallbacks",))
            assert verifier is not None  # the mapping holds a command or the reader refused it
            found[source] = Fallback(source=source, verifier=verifier)
        return tuple(found[s] for s in FALLBACK_SOURCES if s in found)

    def verifier(self, value: Any, where: tuple[str, ...] = ("verifier",)) -> Verifier | None:
        if value is None:
            return None
        hint = (
            'verifier: {command: ["{python}", "-m", "my.verifier", "--config", '
            '"{config}"], timeout_s: 600, memory_mb: 8192}; placeholders: '
            + ", ".join("{" + p + "}" for p in PLACEHOLDERS)
        )
        spec = {"command": value} if isinstance(value, str | list) else value
        if not isinstance(spec, dict):
            raise self.fail(where, "must be a command or a mapping with command", hint)
        command = spec.get("command")
        if isinstance(command, str):
            command = shlex.split(command)
        if (
            not isinstance(command, list)
            or not command
            or not all(isinstance(token, str) for token in command)
        ):
            raise self.fail((*where, "command"), "must be a non-empty list of strings", hint)
        for token in command:
            for name in _PLACEHOLDER.findall(token):
                if name not in PLACEHOLDERS:
                    raise self.fail((*where, "command"), f"unknown placeholder {{{name}}}", hint)
        limits = []
        for key, default in (("timeout_s", DEFAULT_TIMEOUT_S), ("memory_mb", DEFAULT_MEMORY_MB)):
            limit = spec.get(key, default)
            if not is_finite_positive(limit):
                raise self.fail((*where, key), f"{limit!r} is not a number > 0", hint)
            limits.append(float(limit))
        return Verifier(argv=tuple(command), timeout_s=limits[0], memory_mb=limits[1])


def _opt(value: Any) -> str | None:
    return None if value is None else str(value)


def _jsonable(value: Any) -> Any:
    """YAML values as JSON values: keys become strings (YAML allows `-1: 2`)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("not a finite number")
    return value
