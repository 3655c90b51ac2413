"""Protocol conflicts created by merging branches: replay records them, audit keeps each branch's
steps legal, `check` fails until a recorded resolution makes the state consistent again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from driver import Driver, candidate, in_point, in_stage, vec, verify
from factories import draft
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.domain import hints
from ledger.domain.replay import evolve, replay
from ledger.domain.state import State
from ledger.errors import BadInput, RuleRefusal
from ledger.git import merge
from ledger.log import chain, record
from ledger.projections import conflicts as conflict_view
from ledger.projections import resume_view, status_view
from ledger.schema.conflicts import Conflict
from ledger.schema.events import ConflictResolved
from ledger.shell import audit
from ledger.shell.api import OpLedger
from stages import commands as cmd
from stages import resolve
from stages.conflicts import conflicts, options

OP = "softmax"


def _trunk(tmp_path: Path, driver_events: list[record.Event]) -> OpLedger:
    ledger = OpLedger(tmp_path / "trunk", OP)
    ledger.dir.mkdir(parents=True)
    ledger.store.path.write_bytes(b"".join(record.to_line(e) for e in driver_events))
    ledger.render_memory()
    return ledger


def _fork(trunk: OpLedger, name: str) -> OpLedger:
    shutil.copytree(trunk.root, trunk.root.parent / name)
    return OpLedger(trunk.root.parent / name, OP)


def _merge(ours: OpLedger, theirs: OpLedger) -> OpLedger:
    merged = OpLedger(ours.root.parent / "merged", OP)
    shutil.copytree(ours.root, merged.root)
    data = merge.merge(b"", ours.store.path.read_bytes(), theirs.store.path.read_bytes()).data
    merged.store.path.write_bytes(data)
    merged.render_memory()
    return merged


def _start(ledger: OpLedger, command: object) -> str:
    outcome = ledger.execute(command)
    (started,) = [e for e in outcome.events if e.type == "attempt.started"]
    return started.id[:12]


def _audit_clean(ledger: OpLedger) -> dict[str, object]:
    report = audit.audit_op(ledger)
    assert report["findings"] == []
    return report


def _check(ledger: OpLedger) -> list[str]:
    order = merge.order_findings(ledger.store, OP)
    return order or [  # as the CLI prints them (ledger/domain/hints.py)
        *map(hints.render_text, conflict_view.findings(ledger.load().state)),
        *audit.check_memory_file(ledger),
    ]


def _open(ledger: OpLedger) -> tuple[Conflict, ...]:
    """The conflicts open in the ledger's replayed state."""
    return conflicts(ledger.load().state)


def _texts(state: State) -> list[str]:
    return conflict_view.texts(state)


def _resolve(ledger: OpLedger, conflict: Conflict | str, resolution: str) -> list[str]:
    """Resolve `conflict` (a conflict, or what `--conflict` takes: an id or a number)."""
    command = resolve.Resolve(
        conflict=conflict.id if isinstance(conflict, Conflict) else conflict,
        resolution=resolution,
        reason="kept the other branch's",
    )
    outcome = ledger.execute(command, decider=resolve.decision)
    return [e.type for e in outcome.events]


@pytest.fixture
def pending_twice(tmp_path: Path) -> tuple[OpLedger, str, str]:
    """Two branches that each started an attempt in the same open point, merged."""
    trunk = _trunk(tmp_path, in_point().events)
    ours, theirs = _fork(trunk, "ours"), _fork(trunk, "theirs")
    a = _start(ours, candidate(vec_tile_shape=vec(32)))
    b = _start(theirs, candidate(vec_tile_shape=vec(16)))
    return _merge(ours, theirs), a, b


def test_two_pending_attempts_are_a_conflict_but_each_branch_stays_legal(
    pending_twice: tuple[OpLedger, str, str],
) -> None:
    merged, a, b = pending_twice
    state = merged.load().state
    first, second = sorted(
        (a, b),
        key=lambda x: [
            e.id[:12] for e in merged.store.read().events if e.type == "attempt.started"
        ].index(x),
    )
    assert conflicts(state) == (Conflict("attempts-pending", (first, second)),)
    assert _texts(state) == [f"attempts {first} and {second} pending at once"]
    report = _audit_clean(merged)
    assert report["conflicts"] == _texts(state)
    (finding,) = _check(merged)
    assert finding == (
        f"unresolved merge conflict: {_texts(state)[0]}; resolve it: "
        f"tune-ledger resolve {OP} --conflict attempts-pending:{first}+{second} --resolution "
        f"RESOLUTION --reason TEXT, RESOLUTION one of: abandon:{first}, abandon:{second}"
    )


