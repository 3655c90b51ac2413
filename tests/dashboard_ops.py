"""Small kernel repositories for the dashboard's tests: real ledgers, fixed bytes.

Each op's campaign is decided by the stage machines (tests/driver.py, fixed provenance), its
events written as the store writes them, and its MEMORY.md rendered, so `audit` finds the
readable ops clean; the same calls always give the same bytes (the golden test needs that).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import attrs
from driver import Driver, candidate, compare, layout, sheet, vec, verify
from test_report_golden import campaign as three_stage_campaign

from ledger.log.record import to_line
from ledger.schema.events import Origin, OutputCheck
from ledger.schema.values import Device
from ledger.shell.api import OpLedger
from stages import commands as cmd
from tools.bench.dashboard import EVENTS_PER_ATTEMPT
from tools.bench.ledgers import write_campaign

# User text that tries to break out of HTML: a tag, a script, quotes, an entity, a comment,
# and the end of a table cell and row.
HOSTILE = "<script>alert(1)</script> \"q\" 'a' &amp; <!-- c --> </td></tr><img src=x>"


def hostile_campaign() -> Driver:
    """An op whose every free text (target reference, prior, note, failure, relaxation basis,
    stop reason) is HOSTILE."""
    driver = Driver()
    driver.run(cmd.Init(op="hostile"))
    driver.run(compare())
    driver.run(layout())
    driver.run(cmd.Activate(impl_digest="impl-digest-1"))
    driver.run(cmd.LoadSkill(name="pypto-op-perf-tune"))
    driver.run(
        cmd.SetTarget(
            baseline_us=80.0,
            shape="32x32x1x256",
            target_us=20.0,
            target_source="upstream",
            source_ref=HOSTILE,
            config={"vec_tile_shape": [1, 8, 1, 64], "unroll_list": [4, 1]},
            origin=Origin(level="reported", tool=HOSTILE),
        )
    )
    driver.run(cmd.EnterStage(stage="frontend"))
    driver.run(cmd.LoadSkill(name="tune-frontend"))
    driver.run(cmd.OpenPoint(name="F-1"))
    driver.verify(driver.start(candidate(prior=HOSTILE, vec_tile_shape=vec(32))), 60.0)
    attempt = driver.start(candidate(prior=HOSTILE, vec_tile_shape=vec(16)))
    driver.run(cmd.Fail(attempt=attempt, category="compile", detail=HOSTILE))
    driver.run(cmd.Relax(person="Pat", what="vec", limit=128, basis=HOSTILE))
    driver.verify(driver.start(candidate(prior="wide", vec_tile_shape=vec(128))), 70.0)
    driver.run(cmd.AddNote(text=HOSTILE))
    driver.run(cmd.Stop(reason=HOSTILE))
    return driver


def small_campaign(op: str) -> Driver:
    """A short frontend campaign of `op`: two adopted candidates and a slower one."""
    driver = Driver()
    driver.run(cmd.Init(op=op))
    driver.run(compare())
    driver.run(layout())
    driver.run(cmd.Activate(impl_digest="impl-digest-1"))
    driver.run(cmd.LoadSkill(name="pypto-op-perf-tune"))
    driver.run(
        cmd.SetTarget(
            baseline_us=50.0,
            shape="64x256",
            target_us=10.0,
            target_source="spec",
            source_ref="SPEC.md",
            config={"vec_tile_shape": [1, 8, 1, 64]},
            origin=Origin(level="reported"),
        )
    )
    driver.run(cmd.EnterStage(stage="frontend"))
    driver.run(cmd.LoadSkill(name="tune-frontend"))
    driver.run(cmd.OpenPoint(name="F-1"))
    for width, time_us in ((32, 40.0), (16, 45.0), (48, 30.0)):
        driver.run(verify(driver.start(candidate(vec_tile_shape=vec(width))), time_us))
    return driver


DEVICE = Device(run_mode="npu", soc="Ascend910B3", id="3", cann="8.0.RC3", driver="24.1.rc2")
MEASURED = Origin(level="measured", tool="stand-in verifier")
# The kernels of the `layernorm` op's adopted chain: activated, then two algorithm changes (the
# last one's text an attempt at HTML injection, which its diff on the page must show as text).
KERNELS = (
    "def kernel(x):\n    # two passes\n    m = mean(x)\n    return (x - m) / std(x)\n",
    "def kernel(x):\n    # one pass (Welford)\n    m, v = welford(x)\n    return (x - m) / v\n",
    "def kernel(x):\n    # one pass, fused scale\n    m, v = welford(x)\n"
    f"    return (x - m) * rsqrt(v)  # {HOSTILE}\n",
)


def digest(text: str) -> str:
    """A kernel's name in the store: the sha256 of its bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def measured(driver: Driver, attempt: str, time_us: float) -> None:
    """Verify `attempt` as measured by the ledger's verifier on DEVICE."""
    driver.run(
        cmd.Verify(
            attempt=attempt,
            outputs=(OutputCheck(name="y", all_close=True),),
            layout_exit=0,
            times_us=(time_us,),
            origin=MEASURED,
            device=DEVICE,
        )
    )


