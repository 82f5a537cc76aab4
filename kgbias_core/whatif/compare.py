"""One table comparing debiasing methods, data edits and embedding-level methods alike (issue 29 part 3).

One row per model (the original, Du's IF-REMOVE / Random-REMOVE / Add what-ifs, the projection and
the fairness-regularised models, later a plan), one column per measure, each the very function the
rest of kgbias reports it with:

- ``group_bias:<label>`` for each target occupation and ``mean_abs_group_bias`` over every occupation
  with both groups (Du's B_gr, METHODS §1; :meth:`ModelAnalysis.group_bias`, all persons of the model
  as :func:`~kgbias_core.whatif.runs.bias_change` measures a what-if);
- ``fisher_bp:<label>`` and ``mean_abs_fisher_bp`` (Fisher's b_p, a = male, b = female, METHODS §6;
  :attr:`ModelAnalysis.fisher_bp`);
- ``tlb_gender``: Keidar's TLB of the gender relation (Eq. 5-6, METHODS §7): the mean over the gender
  values held by ``min_persons`` persons of the one-vs-rest mean |b_p| over every occupation
  (:func:`~kgbias_core.measures.relation_audit.translational_likelihood_bias`; the audit's classifier,
  which TLB does not need, is not run);
- ``dpg``, ``ppg``, ``eog``: Schwertmann's gaps of the top-1 occupation predictions on the test split,
  macro means over classes (METHODS §8; :func:`~kgbias_core.measures.prediction_fairness.model_fairness`);
- ``mrr``, ``hits@10``: filtered link prediction on the test split, heads and tails pooled (the figure papers
  report; :func:`~kgbias_core.evaluation.link_prediction.link_prediction` with ``side="both"``);
- cost: ``triples_edited`` (removed + added training triples; 0 for embedding-level methods) and
  ``seconds`` (the what-if's retraining, the regularised training or the projection; 0 for the original).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embeddings.pykeen_bridge import pykeen_model
from kgbias_core.embeddings.store import StoredModel
from kgbias_core.errors import COMPARE_NO_MODELS, COMPARE_OTHER_GRAPH, MeasureError
from kgbias_core.evaluation.link_prediction import link_prediction
from kgbias_core.measures.prediction_fairness import model_fairness
from kgbias_core.measures.relation_audit import translational_likelihood_bias

#: Columns of :func:`comparison_table` after the per-target ones.
SUMMARY_COLUMNS = ("mean_abs_group_bias", "mean_abs_fisher_bp", "tlb_gender", "dpg", "ppg", "eog", "mrr",
                   "hits@10", "triples_edited", "seconds")


def method_of(model: StoredModel) -> str:
    """How a model was made: ``original``, the what-if's strategy ("if-remove k=800", "add c=0.5") or the
    embedding-level method ("project", "regularise w=10")."""
    debias = model.info.get("debias")
    if isinstance(debias, dict):
        method = str(debias.get("method"))
        return f"{method} w={debias['weight']:g}" if "weight" in debias else method
    if model.edit:
        return str(model.edit.get("strategy") or model.edit.get("kind"))
    return "original"


def edit_cost(model: StoredModel) -> tuple[int, float]:
    """(training triples removed + added, seconds it took to make the model); (0, 0.0) for the original."""
    if isinstance(model.info.get("debias"), dict):
        return 0, float(model.info.get("debias_seconds") or 0.0)
    if model.edit:
        edited = int(model.edit.get("n_removed", 0)) + int(model.edit.get("n_added_triples", 0))
        return edited, float(model.info.get("train_seconds") or 0.0)
    return 0, 0.0


def gender_tlb(model: StoredModel, *, min_persons: int = 10) -> float:
    """Keidar's TLB of the gender relation over all occupations (module docstring); NaN if no value qualifies."""
    analysis_groups = ModelAnalysis(model).groups
    triples = model.triples.cpu()
    pairs = triples[triples[:, 1] == analysis_groups.gender_relation][:, [0, 2]].numpy()
    table = translational_likelihood_bias(
        pykeen_model(model, device="cpu"), person_values=pairs, attribute_relation=analysis_groups.gender_relation,
        occupation_relation=analysis_groups.occupation_relation, professions=analysis_groups.occupations.cpu().numpy(),
        min_persons=min_persons,
    )
    used = table.loc[~table["skipped"], "tlb"]
    return float(used.mean()) if len(used) else math.nan


def _mean_abs(values: torch.Tensor) -> float:
    values = values[~torch.isnan(values)]
    return float(values.abs().mean()) if values.numel() else math.nan


#: Link prediction metrics of a model (keys ``mrr``, ``hits@10``): computed, or read from the store's cache.
LinkMetrics = Callable[[StoredModel], dict[str, float]]


def both_sides(model: StoredModel) -> dict[str, float]:
    """The comparison's link prediction: heads and tails pooled, as everywhere else a model is quoted."""
    return link_prediction(model, side="both")


def model_row(
    model: StoredModel, *, occupations: Sequence[str], min_persons: int = 10, links: LinkMetrics = both_sides
) -> dict[str, Any]:
    """One row of :func:`comparison_table`: every measure of one model."""
    analysis = ModelAnalysis(model)
    groups = analysis.groups
    bias, b_p = analysis.group_bias(), analysis.fisher_bp
    index = [groups.index(o) for o in occupations]
    row: dict[str, Any] = {"model": model.name, "method": method_of(model)}
    for i in index:
        row[f"group_bias:{groups.labels[i]}"] = float(bias[i])
    for i in index:
        row[f"fisher_bp:{groups.labels[i]}"] = float(b_p[i])
    fairness = model_fairness(model, n_bootstrap=0)
    metrics = links(model)
    edited, seconds = edit_cost(model)
    row.update({
        "mean_abs_group_bias": _mean_abs(bias),
        "mean_abs_fisher_bp": _mean_abs(b_p),
        "tlb_gender": gender_tlb(model, min_persons=min_persons),
        "dpg": float(fairness.by_model["DPG"]),
        "ppg": float(fairness.by_model["PPG"]),
        "eog": float(fairness.by_model["EOG"]),
        "mrr": metrics.get("mrr", np.nan),
        "hits@10": metrics.get("hits@10", np.nan),
        "triples_edited": edited,
        "seconds": seconds,
    })
    return row


def comparison_table(
    models: Sequence[StoredModel], *, occupations: Sequence[str] = (), min_persons: int = 10,
    links: LinkMetrics = both_sides,
) -> pd.DataFrame:
    """One row per model, columns ``model``, ``method``, ``group_bias:<label>`` and ``fisher_bp:<label>``
    per target occupation (labels or names; written as labels), then :data:`SUMMARY_COLUMNS`.

    The models must share a graph (data set and data hash): a what-if or a debiased model keeps its
    base's. NaN where a measure is undefined (an empty group, no test split). ``links``: how MRR and Hits@10
    are obtained (the task reads the store's cached link prediction).
    """
    if not models:
        raise MeasureError(COMPARE_NO_MODELS)
    first = models[0]
    for model in models[1:]:
        if (model.dataset, model.data_hash) != (first.dataset, first.data_hash):
            raise MeasureError(COMPARE_OTHER_GRAPH.format(
                model=model.name, found=model.dataset, found_hash=model.data_hash[:12], expected=first.dataset,
                expected_hash=first.data_hash[:12]))
    return pd.DataFrame([model_row(m, occupations=occupations, min_persons=min_persons, links=links)
                         for m in models])