@pytest.mark.parametrize("which", [0, 1])
def test_abandoning_either_pending_attempt_resolves_it(
    pending_twice: tuple[OpLedger, str, str], which: int
) -> None:
    merged, a, b = pending_twice
    dropped, kept = (a, b) if which == 0 else (b, a)
    (conflict,) = _open(merged)
    with pytest.raises(BadInput, match="does not resolve"):
        _resolve(merged, conflict, "keep")
    assert _resolve(merged, conflict, f"abandon:{dropped}") == [
        "attempt.abandoned",
        "conflict.resolved",
    ]
    state = merged.load().state
    assert (conflicts(state), state.pending) == ((), kept)
    assert state.attempts[dropped].status == "abandoned"
    _audit_clean(merged)
    assert _check(merged) == []
    merged.execute(verify(kept, 90.0))  # the protocol goes on from the consistent state
    assert merged.load().state.pending is None
    _audit_clean(merged)


def test_a_verified_branch_attempt_leaves_the_other_pending_and_no_conflict(
    pending_twice: tuple[OpLedger, str, str],
) -> None:
    """Once one of two pending attempts is verified nothing competes: the other is the
    pending attempt, and no resolution is needed (issue 18: conflicts only where outcomes
    compete; this asserted a `keep` resolution before)."""
    merged, a, b = pending_twice
    merged.execute(verify(a, 95.0))
    state = merged.load().state
    assert (state.pending, conflicts(state)) == (b, ())
    _audit_clean(merged)
    assert _check(merged) == []


def test_two_adopts_from_the_same_best_are_a_conflict_resolved_by_choosing_the_best(
    tmp_path: Path,
) -> None:
    trunk = _trunk(tmp_path, in_point().events)
    ours, theirs = _fork(trunk, "ours"), _fork(trunk, "theirs")
    slow = _start(ours, candidate(vec_tile_shape=vec(32)))
    ours.execute(verify(slow, 90.0))
    fast = _start(theirs, candidate(vec_tile_shape=vec(16)))
    theirs.execute(verify(fast, 80.0))
    merged = _merge(ours, theirs)
    state = merged.load().state
    # Both attempts finished on their branches: only the two bests compete (issue 18; this
    # asserted a pending-at-once conflict and a `keep` for the bests before).
    (conflict,) = conflicts(state)
    assert (conflict.kind, set(conflict.parties)) == ("bests", {slow, fast})
    assert "was adopted against best baseline while attempt" in _texts(state)[0]
    faster, remeasure, *bests = options(state, conflict)
    assert (faster, remeasure, set(bests)) == (
        "faster",
        "remeasure",
        {f"best:{slow}", f"best:{fast}"},
    )
    _audit_clean(merged)
    assert _resolve(merged, conflict, "faster") == ["conflict.resolved"]
    resolved = merged.store.read().events[-1]
    assert resolved.data["resolution"] == f"best:{fast}"  # recorded as the choice it made
    state = merged.load().state
    assert state.best is not None and state.best.attempt == fast
    assert conflicts(state) == ()
    _audit_clean(merged)
    assert _check(merged) == []


def test_the_same_stage_entered_on_two_branches_is_no_conflict(tmp_path: Path) -> None:
    """Both branches agree on the stage (issue 18; this asserted "entered twice" before)."""
    from driver import with_sheet

    trunk = _trunk(tmp_path, with_sheet().events)
    ours, theirs = _fork(trunk, "ours"), _fork(trunk, "theirs")
    for ledger in (ours, theirs):
        ledger.execute(cmd.EnterStage(stage="frontend"))
    merged = _merge(ours, theirs)
    state = merged.load().state
    assert (conflicts(state), state.stage, state.entered) == ((), "frontend", ["frontend"])
    _audit_clean(merged)
    assert _check(merged) == []


