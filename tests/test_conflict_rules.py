"""The conflict rules of stages/conflicts.py on merged branches: the kinds the team tests in
real git do not reach, the typed id a resolution names, schema-1 texts read back into typed
conflicts, and a conflict set that does not depend on how a merge interleaves two branches."""

from __future__ import annotations

import json

import pytest
from driver import Driver, candidate, in_point, in_stage, vec, verify, with_sheet
from driver import sheet as target_sheet
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ledger.domain.replay import evolve, replay
from ledger.domain.state import State
from ledger.git import merge
from ledger.log import chain, record
from ledger.log.upcast import conflict_of_text
from ledger.projections import conflicts as conflict_view
from ledger.schema.conflicts import CONFLICT_KINDS, Conflict
from ledger.schema.events import ConflictResolved
from ledger.shell import audit
from stages import commands as cmd
from stages import resolve
from stages.conflicts import RULES, conflicts, options


def _fork(driver: Driver) -> Driver:
    copy = Driver()
    for event in driver.events:
        copy.events.append(event)
        evolve(copy.state, event)
    return copy


def _merged(ours: Driver, theirs: Driver) -> list[record.Event]:
    sides = [b"".join(record.to_line(e) for e in d.events) for d in (ours, theirs)]
    return list(chain.scan(merge.merge(b"", *sides).data, "merged").events)


def _notes(driver: Driver, count: int, name: str) -> None:
    """Notes move a branch's later steps after the other branch's (Lamport counters)."""
    for n in range(count):
        driver.run(cmd.AddNote(text=f"{name} {n}"))


def test_every_kind_names_the_rule_it_breaks() -> None:
    assert set(RULES) == set(CONFLICT_KINDS)
    assert all(RULES[kind].startswith("R") for kind in CONFLICT_KINDS)


def test_an_id_is_the_kind_and_the_parties() -> None:
    """The id `resolve --conflict` takes, stable for the same kind and parties."""
    conflict = Conflict("bests", ["0123456789ab", "baseline"])
    assert conflict.parties == ("0123456789ab", "baseline")
    assert conflict.id == "bests:0123456789ab+baseline"
    assert conflict == Conflict("bests", ("0123456789ab", "baseline"))
    with pytest.raises(ValueError, match="unknown conflict kind"):
        Conflict("nothing", ())  # type: ignore[arg-type]


def test_an_attempt_finished_on_two_branches_is_kept() -> None:
    """R6: started on the trunk, verified on one branch and abandoned on the other."""
    trunk = in_point()
    attempt = trunk.start(candidate(vec_tile_shape=vec(32)))
    ours, theirs = _fork(trunk), _fork(trunk)
    ours.verify(attempt, 100.0)
    _notes(theirs, 3, "theirs")
    theirs.run(cmd.Abandon(attempt=attempt, reason="busy"))
    state = replay(_merged(ours, theirs))
    (conflict,) = conflicts(state)
    assert conflict == Conflict("finished-twice", (attempt, "verified", "abandoned"))
    assert (
        conflict_view.text(state, conflict) == f"attempt {attempt} abandoned after it was verified"
    )
    assert options(state, conflict) == ("keep",)


def test_a_target_sheet_written_after_another_branch_adopted_is_kept() -> None:
    """R3: one branch wrote the sheet again before entering a stage; the other had adopted."""
    trunk = with_sheet()
    ours, theirs = _fork(trunk), _fork(trunk)
    ours.run(cmd.EnterStage(stage="frontend"))
    ours.run(cmd.LoadSkill(name="tune-frontend"))
    ours.run(cmd.OpenPoint(name="F-1"))
    ours.verify(ours.start(candidate(vec_tile_shape=vec(32))), 50.0)
    _notes(theirs, 12, "theirs")
    (written,) = theirs.run(target_sheet(baseline=90.0))
    events = _merged(ours, theirs)
    state = replay(events)
    assert conflicts(state) == (Conflict("sheet-after-adopt", (written.id[:12],)),)
    assert state.best is not None and state.best.time_us == 50.0  # the adopted best stays
    assert conflict_view.texts(state) == [
        f"target sheet {written.id[:12]} written after attempts were adopted"
    ]
    assert audit.legality_findings(events) == []