def decided_campaign() -> Driver:
    """`layernorm`: what issues 27 and 29 record, for the dashboard's hooks: every measurement
    on DEVICE, a relaxation resting on a measured attempt and one a person signed without
    evidence, a guard a person lowered, and two adopted algorithm changes (three kernels)."""
    driver = Driver()
    driver.run(cmd.Init(op="layernorm"))
    driver.run(compare(digest(KERNELS[0])))
    driver.run(layout(digest(KERNELS[0])))
    driver.run(cmd.Activate(impl_digest=digest(KERNELS[0])))
    driver.run(cmd.LoadSkill(name="pypto-op-perf-tune"))
    driver.run(attrs.evolve(sheet(baseline=40.0, target=10.0), device=DEVICE))
    driver.run(cmd.EnterStage(stage="frontend"))
    driver.run(cmd.LoadSkill(name="tune-frontend"))
    driver.run(cmd.OpenPoint(name="F-1"))
    wide = driver.start(candidate(prior="wider rows", vec_tile_shape=vec(48)))
    measured(driver, wide, 30.0)
    driver.run(cmd.Relax(what="vec", limit=128, basis="UB holds 128", evidence=(wide,)))
    driver.run(
        cmd.Relax(
            what="cube",
            limit=[[128, 128], [256, 256], [128, 128]],
            basis="vendor note",
            person="Ada",
        )
    )
    driver.run(cmd.SetPolicy(key="noise_threshold", value=0.2, reason="noisy host", person="Bo"))
    driver.run(cmd.ClosePoint(name="F-1", reason="widths measured"))
    driver.run(cmd.ExitStage(stage="frontend", reason="points closed"))
    driver.run(cmd.UnloadSkill(name="tune-frontend"))
    for stage in ("swimlane", "incore"):
        driver.run(cmd.EnterStage(stage=stage))
        driver.run(cmd.ExitStage(stage=stage, reason="no knob here", by_user=True))
    driver.run(cmd.RecordReport(path="custom/layernorm/layernorm_tuning_report.md", digest="r1"))
    driver.run(cmd.EnterStage(stage="algorithm"))
    for text, time_us in ((KERNELS[1], 20.0), (KERNELS[2], 12.0)):
        attempt = driver.start(
            cmd.TryAlgorithm(description="fewer passes", impl_digest=digest(text))
        )
        measured(driver, attempt, time_us)
    return driver


def write_kernels(root: Path, op: str, texts: tuple[str, ...]) -> None:
    """Keep `texts` in `op`'s kernel store, as `OpLedger.execute` keeps them."""
    folder = root / "custom" / op / "kernels"
    folder.mkdir(parents=True, exist_ok=True)
    for text in texts:
        (folder / f"{digest(text)}.py").write_bytes(text.encode("utf-8"))


def write_op(root: Path, op: str, driver: Driver) -> Path:
    """Write `driver`'s events as `op`'s ledger under `root` and render its MEMORY.md."""
    folder = root / "custom" / op
    folder.mkdir(parents=True, exist_ok=True)
    ledger = folder / "events.jsonl"
    ledger.write_bytes(b"".join(to_line(event) for event in driver.events))
    OpLedger(root, op).render_memory()
    return ledger


def edit_line(ledger: Path, number: int) -> None:
    """Change one byte of a time on line `number` (1-based), as a hand edit would."""
    lines = ledger.read_bytes().split(b"\n")
    lines[number - 1] = lines[number - 1].replace(b'"at":"2025', b'"at":"2024', 1)
    ledger.write_bytes(b"\n".join(lines))


def write_repository(root: Path) -> None:
    """Four ops: `softmax` (three stages, a clipped time, a failure), `hostile` (every text
    an attempt at HTML injection), `layernorm` (devices, person decisions, relaxation
    evidence, kept kernels) and `broken` (an edited line: the ledger is damaged)."""
    write_op(root, "softmax", three_stage_campaign())
    write_op(root, "layernorm", decided_campaign())
    write_kernels(root, "layernorm", KERNELS)
    write_op(root, "hostile", hostile_campaign())
    edit_line(write_op(root, "broken", small_campaign("broken")), 5)


def api_campaign(root: Path, op: str, attempts: int, seed: int = 3) -> None:
    """A synthetic campaign of `op` of about `attempts` attempts (tools/bench/ledgers.py's
    model) run command by command through the Python API, as an agent's would be: every
    append and verdict real, MEMORY.md rendered at the end."""
    write_campaign(root, round(attempts * EVENTS_PER_ATTEMPT), seed=seed, op=op)
