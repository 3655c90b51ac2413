"""R2 Skills: 2 base + 1 tune skill at most; tune-X only while stage X is current."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledger.domain.hints import Step
from ledger.domain.state import State
from ledger.errors import BadInput
from ledger.schema.events import BASE_SKILLS, SKILLS, TUNE_SKILLS, SkillLoaded, SkillUnloaded
from ledger.schema.vocabulary import MAX_BASE_SKILLS, MAX_TUNE_SKILLS
from stages.outcome import Result, accept, refuse
from stages.pipeline import active_stage
from stages.refusal import Refusal

if TYPE_CHECKING:  # annotations only: a read asks the blockers, not the commands
    from stages.commands import LoadSkill, UnloadSkill

MAX_BASE = MAX_BASE_SKILLS
MAX_TUNE = MAX_TUNE_SKILLS


def known_skill(name: str) -> str:
    """`name` when it is a skill the protocol knows, else BadInput."""
    if name not in SKILLS:
        raise BadInput(f"unknown skill {name!r}", hint=f"skills: {', '.join(SKILLS)}")
    return name


def load_blocker(state: State, name: str) -> Refusal | None:
    """Why skill `name` may not be loaded now (R2, R3), or None."""
    if name in state.skills:
        return refuse(
            "R2",
            f"skill {name} is already loaded",
            f"{name} is loaded",
            "go on with the loaded skills",
        )
    base = [s for s in state.skills if s in BASE_SKILLS]
    if name in BASE_SKILLS and len(base) >= MAX_BASE:
        return refuse(
            "R2",
            f"at most {MAX_BASE} base skills",
            f"loaded: {', '.join(base)}",
            "unload a base skill first",
        )
    if name not in TUNE_SKILLS:
        return None
    if state.target is None:
        return refuse(
            "R3",
            f"{name} needs the Performance target sheet first",
            "no target sheet is recorded",
            f"write it: {Step('target', state.op, from_spec=True)} (or give baseline, shape, "
            "target and target_source)",
        )
    stage = TUNE_SKILLS[name]
    current = active_stage(state)
    if current != stage:
        return refuse(
            "R2",
            f"{name} may be loaded only while stage {stage} is current",
            f"current stage: {current or 'none'}",
            "load the tune skill of the current stage (none in algorithm)",
        )
    tune = [s for s in state.skills if s in TUNE_SKILLS]
    if len(tune) >= MAX_TUNE:
        return refuse(
            "R2",
            f"at most {MAX_TUNE} tune skill",
            f"loaded: {', '.join(tune)}",
            f"unload {tune[0]} first",
        )
    return None


def decide_load(state: State, command: LoadSkill) -> Result:
    """Load a skill within the budget and the stage's tune skill only (R2)."""
    name = known_skill(command.name)
    blocker = load_blocker(state, name)
    return blocker if blocker is not None else accept(SkillLoaded(name=name))


def decide_unload(state: State, command: UnloadSkill) -> Result:
    """Unload a loaded skill (R2)."""
    name = known_skill(command.name)
    if name not in state.skills:
        return refuse(
            "R2",
            f"skill {name} is not loaded",
            f"loaded: {', '.join(state.skills) or 'none'}",
            "unload a loaded skill",
        )
    return accept(SkillUnloaded(name=name))
