"""The protocol's vocabularies: stages, skills (with R2's budget), verdicts, failures, attempt
kinds, stop reasons, exit conditions, target sources and origin levels.

Apart from the payload value classes (ledger/schema/values.py): a module that needs only the
words, such as `log`'s `--stage` choices, need not define attrs classes to get them.
"""

from __future__ import annotations

from typing import Literal

Stage = Literal["frontend", "swimlane", "incore", "algorithm"]
STAGES: tuple[Stage, ...] = ("frontend", "swimlane", "incore", "algorithm")
CONFIG_STAGES: tuple[Stage, ...] = ("frontend", "swimlane", "incore")

BASE_SKILLS = ("pypto-op-perf-tune", "perf-analyzer")
TUNE_SKILLS = {"tune-frontend": "frontend", "tune-swimlane": "swimlane", "tune-incore": "incore"}
SKILLS = BASE_SKILLS + tuple(TUNE_SKILLS)
# R2's budget: how many of each may be loaded at once. Its home is here, beside the names,
# because two places enforce it: the decider refuses a load past it (stages/skills.py) and the
# fold records a merge of two branches that together exceed it (ledger/domain/fold_gates.py).
MAX_BASE_SKILLS = 2
MAX_TUNE_SKILLS = 1

Verdict = Literal["rollback", "no-gain", "adopt", "target-reached"]
VERDICTS: tuple[Verdict, ...] = ("rollback", "no-gain", "adopt", "target-reached")
ADOPTED: tuple[Verdict, ...] = ("adopt", "target-reached")  # the verdicts that make a new best
Failure = Literal["accuracy", "layout", "timeout", "oom", "compile", "runtime"]
FAILURES: tuple[Failure, ...] = ("accuracy", "layout", "timeout", "oom", "compile", "runtime")
AttemptKind = Literal["candidate", "mutation", "algorithm"]
StopReason = Literal["target-reached", "utilization", "user", "budget"]
ExitCondition = Literal[
    "target-met", "points-closed", "utilization", "user", "ideas-exhausted", "hand-back"
]
TargetSource = Literal["spec", "upstream", "torch-eager"]
# How a measurement reached the ledger (R11), strongest first: the ledger ran the op's declared
# verifier or layout check (SPEC.md's manifest) and the result is bound to what it ran
# ("measured"); it ran the declared verifier but the result names neither the config nor the
# kernel ("unbound"); it ran an ad-hoc command nobody declared (`--run CMD`: "ran"); parsed
# from an artefact whose digest is recorded; or only reported by the caller.
OriginLevel = Literal["measured", "unbound", "ran", "artefact", "reported"]
ORIGIN_LEVELS: tuple[OriginLevel, ...] = ("measured", "unbound", "ran", "artefact", "reported")
