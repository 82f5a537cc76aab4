"""Accuracy against disparity: one row per model of a graph (base, what-if runs, debiased ones) with its
link-prediction MRR (cached, :mod:`kgbias_core.evaluation.link_prediction`) and its mean |B_gr| over the
occupations with at least ``minimum`` men and women (METHODS §1). A debiasing edit that lowers the mean |B_gr|
at the price of the MRR shows as a move left and down.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.evaluation.link_prediction import one_side
from kgbias_core.tables import MIN_GROUP_SIZE

#: Columns of :func:`accuracy_disparity_table`.
COLUMNS = ("model", "kind", "edit", "mrr", "occupation_mrr", "mean_abs_group_bias", "n_occupations")


def mean_abs_group_bias(analysis: ModelAnalysis, *, minimum: int = MIN_GROUP_SIZE) -> tuple[float, int]:
    """(mean |B_gr| over the occupations with at least ``minimum`` men and women, how many): the disparity of
    one model. NaN and 0 where none qualifies."""
    groups = analysis.groups
    enough = (groups.n_male >= minimum) & (groups.n_female >= minimum)
    values = analysis.group_bias()[enough].abs()
    n = int(enough.sum())
    return (float(values.double().mean()) if n else math.nan), n


def accuracy_disparity_row(name: str, analysis: ModelAnalysis, link_prediction: pd.DataFrame | None, *,
                           minimum: int = MIN_GROUP_SIZE) -> dict[str, object]:
    """One model's row: MRR of all and of occupation queries, head and tail sides pooled (NaN where not computed
    yet), mean |B_gr|."""
    edit = analysis.model.edit or {}
    by_queries = {} if link_prediction is None else one_side(link_prediction, "both").set_index("queries")["mrr"]
    by_queries = dict(by_queries)
    # B_gr is a distance-model measure (Du): a DistMult, ComplEx or RotatE model has no mean |B_gr| to show.
    distance_model = analysis.model.config.model == "transe"
    disparity, n = mean_abs_group_bias(analysis, minimum=minimum) if distance_model else (math.nan, 0)
    return {"model": name, "kind": "what-if" if edit else "base", "edit": edit.get("strategy", ""),
            "mrr": float(by_queries.get("all", math.nan)),
            "occupation_mrr": float(by_queries.get("occupation", math.nan)),
            "mean_abs_group_bias": disparity, "n_occupations": n}


def accuracy_disparity_table(analyses: Mapping[str, ModelAnalysis], link_predictions: Mapping[str, pd.DataFrame | None],
                             *, minimum: int = MIN_GROUP_SIZE) -> pd.DataFrame:
    """:func:`accuracy_disparity_row` of every model in ``analyses`` (its link prediction from ``link_predictions``)."""
    rows = [accuracy_disparity_row(name, analysis, link_predictions.get(name), minimum=minimum)
            for name, analysis in analyses.items()]
    return pd.DataFrame(rows, columns=list(COLUMNS))
