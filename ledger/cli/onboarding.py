"""`new-op` and `check-op`: start an op folder, and check one against docs/OP_FOLDER.md."""

from __future__ import annotations

import click

from ledger.cli.base import OP, Ctx, pass_ctx


@click.command("new-op")
@click.argument("op", type=OP)
@click.option(
    "--adapter-package",
    metavar="NAME",
    help="The package holding the PyPTO adapter (default: the one importable here).",
)
@pass_ctx
def new_op(ctx: Ctx, op: str, adapter_package: str | None) -> None:
    """Write custom/OP/ (SPEC.md manifest, impl, golden, layout check) with a kernel that runs."""
    from ledger.shell.scaffold import write_op

    written = write_op(ctx.root, op, adapter_package)
    names = [str(path.relative_to(ctx.root)) for path in written]
    human = "\n".join(
        [
            *(f"wrote {name}" for name in names),
            f"next: replace the kernel's body, then `tune-ledger check-op {op}` and "
            f"`tune-ledger init {op}`",
        ]
    )
    ctx.emit({"op": op, "written": names}, human)


@click.command("check-op")
@click.argument("op", type=OP)
@click.option("--static", is_flag=True, help="Do not run the layout check (files only).")
@pass_ctx
def check_op(ctx: Ctx, op: str, static: bool) -> None:
    """Check custom/OP/ against the op-folder contract (docs/OP_FOLDER.md); exit 2 if broken."""
    from ledger.errors import BadInput
    from ledger.shell.op_folder import check

    violations = check(ctx.root / "custom" / op, op, run_layout=not static)
    if violations:
        raise BadInput(
            f"custom/{op} breaks the op-folder contract in {len(violations)} place(s):\n"
            + "\n".join(f"  {v.line()}" for v in violations),
            hint="fix each file as named (docs/OP_FOLDER.md), then run check-op again",
        )
    ctx.emit({"op": op, "violations": []}, f"custom/{op} follows the op-folder contract")


COMMANDS = (new_op, check_op)