def test_two_open_points_are_resolved_by_closing_one(tmp_path: Path) -> None:
    trunk = _trunk(tmp_path, in_stage().events)
    ours, theirs = _fork(trunk, "ours"), _fork(trunk, "theirs")
    ours.execute(cmd.OpenPoint(name="F-1"))
    theirs.execute(cmd.OpenPoint(name="F-2"))
    merged = _merge(ours, theirs)
    (conflict,) = _open(merged)
    assert (conflict.kind, set(conflict.parties)) == ("points-open", {"F-1", "F-2"})
    assert _texts(merged.load().state) == [f"points {' and '.join(conflict.parties)} open at once"]
    assert _resolve(merged, conflict, "close:F-1") == ["point.closed", "conflict.resolved"]
    state = merged.load().state
    assert (state.open_point, state.points["F-1"].is_open) == ("F-2", False)
    _audit_clean(merged)


def test_an_attempt_started_after_a_stop_on_another_branch_is_abandoned(tmp_path: Path) -> None:
    trunk = _trunk(tmp_path, in_point().events)
    ours, theirs = _fork(trunk, "ours"), _fork(trunk, "theirs")
    ours.execute(cmd.Stop(reason="enough"))
    theirs.execute(cmd.AddNote(text="one more idea"))  # puts the attempt after the stop
    late = _start(theirs, candidate(vec_tile_shape=vec(32)))
    merged = _merge(ours, theirs)
    state = merged.load().state
    assert conflicts(state) == (Conflict("after-stop", (late,)),)
    assert _texts(state) == [f"attempt {late} started after the campaign stopped (user)"]
    assert options(state, conflicts(state)[0]) == (f"abandon:{late}",)
    assert _resolve(merged, "1", f"abandon:{late}") == ["attempt.abandoned", "conflict.resolved"]
    assert merged.load().state.pending is None
    _audit_clean(merged)


def test_audit_reports_a_resolution_that_does_not_fit(
    pending_twice: tuple[OpLedger, str, str],
) -> None:
    """A conflict.resolved that clears a conflict without making the state consistent (or
    names no conflict) is a finding: resolutions are re-decided like every step."""
    merged, _a, _b = pending_twice
    conflict = _open(merged)[0]
    forged = ConflictResolved(conflict=conflict, resolution="keep", reason="hide it")
    merged.store.append([draft(forged)], expected_head=None)
    merged.render_memory()
    assert _open(merged) == ()
    findings = audit.audit_op(merged)["findings"]
    assert isinstance(findings, list) and len(findings) == 1
    assert "the resolution is not valid here" in findings[0]
    assert "does not resolve" in findings[0]


def test_resolve_refuses_unknown_conflicts_and_empty_reasons(
    pending_twice: tuple[OpLedger, str, str],
) -> None:
    merged, a, _b = pending_twice
    state = merged.load().state
    with pytest.raises(BadInput, match="names no open conflict"):
        resolve.decide(
            state, resolve.Resolve(conflict="nothing like it", resolution="keep", reason="x")
        )
    # Conflicts are named by their id or number, never by their text (DESIGN §8).
    with pytest.raises(BadInput, match="names no open conflict"):
        resolve.decide(
            state, resolve.Resolve(conflict=_texts(state)[0], resolution="keep", reason="x")
        )
    with pytest.raises(BadInput, match="reason"):
        resolve.decide(state, resolve.Resolve(conflict="1", resolution=f"abandon:{a}", reason=" "))
    with pytest.raises(BadInput, match="no conflict"):
        resolve.decide(
            in_point().state, resolve.Resolve(conflict="1", resolution="keep", reason="x")
        )


def test_new_steps_are_refused_until_the_conflict_is_resolved(
    pending_twice: tuple[OpLedger, str, str],
) -> None:
    """While a merge conflict is open, starting anything new is refused; finishing is not,
    and finishing both attempts ends the conflict (issue 18: before, it needed a `keep`)."""
    from ledger.errors import RuleRefusal

    merged, a, b = pending_twice
    with pytest.raises(RuleRefusal) as refused:
        merged.execute(cmd.TryMutation(param="vec_tile_shape", value=vec(8)))
    assert refused.value.rule == "merge"
    assert "tune-ledger resolve" in hints.render_text(refused.value.hint or "")
    merged.execute(verify(a, 95.0))
    merged.execute(verify(b, 96.0))
    assert _open(merged) == ()
    merged.execute(cmd.TryMutation(param="vec_tile_shape", value=vec(8)))
    _audit_clean(merged)


