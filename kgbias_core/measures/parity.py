"""Parity of predictions between two groups: one count table per (group x class), distances as lookups.

Disaggregate once, like Fairlearn's MetricFrame: :func:`parity_counts` counts facts, predictions,
truths and hits per group and class; every rate and every distance below is a few lines over that
table. Two papers read the same table (METHODS §7-8):

- Keidar et al. (2021) §3.1 sum per-class distances over the classes: DPD (Eq. 1-2) over selection
  rates and PPD (Eq. 3-4) over recalls (the paper conditions on y = a; see
  :func:`predictive_parity_distance`).
- Schwertmann et al. (2023) §3.3 keep one gap per class: DPG (Eq. 1) over selection rates, PPG
  (Eq. 2) over precisions, EOG (Eq. 3) over recalls.

Row 0 of the table is the first group (Keidar: s = 1; Schwertmann: male), row 1 the second. A rate
whose denominator is 0 is NaN (undefined), never 0, and so is every distance built on it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = [
    "ParityCounts",
    "ParityDistance",
    "data_share",
    "demographic_parity_distance",
    "demographic_parity_gap",
    "equal_opportunity_gap",
    "parity_counts",
    "precision",
    "predictive_parity_distance",
    "predictive_parity_gap",
    "recall",
    "selection_rate",
]

#: Rows of a count table: the two groups compared.
N_GROUPS = 2


@dataclass(frozen=True)
class ParityCounts:
    """(Weighted) counts of facts per group and class: what every parity rate divides."""

    classes: np.ndarray  # [C] class labels, in column order
    facts: np.ndarray  # [2] facts per group (every fact, whatever its labels): denominator of SelR
    predicted: np.ndarray  # [2, C] facts predicted as the class: numerator of SelR, denominator of Prec
    true: np.ndarray  # [2, C] facts whose true label is the class: denominator of Rec
    hits: np.ndarray  # [2, C] facts predicted as their true class (true positives)


def _column(labels: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Column of each label in ``classes``; -1 for a label that is no class."""
    order = np.argsort(classes)
    position = np.searchsorted(classes[order], labels).clip(max=len(classes) - 1)
    return np.where(classes[order][position] == labels, order[position], -1)


def parity_counts(
    *,
    y_true: np.ndarray,
    y_pred: np.ndarray,
    group: np.ndarray,
    classes: np.ndarray,
    weights: np.ndarray | None = None,
) -> ParityCounts:
    """Count once per (group, class): facts, predictions, truths and true positives.

    Shapes: y_true, y_pred [n] labels; group [n] row 0 or 1; classes [C]; weights [n] (a
    bootstrap's multiplicities) or None for 1 each. A label outside ``classes`` counts in no
    class (e.g. a prediction that is not an occupation: a wrong prediction that still counts
    among the group's facts).
    """
    classes = np.asarray(classes, dtype=np.int64)
    group = np.asarray(group, dtype=np.int64)
    true_column = _column(np.asarray(y_true, dtype=np.int64), classes)
    pred_column = _column(np.asarray(y_pred, dtype=np.int64), classes)
    n_classes = len(classes)

    def count(mask: np.ndarray, column: np.ndarray) -> np.ndarray:
        cells = group[mask] * n_classes + column[mask]  # flat (group, class) cell of each fact
        w = None if weights is None else weights[mask]
        return np.bincount(cells, weights=w, minlength=N_GROUPS * n_classes).reshape(N_GROUPS, n_classes)

    is_pred = pred_column >= 0
    return ParityCounts(
        classes=classes,
        facts=np.bincount(group, weights=weights, minlength=N_GROUPS).astype(np.float64),
        predicted=count(is_pred, pred_column).astype(np.float64),
        true=count(true_column >= 0, true_column).astype(np.float64),
        hits=count(is_pred & (pred_column == true_column), true_column).astype(np.float64),
    )


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, numerator / denominator, np.nan)


def selection_rate(counts: ParityCounts) -> np.ndarray:
    """SelR(s, a) = P(ŷ = a | s): [2, C]; NaN for an empty group."""
    return _ratio(counts.predicted, counts.facts[:, None])


def precision(counts: ParityCounts) -> np.ndarray:
    """Prec(s, a) = P(y = a | ŷ = a, s): [2, C]; NaN where a was never predicted for s."""
    return _ratio(counts.hits, counts.predicted)


