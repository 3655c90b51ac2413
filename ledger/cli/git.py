"""Commands for git-native collaboration: merge drivers, git-setup, normalize, conflicts, resolve.

See ledger/git/merge.py (merge and canonical order), ledger/git/drivers.py (drivers, git-setup),
stages/conflicts.py and stages/resolve.py (protocol conflicts left by merged branches, and their
resolution) and ledger/projections/conflicts.py (their text).
"""

from __future__ import annotations

from pathlib import Path, PurePath
from typing import Any

import click

from ledger.cli.base import OP, Ctx, count_option, event_data, pass_ctx, report_events, request_of
from ledger.git import drivers, merge
from ledger.projections import conflicts as conflict_view
from ledger.shell.api import StepResult

_FILE = click.Path(dir_okay=False, path_type=Path)


@click.command("merge-driver")
@click.argument("base", type=_FILE)
@click.argument("ours", type=_FILE)
@click.argument("theirs", type=_FILE)
@click.argument("path", required=False)
@pass_ctx
def merge_driver(ctx: Ctx, base: Path, ours: Path, theirs: Path, path: str | None) -> None:
    """git merge driver for events.jsonl: `tune-ledger merge-driver %O %A %B %P`.

    Writes the union of both sides' events (each once, canonical order) over OURS and exits
    0. A damaged side exits 7 naming file:line and leaves OURS as it was (git then reports a
    conflict). A torn tail on a side is left out and reported. PATH (git's %P) names the file
    in messages.
    """
    merged = drivers.merge_driver(base, ours, theirs, path)
    name = path or str(ours)
    ctx.warn(merged.notes)
    ctx.emit(
        {
            "path": name,
            "events": merged.events,
            "common": merged.common,
            "ours_only": merged.ours_only,
            "theirs_only": merged.theirs_only,
            "warnings": list(merged.notes),
        },
        f"tune-ledger: merged {name}: {merged.events} events ({merged.common} common, "
        f"{merged.ours_only} only ours, {merged.theirs_only} only theirs)",
    )


@click.command("memory-merge-driver")
@click.argument("base", type=_FILE)
@click.argument("ours", type=_FILE)
@click.argument("theirs", type=_FILE)
@click.argument("path", required=False)
@click.option("--marker-size", type=count_option(), help="git's %L: conflict marker size.")
@pass_ctx
def memory_merge_driver(
    ctx: Ctx, base: Path, ours: Path, theirs: Path, path: str | None, marker_size: int | None
) -> None:
    """git merge driver for MEMORY.md: `tune-ledger memory-merge-driver %O %A %B %P`.

    Merges the human text as git does (`git merge-file`), renders the managed sections from
    the merged ledger (when PATH is given and the merged ledger is known), writes the result
    over OURS and exits 0, or 1 when the human text conflicts (conflict markers are left in
    OURS). When the merged ledger is not known it keeps our sections: `tune-ledger render OP`
    re-renders them, and `tune-ledger check OP` reports them stale until then.
    """
    done = drivers.memory_merge_driver(base, ours, theirs, marker_size, path)
    op = PurePath(path).parent.name if path else "OP"
    notes = (
        []
        if done.stripped
        else ["a side's tune-ledger markers are malformed: merged as plain text"]
    )
    ctx.warn(notes)
    conflicts = f"{done.conflicts} text conflict(s) to resolve by hand; " if done.conflicts else ""
    sections = (
        "managed sections rendered from the merged ledger"
        if done.rendered
        else f"managed sections kept from ours; run `tune-ledger render {op}` once the merge "
        "is done"
    )
    ctx.emit(
        {
            "path": path or str(ours),
            "conflicts": done.conflicts,
            "rendered": done.rendered,
            "warnings": notes,
            "next": None if done.rendered else f"tune-ledger render {op}",
        },
        f"tune-ledger: merged {path or ours}: {conflicts}{sections}",
    )
    if done.conflicts:
        raise SystemExit(1)


@click.command("git-setup")
@click.option(
    "--command",
    "command",
    metavar="CMD",
    help="How git runs tune-ledger (default: `tune-ledger` if on PATH, else this "
    "Python with -m ledger).",
)
@pass_ctx
def git_setup(ctx: Ctx, command: str | None) -> None:
    """Install the merge drivers: .gitattributes entries (commit them) and git config.

    The attributes go to ROOT/.gitattributes (`custom/*/events.jsonl merge=tune-ledger-events
    -text eol=lf`, `custom/*/MEMORY.md merge=tune-ledger-memory`); the driver commands go to
    the repository's local config, which every clone sets up once. ROOT/.gitignore gets the
    ledgers' lock files and the ops' __pycache__ folders. Running it again changes nothing and
    says so. When it sets something up it also prints (never installs; `--json` always gives
    it under `ci`) the CI / pre-commit snippet that checks every op
    on each pull request: `check --all` and `audit --all --strict` (exit 9 when a decision
    rests on values not measured, or a guard is lowered).
    """
    done = drivers.git_setup(ctx.root, command)
    ctx.warn(done.warnings)
    lines = (
        [f"changed: {c}" for c in done.changed]
        if done.changed
        else ["nothing to change: the merge drivers are already set up"]
    )
    if done.changed:  # offered once, when set up (`--json` always carries it under "ci")
        lines += ["for CI on every pull request (a GitHub Actions step):", CI_STEP.rstrip()]
        lines += ["or a pre-commit hook (.pre-commit-config.yaml):", PRE_COMMIT.rstrip()]
    if done.files_changed:
        lines.append(f"next: commit {' and '.join(done.files_changed)}")
    ctx.emit(
        {
            "changed": list(done.changed),
            "unchanged": list(done.unchanged),
            "attributes": done.attributes,
            "warnings": list(done.warnings),
            "ci": {
                "commands": list(CI_COMMANDS),
                "github_actions": CI_STEP,
                "pre_commit": PRE_COMMIT,
            },
        },
        "\n".join(lines),
    )


