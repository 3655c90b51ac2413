"""The prompt that walks an agent through the tuning protocol with this server's tools."""

from __future__ import annotations

PROTOCOL = """\
You tune the PyPTO kernel custom/{op}/ through the tune-ledger tools. The ledger is the only
truth: every step is a tool call, and a refused call tells you why (its `rule`, the `blocking`
fact, the `next` action as tool calls and the `allowed` tools). Never work around a refusal;
do what `next` says. Paths are relative to the server's root (the folder holding custom/).

0. Start or resume: call `resume` (op="{op}"). If the op has no ledger, call `init`.
   Read the resource memory://{op} (MEMORY.md) and spec://{op} (SPEC.md) before deciding.
   When SPEC.md declares a verifier, only what the ledger measures with it counts (`measured`):
   use `from_spec` and `measure`; typed values and ad-hoc `run` commands are refused (code 3).
1. Activation (R1): `evidence_compare` and `evidence_layout` (`from_spec`: the ledger runs the
   op's own checks), then `activate`. Code 5 means hand back: accuracy is not frozen; stop.
2. Target sheet (R3): `target` with `from_spec` (the ledger measures the baseline), or without a
   verifier the baseline, P0 shape, target and source. Tile shapes stay within the limits;
   `relax` names measured attempts (`evidence`).
3. Skills (R2): `skill_load` pypto-op-perf-tune and perf-analyzer; a stage's tune skill only
   inside that stage; `skill_unload` to free the budget.
4. Stages (R4) in order: frontend, swimlane, incore, algorithm (`stage_enter`, `stage_exit`).
   In each: `point_open` one point at a time (R7); `priors` proposes candidates with their
   provenance; `candidate` for each (a full config and its prior); then `try` single-parameter
   changes (`change` = PARAM=JSON) of the best (R5: one change at a time; R6: one pending).
   Knobs that only gain together: one point for all of them (`point_open` with `knob` = the
   list). Algorithm stage: edit custom/{op}/{op}_impl.py, then `try` with `algorithm` (the
   change in words) and `impl`="custom/{op}/{op}_impl.py"; after a rollback or no-gain put
   the best's kernel back (`kernel_restore`, or git restore) before the next attempt.
5. Every attempt ends with `measure` (the ledger runs SPEC's verifier) or `verify` (you give
   outputs, layout exit and times), or `fail` with its category. The ledger gives the verdict
   (R8): adopt, no-gain, rollback, target-reached. Never retry a failed or measured config
   (R9, code 4). `point_close` when a point is done; a point also closes when exhausted.
6. Stop (R10): target-reached or the utilization stop end the campaign (code 6 afterwards);
   the user may `stop`. Write the `report`, then `handback` the result. Only a person lifts a
   utilization or budget stop or lowers a guard (refused over MCP with the command they run).
   `audit` re-derives everything. A SPEC.md edit is recorded by the next step; after the
   verifier changed, the best is re-measured first (`candidate` with prior
   remeasure:verifier, as the refusal says). Merge conflicts: `conflicts`, then `resolve`.
Codes: 2 bad input (fix the value), 3 a rule refused (read `next`), 4 a retry (choose another
idea), 5 hand back, 6 stopped, 7 ledger damaged (stop and tell the user; never edit the file),
9 `audit` with `strict`: a decision rests on values not measured, or a guard is lowered.
After a crash: `resume`; a pending attempt is measured again or `abandon`ed.
"""


def protocol(op: str) -> str:
    """The protocol walk for `op`."""
    return PROTOCOL.format(op=op)
