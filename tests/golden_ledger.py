"""Builds the golden ledger of the current schema (v2.jsonl): a campaign that writes (nearly)
every event type. tests/data/ledger/v1.jsonl is what it wrote under schema 1 (kept, never
rewritten); v2.jsonl what it writes now: schema 2 of attempt.measured and target.set (the
device, issue 29) and of policy.set, limit.relaxed, campaign.resumed and
ledger.rollback_accepted (the person who lowered a guard, and a relaxation's evidence, issue 27).

Regenerate (only while its schema versions are current; a golden log of an old version is
never rewritten, new versions get a file of their own):

    UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_golden_ledger.py

then review the diff of tests/data/ledger/.
"""

from __future__ import annotations

from ledger.domain.keys import attempt_id
from ledger.domain.replay import replay
from ledger.log.memory_store import MemoryStore
from ledger.log.record import Draft, Provenance
from ledger.schema.events import Device, Origin, OutputCheck
from stages import commands as cmd
from stages.decide import decide
from stages.refusal import Refusal

PROVENANCE = Provenance(
    at="2026-12-02T12:00:00.000000Z",
    tool="tune-ledger",
    version="0.1.0",
    host="golden",
    pid=1,
    command="tests/golden_ledger.py",
)
MEASURED = Origin(
    level="measured",
    command="python -m tools.pypto.run ...",
    tool="pypto-sim",
    tool_version="0.2.0",
    exit_code=0,
    output_digest="ab" * 32,
    duration_s=1.5,
)
# Schema 2: every measurement names its device (here the simulator, as tools/pypto names it).
SIM = Device(run_mode="sim", soc="Ascend910B (pypto cost model: 24 AIC + 48 AIV @ 1.8 GHz)")
IMPL_OLD, IMPL = "11" * 32, "22" * 32
BASE = {"vec_tile_shape": [1, 4, 1, 64], "unroll_list": [1]}


def _ok(name: str = "y", diff: float = 2e-9) -> tuple[OutputCheck, ...]:
    return (OutputCheck(name=name, all_close=True, max_diff=diff),)


class Writer:
    """A golden ledger in memory: each command decided on the replayed log and appended."""

    def __init__(self, name: str) -> None:
        self.store = MemoryStore(name=name)

    def run(self, command: object) -> list[str]:
        """Decide `command` and append its events (a hand-back's too); their ids."""
        result = decide(replay(self.store.read().events), command)
        if isinstance(result, Refusal) and not result.events:
            raise AssertionError(f"refused: {result}")
        appended = self.store.append(
            [Draft(p, PROVENANCE) for p in result.events], expected_head=self.store.read().head
        )
        return [e.id for e in appended.events]

    def start(self, command: object) -> str:
        """Start an attempt; its id."""
        return attempt_id(self.run(command)[0])


