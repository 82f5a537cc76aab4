"""What every task shares: :class:`Task`, its key, and the checks made before work starts."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from kgbias_core.embeddings.config import TrainConfig
from kgbias_core.embeddings.store import (
    StoredModel,
    is_model_dir,
    model_sizes,
    model_version,
    read_config,
)
from kgbias_core.errors import (
    LAB_K_TOO_LARGE,
    LAB_NO_KS,
    NOTHING_SAVED,
    MeasureError,
)
from kgbias_core.jobs import Progress

T = TypeVar("T")



@dataclass(frozen=True)
class Task(Generic[T]):
    """A long piece of work, ready to run or to submit to a JobRegistry."""

    key: str  # names the work (kind, models with their versions, parameters): equal keys = one job
    run: Callable[[Progress], T]  # does the work, reporting through the Progress it is given
    kept: str = NOTHING_SAVED  # what stays when the work is cancelled or fails, said after its error


def _key(task: str, *model_dirs: Path | str, **params: Any) -> str:
    """The key of ``task`` over ``model_dirs`` (each at its current version) with ``params``."""
    models = [f"{Path(d)}@{_version(d)}" for d in model_dirs]
    return json.dumps({"task": task, "models": models, "params": params}, sort_keys=True, default=str)


def _version(model_dir: Path | str) -> int | None:
    try:
        return model_version(model_dir)
    except OSError:
        return None  # no model there: running the task says so, in the store's words


def slug(text: str) -> str:
    """Lower-case letters, digits and dashes only (for model directory names)."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def _check_ks(ks: Sequence[int], *, model: StoredModel) -> None:
    if not ks:
        raise MeasureError(LAB_NO_KS)
    n_triples = model.triples.shape[0]
    if max(ks) > n_triples:
        raise MeasureError(LAB_K_TOO_LARGE.format(k=max(ks), n=n_triples, model=model.name))



def _retrain_sizes(model_dir: Path | str, config: dict) -> dict:
    """What a retrain of the model at ``model_dir`` costs, from its ``config`` (config.json) and vocabularies alone
    (the keyword arguments both estimates of :mod:`kgbias_core.embeddings.training_cost` take). An imported model
    (0 epochs) retrains with the default epochs."""
    n_entities, n_relations = model_sizes(model_dir)
    return {"n_triples": int(config.get("n_train") or 0), "n_entities": n_entities, "n_relations": n_relations,
            "dim": int(config.get("dim") or TrainConfig.dim),
            "batch_size": int(config.get("batch_size") or TrainConfig.batch_size),
            "epochs": int(config.get("epochs") or TrainConfig.epochs),
            "negatives": int(config.get("negatives_per_triple") or 1),
            "distance": str(config.get("distance") or "squared_l2")}


def check_retrains(model_dir: Path | str, *, what: str, retrains: int) -> None:
    """Refuse ``retrains`` full retrains of the model at ``model_dir`` that would not finish in reasonable
    time here (:func:`~kgbias_core.embeddings.training_cost.check_retrain_fits`), from its config.json alone:
    before the model is loaded or anything else is done."""
    from kgbias_core.embeddings.training_cost import check_retrain_fits

    if not is_model_dir(model_dir):
        return  # load_model, next, names what is missing
    config = read_config(model_dir)
    check_retrain_fits(what=what, retrains=retrains, optimizer=str(config.get("optimizer") or TrainConfig.optimizer),
                       **_retrain_sizes(model_dir, config))


# --- estimates (shown before work is started) ------------------------------------------------------
#: Follow-up work estimated at most this long (seconds) starts unasked, as background work; longer work
#: is offered with its estimate (issue 25: no default background job longer than a few minutes of CPU).
AUTO_BACKGROUND_SECONDS = 180.0


def model_retrain_seconds(model_dir: Path | str, *, retrains: float = 1) -> float | None:
    """Estimated seconds of ``retrains`` retrains of the model at ``model_dir``, from its config.json alone
    (:func:`~kgbias_core.embeddings.training_cost.estimated_seconds`); None without a model there."""
    from kgbias_core.embeddings.training_cost import estimated_seconds

    if not is_model_dir(model_dir):
        return None
    return estimated_seconds(retrains=retrains, **_retrain_sizes(model_dir, read_config(model_dir)))