def test_two_tune_skills_loaded_on_two_branches_exceed_the_budget() -> None:
    """R2: one branch went on to swimlane with its skill; the other loaded frontend's again."""
    trunk = in_stage()
    ours, theirs = _fork(trunk), _fork(trunk)
    ours.run(cmd.ExitStage(stage="frontend", reason="user", by_user=True))
    ours.run(cmd.UnloadSkill(name="tune-frontend"))
    ours.run(cmd.EnterStage(stage="swimlane"))
    ours.run(cmd.LoadSkill(name="tune-swimlane"))
    theirs.run(cmd.UnloadSkill(name="tune-frontend"))
    _notes(theirs, 8, "theirs")
    theirs.run(cmd.LoadSkill(name="tune-frontend"))
    state = replay(_merged(ours, theirs))
    budget = [c for c in conflicts(state) if c.kind == "skill-budget"]
    assert budget == [Conflict("skill-budget", tuple(state.skills))]
    assert {"tune-frontend", "tune-swimlane"} <= set(state.skills)
    assert options(state, budget[0]) == ("keep",)


def test_a_stage_entered_out_of_order_is_a_conflict() -> None:
    """R4: only a merge of illegal steps skips a stage; replay keeps the order it saw."""
    state = in_stage().state
    state.entered.append("incore")  # swimlane skipped
    assert Conflict("stage-order", ("incore", "swimlane")) in conflicts(state)


def test_a_resolution_names_its_conflict_by_kind_and_parties() -> None:
    """The recorded `conflict.resolved` holds the typed conflict, not its text."""
    trunk = in_point()
    ours, theirs = _fork(trunk), _fork(trunk)
    a = ours.start(candidate(vec_tile_shape=vec(32)))
    b = theirs.start(candidate(vec_tile_shape=vec(16)))
    merged = Driver()
    for event in _merged(ours, theirs):
        merged.events.append(event)
        evolve(merged.state, event)
    (conflict,) = conflicts(merged.state)
    payloads = resolve.decide(
        merged.state, resolve.Resolve(conflict=conflict.id, resolution=f"abandon:{a}", reason="r")
    )
    assert payloads[-1] == ConflictResolved(
        conflict=conflict, resolution=f"abandon:{a}", reason="r"
    )
    (_abandoned, resolved) = merged.append(payloads)
    assert set(conflict.parties) == {a, b}
    assert resolved.data["conflict"] == {"kind": "attempts-pending", "parties": [*conflict.parties]}
    assert conflicts(merged.state) == () and merged.state.pending == b


# --- schema 1: conflicts named by their text ----------------------------------------------

A, B = "0123456789ab", "ba9876543210"


@pytest.mark.parametrize(
    ("text", "kind", "parties"),
    [
        (f"attempts {A} and {B} pending at once", "attempts-pending", (A, B)),
        (f"attempt {A} started after the campaign stopped (user)", "after-stop", (A,)),
        (
            f"attempt {A} was pending on another branch when the campaign stopped (target)",
            "pending-at-stop",
            (A,),
        ),
        (
            f"attempt {A} was adopted against best baseline while attempt {B} was the best "
            "(adopted on another branch)",
            "bests",
            (A, B),
        ),
        (f"bests {A} and {B} to be re-measured", "remeasure", (A, B)),
        ("points F-1 and F-2 open at once", "points-open", ("F-1", "F-2")),
        ("point F-1 opened twice", "point-reopened", ("F-1",)),
        (
            "stages frontend and swimlane in progress on two branches",
            "stages-apart",
            ("frontend", "swimlane"),
        ),
        (
            "stage incore entered out of order (expected swimlane)",
            "stage-order",
            ("incore", "swimlane"),
        ),
        (
            f"cube limit relaxed apart on merged branches: [[256,256],[1,2],[3,4]] by {A}, "
            f"[[512,128],[1,2],[3,4]] by {B}",
            "limits-apart",
            (A, B),
        ),
        (
            "skill budget exceeded: perf-analyzer, tune-frontend, tune-swimlane",
            "skill-budget",
            ("perf-analyzer", "tune-frontend", "tune-swimlane"),
        ),
        (f"target sheet {A} written after attempts were adopted", "sheet-after-adopt", (A,)),
        (
            f"attempt {A} abandoned after it was verified",
            "finished-twice",
            (A, "verified", "abandoned"),
        ),
    ],
)
def test_a_schema_1_text_reads_back_as_the_typed_conflict(
    text: str, kind: str, parties: tuple[str, ...]
) -> None:
    assert conflict_of_text(text) == {"kind": kind, "parties": list(parties)}


