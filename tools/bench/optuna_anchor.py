"""The Optuna anchor: the same campaign as an Optuna journal (JournalStorage, JournalFileBackend).

Each attempt of the ledger becomes one trial with the same parameters (the config's keys; list
and object values as categorical JSON strings) and the same value (the attempt's median time in
µs); failed and abandoned attempts become FAIL trials. Needs the optional extra `bench`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import optuna
from optuna.distributions import CategoricalDistribution, IntDistribution
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend
from optuna.trial import TrialState, create_trial

from ledger.domain.replay import replay
from ledger.log import codec
from ledger.log.store import FileStore

STUDY = "bench"
# The integer parameters of the bench campaigns and their ranges (tools/bench/campaign.py).
_INT_RANGES = {
    "stitch_function_max_num": (1, 4096),
    "mg_copy_cycles": (64, 16384),
    "l0c_reuse_depth": (1, 64),
}


def version() -> str:
    """The installed Optuna version."""
    return str(optuna.__version__)


def _trials(ledger: Path) -> list[Any]:
    state = replay(FileStore(ledger).read().events)
    attempts = sorted(state.attempts.values(), key=lambda a: a.seq)
    choices: dict[str, set[str]] = {}
    for attempt in attempts:
        for key, value in attempt.config.items():
            if key not in _INT_RANGES:
                choices.setdefault(key, set()).add(codec.canonical_json(value))
    distributions: dict[str, Any] = {key: IntDistribution(*_INT_RANGES[key]) for key in _INT_RANGES}
    distributions.update(
        {key: CategoricalDistribution(sorted(values)) for key, values in choices.items()}
    )
    trials = []
    for attempt in attempts:
        if attempt.status == "pending":
            continue
        params = {
            key: value if key in _INT_RANGES else codec.canonical_json(value)
            for key, value in attempt.config.items()
        }
        used = {key: distributions[key] for key in params}
        ok = attempt.measurement is not None and attempt.failure is None
        trials.append(
            create_trial(
                params=params,
                distributions=used,
                value=attempt.measurement.median_us if ok and attempt.measurement else None,
                state=TrialState.COMPLETE if ok else TrialState.FAIL,
            )
        )
    return trials


def journal_for(ledger: Path, cache: Path) -> tuple[Path, int]:
    """The Optuna journal equivalent to `ledger` (built once, cached beside the ledger)."""
    journal = ledger.parent.parent.parent / f"optuna-{optuna.__version__}.journal"
    count = journal.with_suffix(".count")
    if journal.exists() and count.exists():
        return journal, int(count.read_text())
    partial = journal.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    storage = JournalStorage(JournalFileBackend(str(partial)))
    study = optuna.create_study(study_name=STUDY, storage=storage, direction="minimize")
    trials = _trials(ledger)
    study.add_trials(trials)
    partial.replace(journal)
    count.write_text(str(len(trials)))
    return journal, len(trials)


def load_trials(journal: Path) -> list[Any]:
    """What an Optuna user does to see a study: open the storage, load it, read its trials."""
    storage = JournalStorage(JournalFileBackend(str(journal)))
    study = optuna.load_study(study_name=STUDY, storage=storage)
    return list(study.trials)


def best_trial_argv(journal: Path) -> list[str]:
    """A new python process that loads the study and prints its best trial."""
    code = (
        "import optuna\n"
        "from optuna.storages import JournalStorage\n"
        "from optuna.storages.journal import JournalFileBackend\n"
        "optuna.logging.set_verbosity(optuna.logging.WARNING)\n"
        f"storage = JournalStorage(JournalFileBackend({json.dumps(str(journal))}))\n"
        f"study = optuna.load_study(study_name={STUDY!r}, storage=storage)\n"
        "print(study.best_trial.number, study.best_trial.value)\n"
    )
    return [sys.executable, "-c", code]


optuna.logging.set_verbosity(optuna.logging.WARNING)
