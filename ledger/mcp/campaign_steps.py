"""The tools that steer a campaign: skills (R2), stages (R4), points (R7), notes, policy,
the stop, its lifting and the hand-back (R10), and merge conflicts' resolutions."""

from __future__ import annotations

import json
from typing import Annotated, Any

from mcp.types import CallToolResult as Result
from pydantic import Field

from ledger.mcp.arguments import (
    Key,
    Op,
    Reason,
    Skill,
    Stage,
    options,
)
from ledger.mcp.invoke import ToolGroup


class CampaignSteps(ToolGroup):
    """The steps that steer a campaign between its attempts."""

    def skill_load(
        self,
        op: Op,
        name: Annotated[
            Skill,
            Field(description="The skill: a base skill, or a stage's tune skill (inside it)."),
        ],
        idempotency_key: Key = None,
    ) -> Result:
        """Load a skill within the budget (R2): tune skills only inside their stage."""
        return self._run(idempotency_key, ["skill", "load"], [op, name])

    def skill_unload(
        self,
        op: Op,
        name: Annotated[Skill, Field(description="A loaded skill.")],
        idempotency_key: Key = None,
    ) -> Result:
        """Unload a skill, freeing its place in the budget (R2)."""
        return self._run(idempotency_key, ["skill", "unload"], [op, name])

    def stage_enter(
        self,
        op: Op,
        name: Annotated[Stage, Field(description="The next stage of the pipeline.")],
        idempotency_key: Key = None,
    ) -> Result:
        """Enter the next stage: frontend -> swimlane -> incore -> algorithm (R4)."""
        return self._run(idempotency_key, ["stage", "enter"], [op, name])

    def stage_exit(
        self,
        op: Op,
        name: Annotated[Stage, Field(description="The current stage.")],
        reason: Annotated[str | None, Field(description="Why the stage ends.")] = None,
        user_stop: Annotated[
            bool, Field(description="Exit because the user said stop (R4).")
        ] = False,
        hand_back: Annotated[
            bool,
            Field(description="Leave the algorithm stage by handing the result back (R4)."),
        ] = False,
        idempotency_key: Key = None,
    ) -> Result:
        """Leave the current stage once its points are closed (R4, R7)."""
        argv = options(reason=reason, user_stop=user_stop, hand_back=hand_back)
        return self._run(idempotency_key, ["stage", "exit"], [op, name], argv)

    def point_open(
        self,
        op: Op,
        name: Annotated[str, Field(description="The optimization point, e.g. vec_tile_shape.")],
        knob: Annotated[
            list[str] | None,
            Field(
                description="The op manifest's knobs this point tunes (default: the knob NAME); "
                "a change of another knob is refused (R7)."
            ),
        ] = None,
        idempotency_key: Key = None,
    ) -> Result:
        """Open an optimization point of the current stage (R7)."""
        return self._run(idempotency_key, ["point", "open"], [op, name], options(knob=knob))

    def point_close(
        self,
        op: Op,
        name: Annotated[str, Field(description="An open point.")],
        reason: Reason,
        not_applicable: Annotated[
            bool, Field(description="The point does not apply to this op.")
        ] = False,
        idempotency_key: Key = None,
    ) -> Result:
        """Close an optimization point as done (or not applicable) with a reason (R7)."""
        argv = options(reason=reason, not_applicable=not_applicable)
        return self._run(idempotency_key, ["point", "close"], [op, name], argv)

    def stop(self, op: Op, reason: Reason, idempotency_key: Key = None) -> Result:
        """The user stops the campaign (R10); later steps are refused with code 6."""
        return self._run(idempotency_key, ["stop"], [op], options(reason=reason))

    def note(
        self,
        op: Op,
        text: Annotated[str, Field(description="Free text to record.")],
        idempotency_key: Key = None,
    ) -> Result:
        """Record free text in the ledger."""
        return self._run(idempotency_key, ["note"], [op], options(text=text))

    def policy(
        self,
        op: Op,
        key: Annotated[
            str,
            Field(
                description="A policy knob, e.g. noise_threshold, patience.frontend, util_stop_pct."
            ),
        ],
        value: Annotated[
            str | float | bool | list[Any],
            Field(
                description='Its new value, e.g. `0.02` or `["incore"]` (a string is read as JSON).'
            ),
        ],
        reason: Annotated[str | None, Field(description="Why the policy changes.")] = None,
        idempotency_key: Key = None,
    ) -> Result:
        """Change a policy threshold of this op (recorded; later decisions apply it), or set or
        tighten a budget (max_evaluations, max_device_seconds, max_wall_seconds). Lowering a
        guard (require_measured false, a larger noise_threshold, a lower
        bootstrap_confidence, a larger budget or one off) is a person's decision: refused
        (code 3) with the CLI command a person runs."""
        text = value if isinstance(value, str) else json.dumps(value)
        return self._run(idempotency_key, ["policy"], [op, key, text], options(reason=reason))

    def resume_campaign(self, op: Op, reason: Reason, idempotency_key: Key = None) -> Result:
        """Lifting a utilization or budget stop (R10) is a person's decision: always refused
        (code 3) with the CLI command a person runs (`--person NAME --reason TEXT`). Ask the
        user; never on your own."""
        return self._run(idempotency_key, ["resume-campaign"], [op], options(reason=reason))

    def handback(
        self,
        op: Op,
        summary: Annotated[
            str | None, Field(description="What the orchestrator should know about the result.")
        ] = None,
        idempotency_key: Key = None,
    ) -> Result:
        """Hand a stopped campaign's result back to the orchestrator with its report (R10):
        the last step; write the `report` first."""
        return self._run(idempotency_key, ["handback"], [op], options(summary=summary))

    def resolve(
        self,
        op: Op,
        conflict: Annotated[
            str,
            Field(description="The conflict: its id, or its number, as `conflicts` lists them."),
        ],
        resolution: Annotated[
            str,
            Field(
                description="`abandon:ATTEMPT`, `best:ATTEMPT`, `faster`, `remeasure`, "
                "`close:POINT`, `limit:RELAXATION`, `stricter` or `keep`; `conflicts` lists "
                "what each conflict accepts."
            ),
        ],
        reason: Reason,
        idempotency_key: Key = None,
    ) -> Result:
        """Resolve a protocol conflict that merged branches left, with a recorded event."""
        argv = options(conflict=conflict, resolution=resolution, reason=reason)
        return self._run(idempotency_key, ["resolve"], [op], argv)
