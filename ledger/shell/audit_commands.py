"""How audit re-decides a recorded batch (ledger/shell/audit.py): the command that produced it,
rebuilt from the recorded data of its first event, by the payload class of that event."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ledger.log.record import converter
from ledger.schema import events as ev
from ledger.schema.events import Binding, Device, Origin, OutputCheck
from stages import commands as cmd

T = TypeVar("T")


def _outputs(data: dict[str, Any]) -> tuple[OutputCheck, ...]:
    return tuple(converter().structure(o, OutputCheck) for o in data["outputs"])


def _recorded_origin(d: dict[str, Any]) -> Origin:
    return converter().structure(d["origin"], Origin)


def _optional(kind: type[T], data: Any) -> T | None:
    return None if data is None else converter().structure(data, kind)


def _started(d: dict[str, Any]) -> cmd.Command:
    if d["kind"] == "candidate":
        return cmd.ProposeCandidate(
            config=d["config"], prior=d["prior"], override=d["retry_override"]
        )
    if d["kind"] == "mutation":
        return cmd.TryMutation(param=d["param"], value=d["value"], override=d["retry_override"])
    return cmd.TryAlgorithm(
        description=d["description"], impl_digest=d["impl_digest"], override=d["retry_override"]
    )


def _target(d: dict[str, Any]) -> cmd.Command:
    return cmd.SetTarget(
        baseline_us=d["baseline_us"],
        shape=d["shape"],
        target_us=d["target_us"],
        target_source=d["target_source"],
        source_ref=d["source_ref"],
        config=d["config"],
        origin=_recorded_origin(d),
        metric=d["metric"],
        cube_m=d["cube_m"],
        baseline_samples_us=tuple(d["baseline_samples_us"]),
        util_pct=d["util_pct"],
        bubble_pct=d["bubble_pct"],
        device=_optional(Device, d["device"]),
        target_origin=_optional(Origin, d.get("target_origin")),
        target_samples_us=tuple(d.get("target_samples_us", ())),
    )


def _measured(d: dict[str, Any]) -> cmd.Command:
    return cmd.Verify(
        attempt=d["attempt"],
        outputs=_outputs(d),
        layout_exit=d["layout_exit"],
        times_us=tuple(d["times_us"]),
        origin=_recorded_origin(d),
        util_pct=d["util_pct"],
        bubble_pct=d["bubble_pct"],
        metrics=d["metrics"],
        binding=_optional(Binding, d.get("binding")),
        accuracy_origin=_optional(Origin, d.get("accuracy_origin")),
        device=_optional(Device, d["device"]),
    )


CommandOf = Callable[[dict[str, Any]], cmd.Command]


def _remeasured_alone(_d: dict[str, Any]) -> cmd.Command:
    raise ValueError("a best.remeasured is written after its attempt.measured, in one batch")


def _verdict_alone(_d: dict[str, Any]) -> cmd.Command:
    raise ValueError("an attempt.verdict is written after its attempt.measured, in one batch")


# How audit re-decides a batch, by the payload class of its first event: the command that
# produced it, or None for the batches no command of stages/ produces (written by the store,
# or a resolution: stages/resolve.py). Keyed by class, so a type name cannot be mistyped;
# tests/test_registries.py checks it names every payload of the schema exactly once.
AUDIT_ENTRIES: tuple[tuple[type[ev.Payload], CommandOf | None], ...] = (
    (ev.OpInitialized, lambda d: cmd.Init(op=d["op"])),
    (
        ev.CompareEvidence,
        lambda d: cmd.RecordCompare(
            outputs=_outputs(d),
            impl_path=d["impl_path"],
            impl_digest=d["impl_digest"],
            origin=_recorded_origin(d),
        ),
    ),
    (
        ev.LayoutEvidence,
        lambda d: cmd.RecordLayout(
            exit_code=d["exit_code"],
            impl_path=d["impl_path"],
            impl_digest=d["impl_digest"],
            origin=_recorded_origin(d),
        ),
    ),
    (ev.ActivationPassed, lambda d: cmd.Activate(impl_digest=d["impl_digest"])),
    (ev.ActivationFailed, lambda d: cmd.Activate(impl_digest=d["impl_digest"])),
    (ev.SkillLoaded, lambda d: cmd.LoadSkill(name=d["name"])),
    (ev.SkillUnloaded, lambda d: cmd.UnloadSkill(name=d["name"])),
    (ev.TargetSheetWritten, _target),
    (
        ev.LimitRelaxed,
        lambda d: cmd.Relax(
            what=d["what"],
            limit=d["limit"],
            basis=d["basis"],
            record_premise="supersedes" in d,
            evidence=tuple(d["evidence"]),
            person=d["person"],
            # Before issue 27 a relaxation named neither evidence nor a person.
            legacy=not d["evidence"] and d["person"] is None,
        ),
    ),
    (ev.StageEntered, lambda d: cmd.EnterStage(stage=d["stage"])),
    (
        ev.StageExited,
        lambda d: cmd.ExitStage(
            stage=d["stage"],
            reason=d["reason"],
            by_user=d["condition"] == "user",
            hand_back=d["condition"] == "hand-back",
        ),
    ),
    (ev.PointOpened, lambda d: cmd.OpenPoint(name=d["name"], knobs=tuple(d.get("knobs", ())))),
    (
        ev.PointClosed,
        lambda d: cmd.ClosePoint(
            name=d["name"], reason=d["reason"], not_applicable=d["outcome"] == "not-applicable"
        ),
    ),
    (ev.AttemptStarted, _started),
    (ev.AttemptMeasured, _measured),
    (ev.VerdictReached, _verdict_alone),
    (ev.BestRemeasured, _remeasured_alone),
    (
        ev.AttemptFailed,
        lambda d: cmd.Fail(
            attempt=d["attempt"],
            category=d["category"],
            detail=d["detail"],
            origin=_optional(Origin, d["origin"]),
        ),
    ),
    (ev.AttemptAbandoned, lambda d: cmd.Abandon(attempt=d["attempt"], reason=d["reason"])),
    (ev.CampaignStopped, lambda d: cmd.Stop(reason=d["detail"])),
    (ev.ReportGenerated, lambda d: cmd.RecordReport(path=d["path"], digest=d["digest"])),
    (
        ev.PolicySet,
        lambda d: cmd.SetPolicy(
            key=d["key"],
            value=d["value"],
            reason=d["reason"],
            person=d["person"],
            # Before issue 27 no policy.set named a person (and between issue 29 and its merge
            # only a loosened budget did): decided by the rules of its time.
            legacy=d["person"] is None,
        ),
    ),
    (ev.NoteAdded, lambda d: cmd.AddNote(text=d["text"])),
    (ev.LedgerRepaired, None),
    (ev.ConflictResolved, None),
    (
        ev.ManifestRecorded,
        lambda d: cmd.RecordManifest(
            digest=d["digest"],
            source=d["source"],
            declared=d["declared"],
            measured_only=d.get("measured_only", False),
        ),
    ),
    (ev.NewlineRestored, None),
    # A person's confirmation after the shell found a rollback, not a step of the protocol.
    (ev.RollbackAccepted, None),
    (ev.CampaignHandedBack, lambda d: cmd.HandBack(summary=d["summary"])),
    (
        ev.CampaignResumed,
        lambda d: cmd.ResumeCampaign(
            reason=d["reason"], person=d["person"], legacy=d["person"] is None
        ),
    ),
)

COMMAND_OF: dict[str, CommandOf] = {
    payload.TYPE: command_of for payload, command_of in AUDIT_ENTRIES if command_of is not None
}
NOT_DECIDED = frozenset(payload.TYPE for payload, command_of in AUDIT_ENTRIES if not command_of)