def test_an_attempt_pending_on_one_branch_and_a_stop_on_the_other_conflict(
    tmp_path: Path,
) -> None:
    """Whichever comes first in canonical order, the attempt goes on after the stop (R10)."""
    trunk = _trunk(tmp_path, in_point().events)
    ours, theirs = _fork(trunk, "ours"), _fork(trunk, "theirs")
    ours.execute(cmd.Stop(reason="enough"))
    late = _start(theirs, candidate(vec_tile_shape=vec(32)))
    merged = _merge(ours, theirs)
    state = merged.load().state
    (conflict,) = conflicts(state)
    assert conflict.parties == (late,) and conflict.kind in ("after-stop", "pending-at-stop")
    assert late in _texts(state)[0] and "stopped (user)" in _texts(state)[0]
    assert options(state, conflict) == (f"abandon:{late}",)
    assert _resolve(merged, "1", f"abandon:{late}") == ["attempt.abandoned", "conflict.resolved"]
    assert _open(merged) == ()
    _audit_clean(merged)


def test_a_step_of_an_earlier_stage_after_a_later_stage_is_a_conflict_kept(
    tmp_path: Path,
) -> None:
    """One branch went on to swimlane; the other opened a point in frontend (R4)."""
    trunk = _trunk(tmp_path, in_stage().events)
    ours, theirs = _fork(trunk, "ours"), _fork(trunk, "theirs")
    ours.execute(cmd.ExitStage(stage="frontend", reason="user", by_user=True))
    ours.execute(cmd.UnloadSkill(name="tune-frontend"))
    ours.execute(cmd.EnterStage(stage="swimlane"))
    for text in ("a", "b", "c"):  # the point comes after swimlane in canonical order
        theirs.execute(cmd.AddNote(text=text))
    theirs.execute(cmd.OpenPoint(name="F-9"))
    merged = _merge(ours, theirs)
    state = merged.load().state
    assert Conflict("stages-apart", ("frontend", "swimlane")) in conflicts(state)
    assert "stages frontend and swimlane in progress on two branches" in _texts(state)
    assert state.stage == "swimlane"
    _audit_clean(merged)


def _relax(ledger: OpLedger, limit: object, what: str = "vec") -> str:
    outcome = ledger.execute(cmd.Relax(person="Pat", what=what, limit=limit, basis="profile"))
    return outcome.events[0].id[:12]


def _in_force(ledger: OpLedger, what: str = "vec") -> object:
    from stages.target import latest_relaxation

    relaxation = latest_relaxation(ledger.load().state, what)
    return relaxation.limit if relaxation else None


@pytest.mark.parametrize("resolution", ["stricter", "ours", "theirs"])
def test_two_branches_relaxing_one_limit_differently_conflict_until_one_is_chosen(
    tmp_path: Path, resolution: str
) -> None:
    """R3: each relaxation was decided against the limit of its own branch; neither follows
    the other, so which one is in force is a person's choice (issue 18)."""
    trunk = _trunk(tmp_path, in_point().events)
    ours, theirs = _fork(trunk, "ours"), _fork(trunk, "theirs")
    wide = _relax(ours, 128)
    narrow = _relax(theirs, 96)
    merged = _merge(ours, theirs)
    state = merged.load().state
    (conflict,) = conflicts(state)
    assert (conflict.kind, set(conflict.parties)) == ("limits-apart", {wide, narrow})
    (text,) = _texts(state)
    assert text.startswith("vec limit relaxed apart on merged branches: ")
    assert f"128 by {wide}" in text and f"96 by {narrow}" in text
    stricter, *chosen = options(state, conflict)
    assert (stricter, set(chosen)) == ("stricter", {f"limit:{wide}", f"limit:{narrow}"})
    (finding,) = _check(merged)
    assert "RESOLUTION one of: stricter, limit:" in finding
    with pytest.raises(RuleRefusal) as refused:  # no tuning step while it is open
        merged.execute(cmd.TryMutation(param="vec_tile_shape", value=vec(8)))
    assert refused.value.rule == "merge"
    _audit_clean(merged)
    picked = {"stricter": "stricter", "ours": f"limit:{wide}", "theirs": f"limit:{narrow}"}
    assert _resolve(merged, conflict, picked[resolution]) == ["conflict.resolved"]
    assert merged.store.read().events[-1].data["resolution"] == (
        f"limit:{narrow}" if resolution != "ours" else f"limit:{wide}"
    )
    assert _in_force(merged) == (128 if resolution == "ours" else 96)
    assert _open(merged) == ()
    _audit_clean(merged)
    assert _check(merged) == []
    # The next relaxation follows the chosen one: no new conflict.
    _relax(merged, 160)
    assert (_open(merged), _in_force(merged)) == ((), 160)
    _audit_clean(merged)