def recall(counts: ParityCounts) -> np.ndarray:
    """Rec(s, a) = P(ŷ = a | y = a, s): [2, C]; NaN where no fact of s has y = a."""
    return _ratio(counts.hits, counts.true)


def data_share(counts: ParityCounts) -> np.ndarray:
    """P(y = a | s): [2, C], the share a perfect predictor would select (Schwertmann Table 5)."""
    return _ratio(counts.true, counts.facts[:, None])


def demographic_parity_gap(counts: ParityCounts) -> np.ndarray:
    """DPG(a) = |SelR(row 0, a) - SelR(row 1, a)| (Schwertmann §3.3, Eq. 1; METHODS §8). [C], unsigned."""
    rates = selection_rate(counts)
    return np.abs(rates[0] - rates[1])


def predictive_parity_gap(counts: ParityCounts) -> np.ndarray:
    """PPG(a) = |Prec(row 0, a) - Prec(row 1, a)| (Schwertmann §3.3, Eq. 2; METHODS §8). [C], unsigned."""
    rates = precision(counts)
    return np.abs(rates[0] - rates[1])


def equal_opportunity_gap(counts: ParityCounts) -> np.ndarray:
    """EOG(a) = |Rec(row 0, a) - Rec(row 1, a)| (Schwertmann §3.3, Eq. 3; METHODS §8). [C], unsigned."""
    rates = recall(counts)
    return np.abs(rates[0] - rates[1])


@dataclass(frozen=True)
class ParityDistance:
    """A DPD or PPD value with its per-class terms.

    value: the sum of the per-class distances over the classes where both probabilities are
    defined; None when no class is defined (then ``defined`` is False and ``reason`` says why).
    per_class: columns ``class``, ``p_s1``, ``p_s0``, ``distance``, ``defined``; the distance is
    NaN exactly where ``defined`` is False.
    """

    value: float | None  # the distance, or None when undefined
    defined: bool  # False: no class had both probabilities defined
    per_class: pd.DataFrame  # one row per class
    n_undefined_classes: int  # classes left out of the sum
    reason: str | None  # why undefined classes are undefined (None when all are defined)


def _summed_distance(rates: np.ndarray, *, classes: np.ndarray, reason: str) -> ParityDistance:
    """Keidar's sum over the defined classes of |rate(s = 1) - rate(s = 0)|; rates [2, C]."""
    distance = np.abs(rates[0] - rates[1])
    defined = ~np.isnan(distance)
    per_class = pd.DataFrame(
        {"class": classes, "p_s1": rates[0], "p_s0": rates[1], "distance": distance, "defined": defined}
    )
    n_undefined = int((~defined).sum())
    return ParityDistance(
        value=float(distance[defined].sum()) if defined.any() else None,
        defined=bool(defined.any()),
        per_class=per_class,
        n_undefined_classes=n_undefined,
        reason=reason if n_undefined else None,
    )


def demographic_parity_distance(counts: ParityCounts) -> ParityDistance:
    """Demographic parity distance DPD (Keidar §3.1, Eq. 1-2; METHODS §7).

    DPD = sum_a |P(ŷ = a | s = 1) - P(ŷ = a | s = 0)| over the table's classes [C] (row 0: s = 1).
    A class never predicted contributes 0. Undefined (value None) when either group is empty. Not
    divided by the number of values + 1 (the authors' code does; the paper does not). Range [0, 2];
    unsigned: 0 = predictions independent of s.
    """
    return _summed_distance(
        selection_rate(counts), classes=counts.classes, reason="one of the groups s = 1, s = 0 has no person"
    )


def predictive_parity_distance(counts: ParityCounts) -> ParityDistance:
    """Keidar's "predictive parity distance" PPD as the paper writes it (Keidar Eq. 3-4; METHODS §7).

    PPD = sum_a |P(ŷ = a | y = a, s = 1) - P(ŷ = a | y = a, s = 0)| over the table's classes [C].
    NOTE: this conditions on the TRUE class, so each term is a gap in RECALL (true-positive rate,
    i.e. Schwertmann's EOG), not in precision as the paper's prose says. A class is undefined (left
    out of the sum, counted in ``n_undefined_classes``) when no person of it is in one of the
    groups. Unsigned; range [0, C].
    """
    return _summed_distance(
        recall(counts),
        classes=counts.classes,
        reason="the class has no person with y = a in one of the groups s = 1, s = 0",
    )
