"""`kernel restore` and `kernel diff`: the kernels the ledger kept (issue 27.6,
ledger/shell/kernels.py). Neither appends to the ledger; `restore` writes `<op>_impl.py`."""

from __future__ import annotations

import click

from ledger.cli.base import OP, Ctx, StrictGroup, pass_ctx


@click.group(cls=StrictGroup)
def kernel() -> None:
    """The kernels kept in custom/OP/kernels/: restore one, diff two."""


@kernel.command("restore")
@click.argument("op", type=OP)
@click.option(
    "--attempt",
    metavar="ID",
    help="The attempt whose kernel to restore (an id or a prefix; default: the best's).",
)
@pass_ctx
def kernel_restore(ctx: Ctx, op: str, attempt: str | None) -> None:
    """Write a kept kernel back to custom/OP/OP_impl.py (default: the best's kernel).

    Exit 2 when the kernel was never kept, 7 when its kept file was edited.
    """
    from ledger.shell import kernels

    data = kernels.restore(ctx.op(op), attempt)
    done = "restored" if data["changed"] else "already holds"
    ctx.emit(
        data,
        f"{data['path']} {done} the kernel {data['impl_digest'][:12]} of {data['attempt']}",
    )


@kernel.command("diff")
@click.argument("op", type=OP)
@click.argument("a", metavar="A")
@click.argument("b", metavar="B")
@pass_ctx
def kernel_diff(ctx: Ctx, op: str, a: str, b: str) -> None:
    """Unified diff of the kernels two attempts ran (A, B: ids, prefixes or `best`)."""
    from ledger.shell import kernels

    data = kernels.diff(ctx.op(op), a, b)
    human = data["diff"] or (
        f"no difference: {data['a']['attempt']} and {data['b']['attempt']} ran kernel "
        f"{data['a']['impl_digest'][:12]}"
    )
    ctx.emit(data, human.rstrip("\n"))


COMMANDS = (kernel,)