def test_one_branch_relaxing_twice_is_a_sequence_not_a_conflict(tmp_path: Path) -> None:
    trunk = _trunk(tmp_path, in_point().events)
    ours, theirs = _fork(trunk, "ours"), _fork(trunk, "theirs")
    _relax(ours, 96)
    _relax(ours, 128)
    theirs.execute(cmd.AddNote(text="no relaxation here"))
    merged = _merge(ours, theirs)
    assert (_open(merged), _in_force(merged)) == ((), 128)
    _audit_clean(merged)


def test_the_same_relaxation_on_two_branches_agrees(tmp_path: Path) -> None:
    trunk = _trunk(tmp_path, in_point().events)
    ours, theirs = _fork(trunk, "ours"), _fork(trunk, "theirs")
    cube = [[256, 256], [128, 512], [256, 256]]
    _relax(ours, cube, "cube")
    _relax(theirs, cube, "cube")
    _relax(theirs, 96)  # another limit: relaxed on one branch only
    merged = _merge(ours, theirs)
    assert (_open(merged), _in_force(merged, "cube")) == ((), cube)
    _audit_clean(merged)


def test_a_later_relaxation_carries_the_conflict_to_the_limits_the_branches_end_with(
    tmp_path: Path,
) -> None:
    """Branch one relaxes to 96 then 128, branch two to 96: they end with different limits
    (as a three-way merge of one value changed on both sides), whatever the order."""
    trunk = _trunk(tmp_path, in_point().events)
    ours, theirs = _fork(trunk, "ours"), _fork(trunk, "theirs")
    _relax(ours, 96)
    last = _relax(ours, 128)
    other = _relax(theirs, 100)
    merged = _merge(ours, theirs)
    (conflict,) = _open(merged)
    (text,) = _texts(merged.load().state)
    assert f"128 by {last}" in text and f"100 by {other}" in text
    offered = options(merged.load().state, conflict)
    assert offered == ("stricter", f"limit:{other}", f"limit:{last}") or offered == (
        "stricter",
        f"limit:{last}",
        f"limit:{other}",
    )
    _resolve(merged, conflict, "stricter")
    assert _in_force(merged) == 100
    _audit_clean(merged)


def test_cube_relaxations_neither_lower_on_every_axis_offer_no_stricter(tmp_path: Path) -> None:
    trunk = _trunk(tmp_path, in_point().events)
    ours, theirs = _fork(trunk, "ours"), _fork(trunk, "theirs")
    a = _relax(ours, [[256, 256], [128, 512], [256, 256]], "cube")
    b = _relax(theirs, [[512, 128], [128, 512], [256, 256]], "cube")
    merged = _merge(ours, theirs)
    (conflict,) = _open(merged)
    assert set(options(merged.load().state, conflict)) == {f"limit:{a}", f"limit:{b}"}


def _two_bests(tmp_path: Path) -> tuple[OpLedger, str, str]:
    trunk = _trunk(tmp_path, in_point().events)
    ours, theirs = _fork(trunk, "ours"), _fork(trunk, "theirs")
    slow = _start(ours, candidate(vec_tile_shape=vec(32)))
    ours.execute(verify(slow, 90.0))
    fast = _start(theirs, candidate(vec_tile_shape=vec(16)))
    theirs.execute(verify(fast, 80.0))
    return _merge(ours, theirs), slow, fast


