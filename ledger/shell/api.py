"""The Python API: run a command against an op's ledger with the protocol's rules and errors.

This is the shell around the pure core: read the log, replay, decide, append atomically with
optimistic concurrency, re-render MEMORY.md. The CLI is a thin layer over it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
from attrs import frozen

from ledger.domain.hints import Step
from ledger.domain.replay import evolve, replay
from ledger.domain.state import State
from ledger.domain.units import check_op_name
from ledger.errors import BadInput, Conflict, LedgerError
from ledger.log.file_store import FileStore
from ledger.log.files import LEDGER_NAME, ledger_path
from ledger.log.memory_store import MemoryStore
from ledger.log.position import Position
from ledger.log.record import Draft, Event
from ledger.log.store_interface import AppendResult, Store
from ledger.shell import portable, rollback

# MEMORY.md's rendering is imported where a command writes it: a read (`priors`, `log`,
# `status`) needs none of it.
if TYPE_CHECKING:
    from typing import Unpack

    from ledger.schema.events import Payload
    from ledger.shell.workflows import EvidenceKind, Running
    from stages.outcome import Decision
    from stages.refusal import Refusal

# Appends retried after another writer got in first; more means a livelock, which is a bug.
_MAX_CONFLICT_RETRIES = 20


@frozen
class StepResult:
    """What a command did: the events it appended (or found, for a retried key) and warnings."""

    events: tuple[Event, ...]
    warnings: tuple[str, ...]
    # The ledger's state after the command: the OpLedger's own accumulator, which its next
    # command folds into (ledger/domain/state.py); replay the log for a state that must stay.
    state: State
    replayed: bool = False  # True when an idempotency key returned an earlier result


@frozen
class Loaded:
    """The state replayed from an op's verified log, and where that log ends (its head, size
    and any torn tail; the events themselves are not kept: `store.read()` has them)."""

    position: Position
    state: State


class OpLedger:
    """One op's ledger under a root folder that holds `custom/`, kept in `store` (by default
    the file `custom/OP/events.jsonl`; any Store, e.g. a MemoryStore in tests)."""

    def __init__(self, root: Path | str, op: str, store: Store | None = None) -> None:
        self.root = Path(root)
        self.op = check_op_name(op)
        self.dir = self.root / "custom" / self.op
        # Where the ledger file is (or would be): named in messages even for a store in memory.
        self.path = ledger_path(self.root, self.op)
        self.store: Store = FileStore(self.path, self.root) if store is None else store
        # The state replayed from the store and the position it was read at: this OpLedger owns
        # that accumulator and folds its own commands into it (see `execute`).
        self._loaded: Loaded | None = None
        self.memory_path = self.dir / "MEMORY.md"
        self.report_path = self.dir / f"{self.op}_tuning_report.md"

    def exists(self) -> bool:
        """True when the op has a ledger: its file exists (or, in memory, holds an event)."""
        if isinstance(self.store, MemoryStore):
            return bool(self.store.raw)
        return self.path.exists()

    @property
    def file_store(self) -> FileStore:
        """The store as a file, for git's checks that read and rewrite the file itself."""
        if not isinstance(self.store, FileStore):
            raise BadInput(
                f"op {self.op!r}: this check needs the ledger file, not a store in memory"
            )
        return self.store

    def require(self) -> None:
        """Raise BadInput when the op has no ledger yet."""
        if not self.exists():
            raise BadInput(
                f"unknown op {self.op!r}: {self.path} does not exist",
                hint=f"run {Step('init', self.op)} first (or check --root)",
            )

    def load(self) -> Loaded:
        """Read and verify the log, and replay it event by event as it is verified.

        While nothing has written to the ledger since, a later call returns the same Loaded
        (checked as an append checks its position): one CLI command looks up a retried key, resolves
        an attempt id and then decides, and each used to replay the whole ledger. `execute`
        folds its new events into that state and keeps it with the position after its append.
        When another writer appended since, only its bytes are verified and folded (a server
        keeps its OpLedgers between calls); a rewritten or damaged ledger is read again whole."""
        self.require()
        kept = self._loaded
        if kept is not None:
            if self.store.unchanged_since(kept.position):
                return kept
            position = self.store.stream_after(kept.position, functools.partial(evolve, kept.state))
            if position is not None:
                self._loaded = Loaded(position=position, state=kept.state)
                return self._loaded
            # The kept state may hold part of what could not be resumed: it is dropped.
            self._loaded = None
        state = State()
        position = self.store.stream(functools.partial(evolve, state))
        self._loaded = Loaded(position=position, state=state)
        return self._loaded

    def earlier(self, key: str, request: str) -> StepResult | None:
        """The original result of a command retried with idempotency key `key`, or None.

        Raises BadInput when the key was used for a different request, and the recorded
        hand-back again when the original command was a failed activation (DESIGN §5).
        """
        if not self.exists():
            return None
        loaded = self.load()
        return _replayed(loaded, key, request)

    def execute(
        self,
        command: Any,
        *,
        key: str | None = None,
        command_line: str | None = None,
        request: str | None = None,
        decider: Callable[[State, Any], Decision | Refusal] | None = None,
    ) -> StepResult:
        """Decide `command` on the current state and append its events (or raise its refusal).

        `request` identifies the command for `key` (default: a digest of the command); the CLI
        passes a digest of its arguments, so a retried `verify --run` is matched before the
        verifier runs again. `decider` replaces `stages.decide` for commands outside the
        protocol's steps (merge-conflict resolutions), which append the same way.
        """
        from stages import commands as cmd
        from stages.decide import decide

        decide_step = decider or decide
        if getattr(command, "legacy", False):
            # Only audit re-decides an event recorded before issue 27 by the rules of its time;
            # a step appended now follows today's (a person's decision needs a person).
            raise BadInput(
                "legacy=True re-decides an old event in audit; it cannot be appended",
                hint="drop legacy; a person's decision names the person (person=NAME)",
            )
        if request is None:
            # Idempotency (ledger/shell/idempotency.py) is imported when a key or request needs it.
            from ledger.shell.idempotency import request_digest

            request = request_digest(command)
        # Recorded as template plus values: no path of this machine (issue 27.7).
        command = portable.command(command, self.root)
        # The manifest is in force by its presence (issue 27): SPEC.md's, when it is not the
        # one recorded, is recorded before the command (after it, for `init`), provided the
        # command stands under it: a command it refuses writes nothing.
        in_force = decider is None and not isinstance(command, cmd.RecordManifest)
        if in_force and not isinstance(command, cmd.Init):
            self._record_spec_manifest_for(command, key, request, decide_step)
        result = self._decide_and_append(command, key, command_line, request, decide_step)
        if in_force and isinstance(command, cmd.Init):
            from ledger.shell import manifest_file

            recorded = manifest_file.spec_manifest_command(self)
            if recorded is not None:
                return attrs.evolve(result, state=self.execute(recorded).state)
        return result

    def _record_spec_manifest_for(
        self,
        command: Any,
        key: str | None,
        request: str,
        decide_step: Callable[[State, Any], Decision | Refusal],
    ) -> None:
        """Record SPEC.md's changed manifest when `command` stands under it: decided first on
        a trial state with the manifest folded in (dropped after), so a refusal or bad input
        it brings writes nothing."""
        from ledger.shell import manifest_file
        from stages.decide import decide

        recording = manifest_file.spec_manifest_command(self)
        if recording is None:
            return
        loaded = self.load()
        if key is not None and _replayed(loaded, key, request) is not None:
            return
        # The trial folds into the kept state: drop it, so the next load reads the ledger.
        self._loaded = None
        manifest_file.refuse_under(loaded.state, recording, command, decide_step)
        from ledger.shell.idempotency import request_digest

        self._decide_and_append(recording, None, None, request_digest(recording), decide)

    def _decide_and_append(
        self,
        command: Any,
        key: str | None,
        command_line: str | None,
        request: str,
        decide_step: Callable[[State, Any], Decision | Refusal],
    ) -> StepResult:
        from stages.refusal import Refusal

        for _ in range(_MAX_CONFLICT_RETRIES):
            loaded = self.load() if self.exists() else None
            if key is not None and loaded is not None:
                original = _replayed(loaded, key, request)
                if original is not None:
                    return original
            state = loaded.state if loaded else State()
            if loaded is not None:  # a ledger that lost MEMORY.md's last event is not written
                rollback.refuse_unaccepted(self.store, self.memory_path, state, self.op, command)
            decision = decide_step(state, command)
            if isinstance(decision, Refusal):
                if decision.events:  # a hand-back records the failed check (R1, exit 5)
                    written = self._append(decision.events, loaded, key, request, command_line)
                    self._after_append(written, state)
                raise decision.to_error()
            try:
                written = self._append(decision.events, loaded, key, request, command_line)
            except Conflict:
                continue
            new_state, rendering = self._after_append(written, state)
            warnings = tuple(decision.warnings) + rendering + self._keep_kernels(written, state)
            return StepResult(events=tuple(written.events), warnings=warnings, state=new_state)
        raise LedgerError("gave up after repeated concurrent appends; run the command again")

    def _append(
        self,
        payloads: Sequence[Payload],
        loaded: Loaded | None,
        key: str | None,
        request: str,
        command_line: str | None,
    ) -> AppendResult:
        from ledger.shell import provenance

        written_by = provenance.capture(command_line, self.root)
        if key is not None:
            written_by = attrs.evolve(written_by, key=key, request=request)
        drafts = [Draft(payload=p, provenance=written_by) for p in payloads]
        if loaded is None:
            return self.store.append(drafts, expected_head=())
        return self.store.append(
            drafts, expected_head=loaded.position.head, position=loaded.position
        )

    def _after_append(self, written: AppendResult, state: State) -> tuple[State, tuple[str, ...]]:
        """Fold what was written into the state it was decided on, which is then the ledger's
        state (no second read and replay), render MEMORY.md from it; return it with the
        warnings of rendering."""
        new_state = replay([*written.repairs, *written.events], state)
        # The state moved on with the ledger: keep it with the position after the append, so
        # the next load needs no replay. Without that position (the store re-read the file),
        # the next load replays; the kept one no longer matches the file, so it cannot be stale.
        self._loaded = (
            None if written.position is None else Loaded(position=written.position, state=new_state)
        )
        return new_state, self._render_after_append(new_state)

    def _keep_kernels(self, written: AppendResult, state: State) -> tuple[str, ...]:
        """Keep the kernels the appended events bind in custom/OP/kernels/ (issue 27.6;
        ledger/shell/kernels.py); a ledger in memory keeps none."""
        if not isinstance(self.store, FileStore):
            return ()
        from ledger.shell import kernels

        return kernels.keep(self, written.events, state)

    def _render_after_append(self, state: State) -> tuple[str, ...]:
        # The events are durable by now: any failure to rewrite MEMORY.md (hand-broken markers,
        # a full disk, a file size limit, an immutable file) must not make the command look
        # failed, since exit codes other than 0 say "nothing written" and a retry would append
        # the step twice. It becomes a warning that MEMORY.md is stale and how to re-render.
        rerender = f"then `tune-ledger render {self.op}`"
        try:
            self.render_memory(state)
        except BadInput as e:
            return (f"MEMORY.md not updated, so it is stale: {e.message}; fix it, {rerender}",)
        except OSError as e:
            cause = e.strerror or str(e)
            return (
                f"the events were appended, but MEMORY.md could not be written ({cause}) and "
                f"is stale; free space or fix the file's permissions, {rerender}",
            )
        except Exception as e:  # noqa: BLE001 - a rendering bug must not hide a durable append
            return (
                f"the events were appended, but rendering MEMORY.md failed (a bug: "
                f"{type(e).__name__}: {e}); MEMORY.md is stale: report it, {rerender}",
            )
        return ()

    def render_memory(self, state: State | None = None) -> bool:
        """Re-render MEMORY.md's managed sections from the ledger (or the state replayed from
        all of it); True when bytes changed."""
        from ledger.projections import memory_file, splice
        from stages.policy import effective_policy

        if state is None:
            state = self.load().state
            # Re-rendering MEMORY.md from a rolled-back ledger would erase the only trace.
            rollback.refuse_unaccepted(self.store, self.memory_path, state, self.op)
        existing = splice.read_text(self.memory_path)
        position = state.position
        text = memory_file.render_memory(existing, state, effective_policy(state), position)
        return splice.write_if_changed(self.memory_path, text, root=self.root)

    def rolled_back(self) -> rollback.Rollback | None:
        """The rollback of the ledger behind MEMORY.md's back, if any (reads only warn)."""
        return rollback.find(self.store, self.memory_path, self.load().state)

    # The workflows that run the op's own commands (ledger/shell/workflows.py), imported when
    # called: a command that runs nothing does not load the process runner and its readers.
    # `options`: the verifier's interpreter (`python`), its environment (`env`), and the
    # idempotency key, request and command line (`invocation`).

    def measure(self, attempt: str | None = None, **options: Unpack[Running]) -> StepResult:
        """Run SPEC.md's verifier on an attempt's config (None: the pending one) and record
        the result: a verdict, a failure, or a harness error that writes nothing (R8, R11)."""
        from ledger.shell import workflows

        return workflows.measure(self, attempt, **options)

    def target_from_spec(
        self, *, cube_m: int | None = None, **options: Unpack[Running]
    ) -> StepResult:
        """Write the target sheet from SPEC.md's manifest, its baseline measured by the
        manifest's verifier (R3, R11)."""
        from ledger.shell import workflows

        return workflows.target_from_spec(self, cube_m=cube_m, **options)

    def evidence_from_spec(
        self, kind: EvidenceKind, *, impl: Path | str | None = None, **options: Unpack[Running]
    ) -> StepResult:
        """Record the E2E compare ("compare": one verifier run) or the layout check ("layout")
        of SPEC.md's baseline config as activation evidence, measured by the ledger (R1)."""
        from ledger.shell import workflows

        return workflows.evidence_from_spec(self, kind, impl=impl, **options)


def _replayed(loaded: Loaded, key: str, request: str) -> StepResult | None:
    from ledger.shell.idempotency import earlier_events

    found = earlier_events(loaded.state, key, request)
    if not found:
        return None
    return StepResult(events=found, warnings=(), state=loaded.state, replayed=True)


def list_ops(root: Path | str) -> list[str]:
    """The ops under `root/custom/` that have a ledger, sorted."""
    custom = Path(root) / "custom"
    if not custom.is_dir():
        return []
    return sorted(p.parent.name for p in custom.glob(f"*/{LEDGER_NAME}"))
