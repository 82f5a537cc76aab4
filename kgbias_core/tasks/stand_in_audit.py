"""The audit an imported model can have (issue 25): one retrain of a stand-in trained here on its graph.

An import cannot be retrained (its engine and negatives are elsewhere), so its step has no audit of its own, and on
squared L2 no prior travels: graphs predicted as imports put the level of retrained / step at 0.42-1.74 when their
sets were chosen by the models' own closed forms (docs/results/whatif.md). What the graph sets, a model trained here
on the same graph measures: the *stand-in* (:func:`~kgbias_core.whatif.step_ratio.stand_in_config`: the data set's
default training with the import's distance and seed :data:`~kgbias_core.whatif.step_ratio.STAND_IN_SEED`), predicted
as the lab predicts the import (its frozen negatives dropped, the import's count re-drawn from the lab's seed), its
audit set (:func:`~kgbias_core.tasks.prediction_audit.audit_set` of that prediction's closed form, as a person using
the import would choose it) retrained masked with its own negatives. The ratio retrained / step is stored with the
import (:data:`~kgbias_core.whatif.step_ratio.STAND_IN_AUDIT`) and scales its removals, with the band of
:data:`~kgbias_core.influence.prediction.STAND_IN_BANDS`.

Cost: two trainings of the data set's default (the stand-in and its one masked retrain), offered with that estimate,
never started unasked. The stand-in is not stored: only its audit row.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pandas as pd
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.device import resolve_device
from kgbias_core.embeddings.results import save_result
from kgbias_core.embeddings.store import StoredModel, is_model_dir, load_model, model_sizes, read_config
from kgbias_core.embeddings.training import train_transe
from kgbias_core.errors import STAND_IN_AUDIT_KEPT, STAND_IN_NO_BAND, STAND_IN_NOT_IMPORT, MeasureError
from kgbias_core.influence.negatives import DEFAULT_NEGATIVE_SEED, redrawn_negatives
from kgbias_core.influence.prediction import STAND_IN_BANDS, removal_step_change
from kgbias_core.influence.retraining_check import masked_retrain_bias
from kgbias_core.jobs import Progress
from kgbias_core.tasks.base import Task, _key
from kgbias_core.tasks.prediction_audit import audit_occupation, audit_set
from kgbias_core.whatif.step_ratio import STAND_IN_AUDIT, stand_in_config, stand_in_params

#: The columns of the stored stand-in audit: the set (on the stand-in), its step as an import, the retrained change,
#: their ratio, the stand-in's seed and the seconds of its training and of the retrain.
STAND_IN_COLUMNS = ("occupation", "name", "k", "moving", "predicted", "retrained", "ratio", "seed", "train_seconds",
                    "retrain_seconds")


def train_stand_in(model: StoredModel, *, should_stop=None) -> StoredModel:
    """The stand-in of the imported ``model`` (module docstring), trained on its triples on the device kind of a
    kgbias retrain here (CPU unless a GPU was chosen and is present): a kgbias model with frozen negatives, the
    import's graph, vocabularies and splits. Shapes as ``model``'s."""
    config = stand_in_config({"dataset": model.dataset, "distance": model.config.distance})
    base = replace(model, config=config, negatives=None, info={})
    negatives = redrawn_negatives(base, seed=config.seed)  # the draw a kgbias training of config makes
    device = model.triples.device
    result = train_transe(triples=model.triples.cpu(), negatives=negatives.cpu(), n_entities=model.n_entities,
                          n_relations=model.n_relations, config=config, device=device, should_stop=should_stop)
    weights = {"entity_embeddings": result.entity_embeddings.to(device),
               "relation_embeddings": result.relation_embeddings.to(device)}
    return replace(base, name=f"{model.name}--stand-in", negatives=negatives, weights=weights,
                   info={"device": str(device.type), "stand_in_of": model.name})


def stand_in_audit(model: StoredModel, *, should_stop=None, progress: Progress | None = None) -> pd.DataFrame:
    """One row (:data:`STAND_IN_COLUMNS`) for the imported ``model``: its stand-in trained (:func:`train_stand_in`)
    and audited as ``model`` is predicted (:func:`audit_stand_in`)."""
    _check_import(model.name, model.info, model.config.model)
    t = time.perf_counter()
    stand_in = train_stand_in(model, should_stop=should_stop)
    train_seconds = time.perf_counter() - t
    if progress is not None:
        progress.update(stage="retraining", message="one masked retrain of the stand-in")
    return audit_stand_in(stand_in, imported_negatives=model.config.negatives_per_triple,
                          should_stop=should_stop).assign(train_seconds=train_seconds)[list(STAND_IN_COLUMNS)]


def audit_stand_in(stand_in: StoredModel, *, imported_negatives: int, redraw_seed: int = DEFAULT_NEGATIVE_SEED,
                   should_stop=None) -> pd.DataFrame:
    """The audit of a trained ``stand_in`` (a kgbias model with frozen negatives) predicted as an import that
    re-draws ``imported_negatives`` a triple from ``redraw_seed`` (the lab's seed by default): the audit rule's set
    on that prediction's closed form, its step (unscaled, no prior), and the change one masked retrain with the
    stand-in's own negatives gives. One row of :data:`STAND_IN_COLUMNS` but ``train_seconds`` (NaN)."""
    as_import = ModelAnalysis(replace(stand_in, negatives=None, config=replace(
        stand_in.config, negatives_per_triple=imported_negatives)), negative_seed=redraw_seed)
    occupation = audit_occupation(as_import)
    index = as_import.groups.index(occupation)
    moving, k, removed = audit_set(as_import, occupation)
    predicted = removal_step_change(as_import, occupation, removed)  # the import's step: no prior, no scale
    t = time.perf_counter()
    after = masked_retrain_bias(stand_in, removed=removed, groups=as_import.groups, should_stop=should_stop)
    retrained = float(after[index]) - float(as_import.group_bias(occupation))
    return pd.DataFrame([{
        "occupation": occupation, "name": as_import.groups.names[index], "k": k, "moving": moving,
        "predicted": predicted, "retrained": retrained,
        "ratio": retrained / predicted if predicted != 0 else float("nan"), "seed": stand_in.config.seed,
        "train_seconds": float("nan"), "retrain_seconds": time.perf_counter() - t,
    }], columns=list(STAND_IN_COLUMNS))


def _check_import(name: str, info: dict, kind: str) -> None:
    if not info.get("imported_from") or info.get("untrained") or kind != "transe":
        raise MeasureError(STAND_IN_NOT_IMPORT.format(model=name))


def check_stand_in(model_dir: Path | str) -> None:
    """Refuse, with the named error, a stand-in audit of the model at ``model_dir`` that is no imported TransE, of a
    distance with no stand-in band (:data:`~kgbias_core.influence.prediction.STAND_IN_BANDS`), or whose two
    trainings would not finish in reasonable time here (:func:`~kgbias_core.embeddings.training_cost.
    check_retrain_fits`): from its config.json alone, before anything is trained."""
    from kgbias_core.embeddings.training_cost import check_retrain_fits

    config = read_config(model_dir)
    _check_import(Path(model_dir).name, config, str(config.get("model") or "transe"))
    distance = str(config.get("distance") or "squared_l2")
    if distance not in STAND_IN_BANDS:
        raise MeasureError(STAND_IN_NO_BAND.format(model=Path(model_dir).name, distance=distance,
                                                   fitted=", ".join(sorted(STAND_IN_BANDS))))
    stand_in = stand_in_config(config)
    check_retrain_fits(what="the stand-in audit", retrains=2, optimizer=stand_in.optimizer,
                       **_stand_in_sizes(model_dir, config))


def _stand_in_sizes(model_dir: Path | str, config: dict) -> dict:
    """What a training of the stand-in of the model at ``model_dir`` costs (the keyword arguments both estimates of
    :mod:`kgbias_core.embeddings.training_cost` take): the import's graph, the stand-in's settings."""
    stand_in = stand_in_config(config)
    n_entities, n_relations = model_sizes(model_dir)
    return {"n_triples": int(config.get("n_train") or 0), "n_entities": n_entities, "n_relations": n_relations,
            "dim": stand_in.dim, "batch_size": stand_in.batch_size, "epochs": stand_in.epochs,
            "negatives": stand_in.negatives_per_triple, "distance": stand_in.distance}


def stand_in_audit_seconds(model_dir: Path | str) -> float | None:
    """Estimated seconds of the stand-in audit of the model at ``model_dir`` (two trainings of its stand-in's config,
    :func:`~kgbias_core.embeddings.training_cost.estimated_seconds`); None without a model there."""
    from kgbias_core.embeddings.training_cost import estimated_seconds

    if not is_model_dir(model_dir):
        return None
    return estimated_seconds(retrains=2, **_stand_in_sizes(model_dir, read_config(model_dir)))


def stand_in_audit_task(model_dir: Path | str, *, device: torch.device | str | None = None) -> Task[pd.DataFrame]:
    """Audit the imported model at ``model_dir`` through its stand-in (:func:`stand_in_audit`) and store the row
    beside it (:data:`~kgbias_core.whatif.step_ratio.STAND_IN_AUDIT`, with the stand-in's config)."""
    device = resolve_device(device)

    def run(progress: Progress) -> pd.DataFrame:
        check_stand_in(model_dir)
        model = load_model(model_dir, device=device)
        progress.update(stage="training", message=f"training a stand-in of {model.name} here on its graph "
                                                  f"(seed {stand_in_config(read_config(model_dir)).seed})")
        frame = stand_in_audit(model, should_stop=progress.should_stop, progress=progress)
        save_result(model_dir, STAND_IN_AUDIT, frame, params=stand_in_params(read_config(model_dir)))
        return frame

    return Task(key=_key(STAND_IN_AUDIT, model_dir), run=run,
                kept=STAND_IN_AUDIT_KEPT.format(name=Path(model_dir).name))