def test_re_measuring_both_bests_says_what_to_run_and_closes_with_both_verdicts(
    tmp_path: Path,
) -> None:
    """R8 with fresh measurements: `remeasure` puts back the best both branches shared, and
    each config is measured again; the regression loop then picks the faster (issue 18)."""
    merged, slow, fast = _two_bests(tmp_path)
    state = merged.load().state
    (conflict,) = conflicts(state)
    assert options(state, conflict)[:2] == ("faster", "remeasure")
    assert _resolve(merged, conflict, "remeasure") == ["conflict.resolved"]
    state = merged.load().state
    (remeasuring,) = conflicts(state)
    assert (remeasuring.kind, set(remeasuring.parties)) == ("remeasure", {slow, fast})
    first = remeasuring.parties[0]
    assert _texts(state) == [f"bests {' and '.join(remeasuring.parties)} to be re-measured"]
    assert state.best is not None and state.best.attempt is None  # the shared baseline
    (finding,) = _check(merged)
    second = fast if first == slow else slow

    def _steps(best: str) -> str:
        config = json.dumps(state.attempts[best].config, sort_keys=True, separators=(",", ":"))
        return (
            f"re-measure attempt {best}'s config: `tune-ledger candidate {OP} --config "
            f"'{config}' --prior remeasure:{best}`, then `tune-ledger measure {OP} ATTEMPT` (or "
            f"`tune-ledger verify {OP} ATTEMPT --output NAME=true|false --layout-exit N "
            "--time TIME`)"
        )

    assert finding == (
        f"unresolved merge conflict: {_texts(state)[0]}; to close it: {_steps(first)}; "
        f"then {_steps(second)}"
    )
    with pytest.raises(RuleRefusal) as refused:  # anything else waits
        merged.execute(cmd.TryMutation(param="vec_tile_shape", value=vec(8)))
    assert (refused.value.rule, hints.render_text(refused.value.hint or "")) == (
        "merge",
        f"{_steps(first)}; then {_steps(second)}",
    )
    assert status_view.status(state)["allowed"] == ["candidate"]
    again_slow = _start(merged, candidate(prior=f"remeasure:{slow}", vec_tile_shape=vec(32)))
    with pytest.raises(RuleRefusal, match="one change at a time"):
        merged.execute(candidate(prior=f"remeasure:{fast}", vec_tile_shape=vec(16)))
    assert merged.execute(verify(again_slow, 85.0)).events[-1].data["verdict"] == "adopt"
    assert _open(merged)  # one config still to measure
    again_fast = _start(merged, candidate(prior=f"remeasure:{fast}", vec_tile_shape=vec(16)))
    assert merged.execute(verify(again_fast, 88.0)).events[-1].data["verdict"] == "rollback"
    state = merged.load().state
    assert conflicts(state) == () and state.remeasure == {}
    assert state.best is not None and state.best.attempt == again_slow
    _audit_clean(merged)
    assert _check(merged) == []


def test_an_abandoned_re_measurement_must_be_started_again(tmp_path: Path) -> None:
    merged, slow, fast = _two_bests(tmp_path)
    _resolve(merged, "1", "remeasure")
    again = _start(merged, candidate(prior=f"remeasure:{slow}", vec_tile_shape=vec(32)))
    merged.execute(cmd.Abandon(attempt=again, reason="the host was busy"))
    state = merged.load().state
    assert state.remeasure[slow] is None and len(conflicts(state)) == 1
    for config, best in ((vec(32), slow), (vec(16), fast)):
        attempt = _start(merged, candidate(prior=f"remeasure:{best}", vec_tile_shape=config))
        merged.execute(verify(attempt, 95.0))
    assert _open(merged) == ()
    _audit_clean(merged)


@pytest.mark.parametrize("first", [True, False])
def test_agreeing_on_a_limit_then_raising_it_is_a_conflict_in_any_order(
    tmp_path: Path, first: bool
) -> None:
    """Branch one relaxes to 96; branch two to 96, then 128: the branches end with different
    limits whichever the merge puts first (notes move the other branch's steps later)."""
    trunk = _trunk(tmp_path, in_point().events)
    ours, theirs = _fork(trunk, "ours"), _fork(trunk, "theirs")
    for n in range(6):
        (theirs if first else ours).execute(cmd.AddNote(text=f"note {n}"))
    one = _relax(ours, 96)
    _relax(theirs, 96)
    raised = _relax(theirs, 128)
    merged = _merge(ours, theirs)
    events = merged.store.read().events
    relaxed = [e.id[:12] for e in events if e.type == "limit.relaxed"]
    assert (relaxed.index(one) == 0) == first  # both orders are exercised
    (text,) = _texts(merged.load().state)
    assert f"96 by {one}" in text and f"128 by {raised}" in text


