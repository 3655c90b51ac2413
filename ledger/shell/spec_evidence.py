"""Activation evidence the ledger obtains itself from the op folder (`evidence compare|layout
--from-spec`): SPEC.md's verifier and the op's layout check, run on the manifest's baseline
config, their results recorded with provenance "measured" (R1, R11).

Why: an op that declares its verifier is measured by the ledger (`target --from-spec`,
`measure`), but its activation evidence had to come from a command the agent composed by hand,
from the adapter's source, or from numbers typed in. The commands here are the op folder's
contract (docs/OP_FOLDER.md), so nobody has to know them.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from ledger.domain.configs import canonical_config
from ledger.errors import BadInput
from ledger.shell import harness, measure, runner
from ledger.shell.manifest_file import read_manifest

if TYPE_CHECKING:
    from ledger.domain.manifest import Manifest
    from ledger.schema.values import Origin, OutputCheck
    from ledger.shell.api import OpLedger

LABEL = "evidence"  # the plan's label: the run belongs to no attempt
_FIX_KERNEL = (
    "hand back to pypto-op-orchestrator: accuracy is not frozen until the baseline config "
    "builds and runs (fix the kernel, then record the evidence again)"
)


def _manifest(ledger: OpLedger) -> Manifest:
    manifest = read_manifest(ledger.dir)
    if manifest is None or manifest.verifier is None:
        raise BadInput(
            f"custom/{ledger.op}/SPEC.md declares no verifier, so the ledger cannot run the "
            "compare itself",
            rule="R11",
            hint="declare `verifier` in SPEC.md's front matter (docs/OP_FOLDER.md), or give "
            "--run CMD or --output NAME=true|false",
        )
    return manifest


def compare(
    ledger: OpLedger, root: Path, impl_digest: str, python: str
) -> tuple[tuple[OutputCheck, ...], Origin]:
    """Every output's all_close from one verifier run of the baseline config, bound to it."""
    from ledger.domain.inputs import outputs_from_document

    manifest = _manifest(ledger)
    plan, ran = measure.run_baseline(
        manifest, LABEL, impl_digest, root=root, op=ledger.op, python=python
    )
    fix = "check the verifier with `tune-ledger measure OP --dry-run`, then record again"
    doc = harness.result_document(
        ran.run, runner.last_json_object(ran.run.output), fix, pending=None
    )
    measure.refuse_unbound_baseline("the compare", manifest, impl_digest, doc)
    failure = runner.failure_of(doc)
    if failure is not None and not isinstance(doc.get("outputs"), list):
        raise BadInput(
            f"the baseline config did not run ({failure[0]}: {failure[1]}), so no output "
            "could be compared; nothing was written",
            rule="R1",
            hint=_FIX_KERNEL,
        )
    checks = outputs_from_document(doc, plan.command_line)
    return checks, ran.origin(runner.origin_of_run(ran.run, doc))


def layout(ledger: OpLedger, root: Path, python: str) -> runner.CommandRun:
    """The op's layout check on the baseline config, before tuning (docs/OP_FOLDER.md)."""
    from ledger.log import codec

    manifest = _manifest(ledger)
    assert manifest.verifier is not None  # _manifest refuses an op without one
    check = ledger.dir / "layout_check.py"
    if not check.is_file():
        raise BadInput(
            f"custom/{ledger.op}/layout_check.py is missing",
            rule="R1",
            hint=f"`tune-ledger check-op {ledger.op}` lists what the op folder lacks",
        )
    argv = [
        python,
        str(check),
        "--config",
        codec.canonical_json(canonical_config(manifest.baseline_config)),
        "--before-tuning",
    ]
    return runner.run_command(shlex.join(argv), root, timeout_s=manifest.verifier.timeout_s)