# What a kernel repository's CI runs on every pull request (issue 27): the ledgers and MEMORY.md
# agree, every step and verdict re-derives, and every decision rests on measured values.
CI_COMMANDS = ("tune-ledger check --all", "tune-ledger audit --all --strict")
CI_STEP = (
    "      - name: tune-ledger (ledgers, verdicts, measured decisions)\n"
    "        run: |\n"
    "          pip install tune-ledger\n"
    + "".join(f"          {command}\n" for command in CI_COMMANDS)
)
PRE_COMMIT = "repos:\n  - repo: local\n    hooks:\n" + "".join(
    f"      - id: tune-ledger-{command.split()[1]}\n"
    f"        name: {command}\n"
    f"        entry: {command}\n"
    "        language: system\n"
    "        pass_filenames: false\n"
    "        files: ^custom/\n"
    for command in CI_COMMANDS
)


@click.command()
@click.argument("op", type=OP)
@pass_ctx
def normalize(ctx: Ctx, op: str) -> None:
    """Rewrite OP's ledger in canonical order, dropping repeated lines (after a merge that did
    not use the driver, e.g. `merge=union`), and re-render MEMORY.md from it, so one command
    per op repairs such a merge. Refuses a damaged ledger (exit 7)."""
    ledger = ctx.op(op)
    done = merge.normalize_file(ledger.file_store)
    what = done.describe()
    rendered = ledger.render_memory() if what else False
    ctx.emit(
        {
            "op": op,
            "changed": bool(what),
            "events": done.events,
            "duplicates": done.duplicates,
            "reordered": done.reordered,
            "memory_rendered": rendered,
        },
        f"normalized {ledger.path}: {what} fixed, MEMORY.md rendered from it; next, commit"
        if what
        else f"{ledger.path} is already in canonical order",
    )


@click.command()
@click.argument("op", type=OP)
@pass_ctx
def conflicts(ctx: Ctx, op: str) -> None:
    """List the protocol conflicts merged branches left, with the resolutions each accepts."""
    state = ctx.op(op).load().state
    rows = conflict_view.listing(state)
    human = (
        "\n".join(
            f"{row['number']}: {row['conflict']}\n   id: {row['id']}\n   next: {row['next']}"
            for row in rows
        )
        or "no conflicts"
    )
    ctx.emit({"op": op, "conflicts": rows}, human)


@click.command("resolve")
@click.argument("op", type=OP)
@click.option(
    "--conflict",
    "conflict",
    required=True,
    metavar="ID",
    help="The conflict: its id, or its number, as `tune-ledger conflicts` lists them.",
)
@click.option(
    "--resolution",
    required=True,
    metavar="abandon:ATTEMPT|best:ATTEMPT|faster|remeasure|close:POINT|limit:RELAXATION|"
    "stricter|keep",
    help="How to resolve it (`tune-ledger conflicts OP` lists what each accepts).",
)
@click.option("--reason", required=True, help="Why (recorded).")
@pass_ctx
def resolve_command(ctx: Ctx, op: str, conflict: str, resolution: str, reason: str) -> None:
    """Resolve a protocol conflict left by merged branches, with a recorded event.

    abandon:ATTEMPT abandons one of two pending attempts (or one started after a stop);
    best:ATTEMPT picks which of two bests adopted on different branches is the best, faster
    picks the one with the lower recorded median, remeasure measures both again;
    close:POINT closes one of two open points; limit:RELAXATION picks which relaxation of a
    limit is in force, stricter the lower; keep accepts the merged state as it is.
    """
    from stages import resolve

    ledger = ctx.op(op)
    command = resolve.Resolve(conflict=conflict, resolution=resolution, reason=reason)
    outcome = ledger.execute(
        command,
        key=ctx.key,
        decider=resolve.decision,
        request=request_of(click.get_current_context()),
        command_line=ctx.command_line(),
    )
    resolved = _resolved(outcome)
    report_events(
        ctx,
        op,
        outcome,
        {**resolved, "conflicts": conflict_view.texts(outcome.state)},
        f"resolved conflict {resolved.get('conflict')} ({resolved.get('resolution')})",
    )


def _resolved(outcome: StepResult) -> dict[str, Any]:
    from ledger.schema.conflicts import Conflict

    data = event_data(outcome, "conflict.resolved")
    if not data:
        return {}
    conflict = Conflict(kind=data["conflict"]["kind"], parties=data["conflict"]["parties"])
    return {"conflict": conflict.id, "resolution": data["resolution"]}


COMMANDS = (merge_driver, memory_merge_driver, git_setup, normalize, conflicts, resolve_command)
