"""`tune-ledger manifest`: check SPEC.md's op manifest and record it as the one in use."""

from __future__ import annotations

from typing import Any

import click

from ledger.cli.base import OP, Ctx, pass_ctx


@click.command()
@click.argument("op", type=OP)
@pass_ctx
def manifest(ctx: Ctx, op: str) -> None:
    """Validate SPEC.md's manifest and record it when it changed (DESIGN §4).

    `measure` and `target --from-spec` record it by themselves before they use it; run this
    to check a SPEC.md edit (errors name file:line) or to make the change visible in the
    ledger at once.
    """
    from ledger.errors import BadInput
    from ledger.shell.manifest_file import declared, read_manifest, record_if_changed, spec_path

    ledger = ctx.op(op)
    found = read_manifest(ledger.dir)
    if found is None:
        raise BadInput(
            f"{spec_path(ledger.dir)} has no manifest (no YAML front matter)",
            hint="add p0_shapes, perf_target, baseline_config, knobs and verifier between two "
            "'---' lines at the top of SPEC.md (docs/DESIGN.md §4)",
        )
    recorded = record_if_changed(ledger, found)
    data: dict[str, Any] = {
        "op": op,
        "digest": found.digest,
        "recorded": recorded,
        "manifest": declared(found),
    }
    knobs = ", ".join(f"{k} ({v.stage})" for k, v in found.knobs.items()) or "none"
    human = (
        f"manifest {found.digest} {'recorded' if recorded else 'already in use'}; "
        f"knobs: {knobs}; verifier: {'yes' if found.verifier else 'none'}"
    )
    ctx.emit(data, human)


COMMANDS = (manifest,)
