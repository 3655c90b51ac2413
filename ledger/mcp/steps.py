"""One tool per protocol step (DESIGN §3): each runs the CLI command of the same name with
`--json` and returns its JSON object; a refusal is a tool error carrying the CLI's error
object (rule, error, blocking, next, allowed, code)."""

from __future__ import annotations

from typing import Any

from ledger.mcp.attempt_steps import AttemptSteps
from ledger.mcp.campaign_steps import CampaignSteps
from ledger.mcp.setup_steps import SetupSteps


class StepTools(SetupSteps, CampaignSteps, AttemptSteps):
    """The state-changing steps, as tools over one Invoker."""

    def tools(self) -> dict[str, Any]:
        """Each tool's name and function, in protocol order."""
        return {
            "init": self.init,
            "evidence_compare": self.evidence_compare,
            "evidence_layout": self.evidence_layout,
            "activate": self.activate,
            "target": self.target,
            "relax": self.relax,
            "skill_load": self.skill_load,
            "skill_unload": self.skill_unload,
            "stage_enter": self.stage_enter,
            "stage_exit": self.stage_exit,
            "point_open": self.point_open,
            "point_close": self.point_close,
            "candidate": self.candidate,
            "try": self.try_,
            "measure": self.measure,
            "verify": self.verify,
            "fail": self.fail,
            "abandon": self.abandon,
            "stop": self.stop,
            "resume_campaign": self.resume_campaign,
            "handback": self.handback,
            "note": self.note,
            "policy": self.policy,
            "manifest": self.manifest,
            "new_op": self.new_op,
            "resolve": self.resolve,
            "kernel_restore": self.kernel_restore,
        }
