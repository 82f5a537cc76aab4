"""Accuracy against disparity: one row per model of a graph (base, what-if runs, debiased ones) with its
link-prediction MRR (cached, :mod:`kgbias_core.evaluation.link_prediction`), its mean |B_gr| over the
occupations with at least ``minimum`` men and women (METHODS §1), and a fairness gap of its predictions.

The fairness gap is Schwertmann et al.'s (2023) equal-opportunity gap EOG at the model level (METHODS §8):

    EOG = mean over classes t of |Rec(male, t) - Rec(female, t)|,  Rec(s, t) = P(ŷ = t | y = t, s)

(Schwertmann §3.3 Eq. 3 per class, §3.4 Eq. 5 the macro mean over the classes where it is defined), over the
test facts (person, occupation, ?) whose person has a gender, ŷ the top-1 tail over all entities. Why EOG: it
conditions on the true occupation, so it asks the accuracy question by gender -- are the men and the women who
hold an occupation predicted to hold it equally often -- and it is what link-prediction accuracy means for one
group; B_gr, in contrast, measures the embedding's distances. DPG (Eq. 1, selection rates) and PPG (Eq. 2,
precisions) come beside it, macro means in the same way, for the reader who asks the demographic-parity
question instead. The classes are the occupations with at least :func:`default_min_count` test facts (the rest
OTHER), the same for every model of a graph: they share the test split. Gaps are unsigned, 0 = equal.
A predictor that gives one answer to most facts is flagged (``degenerate_predictor``): its gaps compare how
often each group gets that answer, not how fairly it tells occupations apart.

A debiasing edit that lowers the disparity at the price of the MRR shows as a move left and down.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embeddings.store import StoredModel
from kgbias_core.errors import MeasureError
from kgbias_core.evaluation.link_prediction import one_side
from kgbias_core.measures.prediction_fairness import model_fairness
from kgbias_core.tables import MIN_GROUP_SIZE

#: Columns of :func:`accuracy_disparity_table`.
COLUMNS = ("model", "kind", "edit", "mrr", "occupation_mrr", "mean_abs_group_bias", "n_occupations", "eog", "dpg",
           "ppg", "n_fairness_classes", "degenerate_predictor")
#: The disparity measures a chart of the table can put on its axis: column -> what it is.
DISPARITIES = {
    "mean_abs_group_bias": "mean |B_gr| over the ranked occupations (Du; embedding distances)",
    "eog": "EOG: equal-opportunity gap of the top-1 occupation predictions (Schwertmann Eq. 3, 5)",
    "dpg": "DPG: demographic-parity gap of the top-1 occupation predictions (Schwertmann Eq. 1, 5)",
    "ppg": "PPG: predictive-parity gap of the top-1 occupation predictions (Schwertmann Eq. 2, 5)",
}


def mean_abs_group_bias(analysis: ModelAnalysis, *, minimum: int = MIN_GROUP_SIZE) -> tuple[float, int]:
    """(mean |B_gr| over the occupations with at least ``minimum`` men and women, how many): the disparity of
    one model. NaN and 0 where none qualifies."""
    groups = analysis.groups
    enough = (groups.n_male >= minimum) & (groups.n_female >= minimum)
    values = analysis.group_bias()[enough].abs()
    n = int(enough.sum())
    return (float(values.double().mean()) if n else math.nan), n


def fairness_gaps(model: StoredModel) -> dict[str, object]:
    """Schwertmann's model-level EOG, DPG and PPG of ``model`` (module docstring), the classes that define EOG and
    whether the predictor is degenerate; NaN (and 0 classes) where the test split has no fact of a man or a woman."""
    try:
        report = model_fairness(model, n_bootstrap=0)
    except MeasureError:  # no test split, or no test fact of a gendered person: no gap to show, not a failure
        return {"eog": math.nan, "dpg": math.nan, "ppg": math.nan, "n_fairness_classes": 0,
                "degenerate_predictor": False}
    gaps = report.by_model
    return {"eog": float(gaps["EOG"]), "dpg": float(gaps["DPG"]), "ppg": float(gaps["PPG"]),
            "n_fairness_classes": int(gaps["n_classes_EOG"]), "degenerate_predictor": report.degenerate}


def model_kind(model: StoredModel) -> str:
    """"what-if" (a data edit, Du §4.3), "debiased" (an embedding-level method, issue 29) or "base"."""
    if model.edit:
        return "what-if"
    return "debiased" if isinstance(model.info.get("debias"), dict) else "base"


def accuracy_disparity_row(name: str, analysis: ModelAnalysis, link_prediction: pd.DataFrame | None, *,
                           minimum: int = MIN_GROUP_SIZE) -> dict[str, object]:
    """One model's row: MRR of all and of occupation queries, head and tail sides pooled (NaN where not computed
    yet), mean |B_gr|, the gaps."""
    model = analysis.model
    edit = model.edit or {}
    by_queries = ({} if link_prediction is None
                  else one_side(link_prediction, "both").set_index("queries")["mrr"].to_dict())
    # B_gr is a distance-model measure (Du): a DistMult, ComplEx or RotatE model has no mean |B_gr| to show.
    distance_model = model.config.model == "transe"
    disparity, n = mean_abs_group_bias(analysis, minimum=minimum) if distance_model else (math.nan, 0)
    debias = model.info.get("debias")
    method = str(debias.get("method", "")) if isinstance(debias, dict) else ""
    return {"model": name, "kind": model_kind(model), "edit": edit.get("strategy", method),
            "mrr": float(by_queries.get("all", math.nan)),
            "occupation_mrr": float(by_queries.get("occupation", math.nan)),
            "mean_abs_group_bias": disparity, "n_occupations": n, **fairness_gaps(model)}


def accuracy_disparity_table(analyses: Mapping[str, ModelAnalysis], link_predictions: Mapping[str, pd.DataFrame | None],
                             *, minimum: int = MIN_GROUP_SIZE) -> pd.DataFrame:
    """:func:`accuracy_disparity_row` of every model in ``analyses`` (its link prediction from ``link_predictions``)."""
    rows = [accuracy_disparity_row(name, analysis, link_predictions.get(name), minimum=minimum)
            for name, analysis in analyses.items()]
    return pd.DataFrame(rows, columns=list(COLUMNS))