def test_a_schema_1_text_no_version_wrote_is_refused() -> None:
    with pytest.raises(ValueError, match="names no conflict tune-ledger recorded"):
        conflict_of_text("the branches disagree")


def test_a_schema_1_resolution_is_upcast_on_read() -> None:
    line = record.to_line(in_point().events[-1])  # any verified event, to borrow its envelope
    parsed = record.from_record(
        {
            **json.loads(line),
            "type": "conflict.resolved",
            "schema": 1,
            "payload": {
                "conflict": f"attempts {A} and {B} pending at once",
                "resolution": f"abandon:{A}",
                "reason": "r",
            },
        }
    )
    assert (parsed.schema, parsed.data["conflict"]) == (
        2,
        {"kind": "attempts-pending", "parties": [A, B]},
    )
    assert parsed.payload() == ConflictResolved(
        conflict=Conflict("attempts-pending", (A, B)), resolution=f"abandon:{A}", reason="r"
    )


# --- the conflict set does not depend on the interleaving ----------------------------------

# Each branch's steps: ("try", config width, verified time or None for left pending), or
# ("relax", limit); widths differ between the branches (R9 refuses a config measured twice).
Step = tuple[str, int, float | None]
_STEP = st.one_of(
    st.tuples(st.just("try"), st.integers(0, 3), st.sampled_from([None, 70.0, 90.0, 120.0])),
    st.tuples(st.just("relax"), st.sampled_from([80, 96, 128]), st.none()),
)


def _play(driver: Driver, steps: list[Step], name: str, widths: list[int]) -> None:
    tried: set[int] = set()
    for index, (step, value, time_us) in enumerate(steps):
        if step == "relax":
            driver.run(
                cmd.Relax(person="Pat", what="vec", limit=value, basis=f"{name} step {index}")
            )
        elif driver.state.pending is None and widths[value] not in tried:
            tried.add(widths[value])
            attempt = driver.start(candidate(vec_tile_shape=vec(widths[value])))
            if time_us is not None:
                driver.run(verify(attempt, time_us))


def _label(state: State, party: str) -> str:
    """A party by what it is rather than by its event id (notes change every later id)."""
    if party in state.attempts:
        return f"width {state.attempts[party].config['vec_tile_shape'][-1]}"
    relaxation = next((r for r in state.relaxations if r.event.startswith(party)), None)
    return relaxation.basis if relaxation is not None else party


def _shape(
    steps: tuple[list[Step], list[Step]], pads: tuple[int, int]
) -> set[tuple[str, frozenset[str]]]:
    """The conflicts of the merged branches, each as its kind and its set of parties."""
    trunk = in_point()
    ours, theirs = _fork(trunk), _fork(trunk)
    for driver, branch_steps, pad, name, widths in (
        (ours, steps[0], pads[0], "ours", [2, 4, 6, 10]),
        (theirs, steps[1], pads[1], "theirs", [12, 14, 18, 20]),
    ):
        _notes(driver, pad, name)
        _play(driver, branch_steps, name, widths)
    events = _merged(ours, theirs)
    assert audit.legality_findings(events) == []  # each branch's steps stay legal
    state = replay(events)
    return {(c.kind, frozenset(_label(state, p) for p in c.parties)) for c in conflicts(state)}


@settings(max_examples=40, deadline=None)
@given(
    st.lists(_STEP, max_size=4),
    st.lists(_STEP, max_size=4),
    st.tuples(st.integers(0, 6), st.integers(0, 6)),
)
# One branch adopts twice, the other once: the second adoption carries the conflict forward.
@example([("try", 0, 90.0), ("try", 1, 70.0)], [("try", 0, 80.0)], (0, 6))
def test_the_conflicts_do_not_depend_on_how_the_merge_interleaves_the_branches(
    ours: list[Step],
    theirs: list[Step],
    pads: tuple[int, int],
) -> None:
    """Pending attempts, competing bests and relaxations apart are what each branch ended
    with: notes that move one branch's steps before or after the other's change nothing."""
    assert _shape((ours, theirs), pads) == _shape((ours, theirs), (0, 0))
