"""The shell of priors: read the op's ledger and SPEC.md, other ops' ledgers, kernel sources and
the built-in knowledge file, then call the pure core (ledger/priors/rank.py).

Nothing here is fatal for a source of priors: another op's damaged ledger, an unreadable SPEC.md
or a kernel file that does not parse becomes a note, and the other priors still count.
"""

from __future__ import annotations

import json
import pkgutil
from collections.abc import Iterable, Sequence
from functools import partial
from pathlib import Path

from attrs import frozen

from ledger.domain.replay import evolve
from ledger.domain.state import State
from ledger.errors import BadInput, LedgerError
from ledger.log.file_store import FileStore
from ledger.log.files import LEDGER_NAME
from ledger.priors.focus import applicable_keys, resolve_focus
from ledger.priors.knowledge import Knowledge, builtin_priors, parse_knowledge
from ledger.priors.prior import Prior
from ledger.priors.profile import OpProfile, profile
from ledger.priors.rank import Proposal, propose
from ledger.priors.scan import scan_paths
from ledger.priors.scan_result import ScanResult
from ledger.priors.sources import OtherOp, ledger_priors, source_priors
from ledger.shell.api import OpLedger
from ledger.shell.manifest_file import read_front_matter_of, spec_path
from stages.target import vec_limit

KNOWLEDGE_FILE = "data/priors.json"


@frozen
class Gathered:
    """A proposal and what was read to make it."""

    proposal: Proposal
    scan: ScanResult
    ledgers: tuple[str, ...]  # the other ops' folders whose ledgers were used
    builtin_sources: dict[str, str]  # the knowledge file's sources, by the ids reasons cite


def load_knowledge() -> Knowledge:
    """The built-in priors shipped in the package (ledger/data/priors.json)."""
    # pkgutil rather than importlib.resources, whose import was ~4 ms of every `priors`; both
    # read through the package's loader (a zipped install too). JSON needs no newline
    # translation (a raw line end is whitespace between its tokens).
    data = pkgutil.get_data("ledger.priors", KNOWLEDGE_FILE)
    if data is None:
        raise LedgerError(f"the built-in {KNOWLEDGE_FILE} cannot be read from the package")
    try:
        return parse_knowledge(json.loads(data.decode("utf-8")))
    except ValueError as e:  # the file ships with the package: broken means a bug
        raise LedgerError(f"the built-in {KNOWLEDGE_FILE} is malformed: {e}") from e


def read_profile(op_dir: Path, name: str) -> tuple[OpProfile, list[str]]:
    """The op's profile from op_dir/SPEC.md's front matter; a missing or unreadable SPEC.md
    gives the name only, with a note."""
    spec = spec_path(op_dir)
    if not spec.exists():
        return OpProfile(name=name), [f"{spec}: not found; similarity uses the op name only"]
    try:
        values = read_front_matter_of(op_dir)
    except BadInput as e:
        return OpProfile(name=name), [f"{e.message}; similarity uses the op name only"]
    return profile(name, values or {}), []


def ledger_folders(root: Path, op: str, extra: Iterable[Path]) -> list[Path]:
    """Folders of other ops with a ledger: root/custom/*, and for each extra DIR the op folder
    itself, DIR/custom/*, or DIR/*; the op itself left out, each folder once."""
    found: list[Path] = []
    for base in [root / "custom", *extra]:
        if (base / LEDGER_NAME).is_file():
            found.append(base)
        elif (base / "custom").is_dir():
            found.extend(p.parent for p in sorted((base / "custom").glob(f"*/{LEDGER_NAME}")))
        elif base.is_dir():
            found.extend(p.parent for p in sorted(base.glob(f"*/{LEDGER_NAME}")))
    own = (root / "custom" / op).resolve()
    seen: set[Path] = set()
    folders = []
    for folder in found:
        resolved = folder.resolve()
        if resolved != own and resolved not in seen:
            seen.add(resolved)
            folders.append(folder)
    return folders


def _shown(folder: Path, root: Path) -> str:
    try:
        return str(folder.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(folder)


def load_others(root: Path, op: str, extra: Iterable[Path]) -> tuple[list[OtherOp], list[str]]:
    """Other ops' replayed ledgers and profiles; a ledger that cannot be read is a note."""
    others: list[OtherOp] = []
    notes: list[str] = []
    for folder in ledger_folders(root, op, extra):
        where = _shown(folder, root)
        try:
            state = State()
            FileStore(folder / LEDGER_NAME).stream(partial(evolve, state))
        except (LedgerError, OSError, ValueError, KeyError) as e:
            notes.append(f"ledger {where}: not used ({type(e).__name__}: {e})")
            continue
        name = state.op or folder.name
        other_profile, _problems = read_profile(folder, name)
        others.append(OtherOp(name=name, where=where, profile=other_profile, state=state))
    return others, notes


def gather(
    root: Path,
    op: str,
    *,
    ledgers: Sequence[Path] = (),
    sources: Sequence[Path] = (),
    point: str | None = None,
    stage: str | None = None,
    keys: Sequence[str] = (),
    count: int | None = None,
    builtin: bool = True,
    ledger: OpLedger | None = None,
) -> Gathered:
    """Read every source of priors for `op` and propose its candidates (R7); `ledger`: the
    op's OpLedger when the caller keeps one (the CLI keeps it to the end of the process)."""
    ledger = OpLedger(root, op) if ledger is None else ledger
    state = ledger.load().state
    focus = resolve_focus(state, point=point, stage=stage, keys=keys)
    current, notes = read_profile(ledger.dir, op)
    others, other_notes = load_others(root, op, ledgers)
    notes.extend(other_notes)
    from_ledgers, failures = ledger_priors(current, others)
    scan = scan_paths(sources)
    priors: list[Prior] = [*from_ledgers, *source_priors(scan, current)]
    cited: dict[str, str] = {}
    if builtin and state.best is not None:
        knowledge = load_knowledge()
        keys_used, _ = applicable_keys(focus, state.best.config)
        cube_m = state.target.cube_m if state.target and state.target.cube_m else current.cube_m
        from_knowledge, knowledge_notes = builtin_priors(
            knowledge,
            state.best.config,
            current,
            keys=keys_used,
            cube_m=cube_m,
            vec_max=vec_limit(state),
        )
        priors.extend(from_knowledge)
        notes.extend(knowledge_notes)
        cited = knowledge.sources
    proposal = propose(state, focus, priors, failures, count=count, notes=notes)
    return Gathered(
        proposal=proposal, scan=scan, ledgers=tuple(o.where for o in others), builtin_sources=cited
    )