def test_agreeing_branches_then_one_relaxation_after_the_merge_is_no_conflict(
    tmp_path: Path,
) -> None:
    """A relaxation after the merge supersedes every relaxation the merged branch saw."""
    trunk = _trunk(tmp_path, in_point().events)
    ours, theirs = _fork(trunk, "ours"), _fork(trunk, "theirs")
    _relax(ours, 96)
    _relax(theirs, 96)
    merged = _merge(ours, theirs)
    assert _open(merged) == ()
    _relax(merged, 128)
    assert (_open(merged), _in_force(merged)) == ((), 128)
    _audit_clean(merged)


def test_resume_names_the_next_re_measurement_then_the_conflicts_command(
    tmp_path: Path,
) -> None:
    """An interrupted agent learns from `resume` what closes the conflict, not only that one
    is open."""
    merged, slow, fast = _two_bests(tmp_path)
    assert hints.render(resume_view.resume(merged.load().state)["next"]) == [
        f"tune-ledger conflicts {OP} (then resolve each conflict as it says)"
    ]
    _resolve(merged, "1", "remeasure")
    (step,) = hints.render(resume_view.resume(merged.load().state)["next"])
    assert step.startswith("re-measure attempt ")
    assert f"--prior remeasure:{slow}`" in step and f"--prior remeasure:{fast}`" in step


def test_two_algorithm_bests_offer_no_re_measurement(tmp_path: Path) -> None:
    """Algorithm changes differ in code, not config: `remeasure` is not offered for them."""
    trunk = _trunk(tmp_path, in_stage("algorithm").events)
    ours, theirs = _fork(trunk, "ours"), _fork(trunk, "theirs")
    fused = _start(ours, cmd.TryAlgorithm(description="fuse max and sum", impl_digest="a" * 64))
    ours.execute(verify(fused, 90.0))
    split = _start(theirs, cmd.TryAlgorithm(description="split the reduce", impl_digest="b" * 64))
    theirs.execute(verify(split, 80.0))
    merged = _merge(ours, theirs)
    state = merged.load().state
    (conflict,) = conflicts(state)
    assert "remeasure" not in options(state, conflict)
    assert options(state, conflict)[0] == "faster"


def _forked(driver: Driver) -> Driver:
    copy = Driver()
    for event in driver.events:
        copy.events.append(event)
        evolve(copy.state, event)
    return copy


def _merged_events(ours: Driver, theirs: Driver) -> list[record.Event]:
    sides = [b"".join(record.to_line(e) for e in d.events) for d in (ours, theirs)]
    return list(chain.scan(merge.merge(b"", *sides).data, "merged").events)


_LIMITS = st.lists(st.sampled_from([80, 96, 128]), max_size=3)


@settings(max_examples=60, deadline=None)
@given(_LIMITS, _LIMITS, st.integers(0, 4), st.integers(0, 4))
def test_relaxations_conflict_exactly_when_the_branches_end_with_different_limits(
    ours_limits: list[int], theirs_limits: list[int], ours_notes: int, theirs_notes: int
) -> None:
    """Whatever each branch did and however the merge interleaves it (notes move a branch's
    Lamport counters), the merged state conflicts iff both relaxed and ended apart, and
    otherwise the limit in force is the one a branch ended with (R3, DESIGN §8)."""
    from stages.target import vec_limit

    trunk = in_point()
    ours, theirs = _forked(trunk), _forked(trunk)
    for driver, limits, notes, name in (
        (ours, ours_limits, ours_notes, "ours"),
        (theirs, theirs_limits, theirs_notes, "theirs"),
    ):
        for n in range(notes):
            driver.run(cmd.AddNote(text=f"{name} {n}"))
        for limit in limits:
            driver.run(cmd.Relax(person="Pat", what="vec", limit=limit, basis=f"{name} profile"))
    events = _merged_events(ours, theirs)
    state = replay(events)
    relaxed = [c for c in conflicts(state) if c.kind == "limits-apart"]
    apart = bool(ours_limits and theirs_limits and ours_limits[-1] != theirs_limits[-1])
    assert bool(relaxed) == apart, (conflicts(state), ours_limits, theirs_limits)
    if not apart:
        ends = [limits[-1] for limits in (ours_limits, theirs_limits) if limits]
        assert vec_limit(state) == (ends[0] if ends else 64)
    assert audit.legality_findings(events) == []  # each branch's steps stay legal