def build() -> bytes:
    """The golden ledger's bytes."""
    writer = Writer("golden/events.jsonl")
    store, run, start = writer.store, writer.run, writer.start

    run(cmd.Init(op="golden"))
    run(
        cmd.RecordCompare(
            outputs=(OutputCheck("y", False, 0.3),),
            impl_path="golden_impl.py",
            impl_digest=IMPL_OLD,
            origin=MEASURED,
        )
    )
    run(
        cmd.RecordLayout(
            exit_code=0, impl_path="golden_impl.py", impl_digest=IMPL_OLD, origin=MEASURED
        )
    )
    run(cmd.Activate(impl_digest=IMPL_OLD))  # hand-back: activation.failed
    run(
        cmd.RecordCompare(
            outputs=_ok(), impl_path="golden_impl.py", impl_digest=IMPL, origin=MEASURED
        )
    )
    run(
        cmd.RecordLayout(
            exit_code=0,
            impl_path="golden_impl.py",
            impl_digest=IMPL,
            origin=Origin(level="reported"),
        )
    )
    run(cmd.Activate(impl_digest=IMPL))
    run(
        cmd.SetTarget(
            baseline_us=78.73,
            shape="32x32x1x256 fp32",
            target_us=5.0,
            target_source="spec",
            source_ref="SPEC.md perf_target",
            config=BASE,
            origin=MEASURED,
            device=SIM,
            metric="max_work_time_us",
            baseline_samples_us=(78.73,),
            util_pct=62.1,
            bubble_pct=37.9,
        )
    )
    run(cmd.SetPolicy(key="utilization_stop_stages", value=["incore"], reason="golden"))
    for skill in ("pypto-op-perf-tune", "perf-analyzer"):
        run(cmd.LoadSkill(name=skill))
    run(cmd.EnterStage(stage="frontend"))
    run(cmd.LoadSkill(name="tune-frontend"))
    run(cmd.OpenPoint(name="vec_tile_shape"))
    first = start(
        cmd.ProposeCandidate(
            config={**BASE, "vec_tile_shape": [1, 16, 1, 64]},
            prior="builtin: vec tiles in {16, 32, 64} \u2028 (U+2028)",
        )
    )
    run(
        cmd.Verify(
            attempt=first,
            outputs=_ok(),
            layout_exit=0,
            times_us=(25.17,),
            origin=MEASURED,
            device=SIM,
            util_pct=85.0,
            bubble_pct=6.8,
            metrics={"total_cycles": 49836.0},
        )
    )
    slow = start(
        cmd.ProposeCandidate(
            config={**BASE, "vec_tile_shape": [1, 32, 1, 64]}, prior="other op | with a pipe"
        )
    )
    run(
        cmd.Verify(
            attempt=slow,
            outputs=_ok(),
            layout_exit=0,
            times_us=(141.0,),
            origin=MEASURED,
            device=SIM,
        )
    )
    # Resting on the measured attempt `first` (R3, issue 27). v1.jsonl holds one written
    # before relaxations named the one they supersede (issue 18) or their evidence.
    run(
        cmd.Relax(
            what="vec",
            limit=128,
            basis="[1,4,1,64] -> [1,16,1,64]: 3.13x faster",
            evidence=(first,),
        )
    )
    grown = start(cmd.TryMutation(param="vec_tile_shape", value=[1, 16, 1, 128]))
    run(
        cmd.Verify(
            attempt=grown,
            outputs=_ok(),
            layout_exit=0,
            times_us=(16.0, 16.1, 15.9, 16.05),
            origin=MEASURED,
            device=SIM,
        )
    )
    broken = start(cmd.TryMutation(param="unroll_list", value=[4, 1]))
    run(cmd.Fail(attempt=broken, category="compile", detail="Run pass failed", origin=MEASURED))
    dropped = start(cmd.TryMutation(param="unroll_list", value=[2, 1]))
    run(cmd.Abandon(attempt=dropped, reason="interrupted"))
    wrong = start(cmd.TryMutation(param="unroll_list", value=[8, 1]))
    run(
        cmd.Verify(
            attempt=wrong,
            outputs=(OutputCheck("y", False, 0.5),),
            layout_exit=0,
            times_us=(15.0,),
            origin=MEASURED,
            device=SIM,
        )
    )
    run(cmd.ClosePoint(name="vec_tile_shape", reason="golden: done"))
    run(cmd.AddNote(text="a note with \u00b5s and a newline\nin it"))
    # A person lowers a guard (issue 27): recorded with their name.
    run(
        cmd.SetPolicy(
            key="noise_threshold", value=0.02, reason="golden: a noisy host", person="Golden Person"
        )
    )
    run(cmd.ExitStage(stage="frontend", reason="points closed"))
    run(cmd.UnloadSkill(name="tune-frontend"))
    run(cmd.RecordReport(path="custom/golden/golden_tuning_report.md", digest="cd" * 32))
    store.set_raw(store.raw + b'{"id":"torn')  # a crash mid-write: quarantined next append
    run(cmd.Stop(reason="golden campaign ends here"))
    return store.raw
