"""The one parity count table (kgbias_core.measures.parity) against naive loops, hand sums and Fairlearn."""

import numpy as np
import pytest
from fairlearn.metrics import MetricFrame

from kgbias_core.measures.parity import (
    data_share,
    demographic_parity_distance,
    demographic_parity_gap,
    equal_opportunity_gap,
    parity_counts,
    precision,
    predictive_parity_distance,
    predictive_parity_gap,
    recall,
    selection_rate,
)

OTHER = -1
#: Not a class: e.g. a top-1 tail that is no occupation.
NOT_A_CLASS = -2


def metric_frame_rates(
    *, y_true: np.ndarray, y_pred: np.ndarray, sensitive: np.ndarray, groups: tuple, classes: np.ndarray
) -> dict[str, np.ndarray]:
    """The oracle: per-group selection rate, precision, recall of each class by Fairlearn's MetricFrame.

    -> metric name -> [len(groups), C]; NaN where undefined (a group absent from ``sensitive`` is NaN).
    """

    def selection(c: int):
        return lambda t, p: float(np.mean(np.asarray(p) == c)) if len(p) else np.nan

    def precision_of(c: int):
        def metric(t: np.ndarray, p: np.ndarray) -> float:
            # sklearn's precision_score would give 0 where nothing is predicted: undefined is NaN
            predicted = np.asarray(p) == c
            return float(np.mean(np.asarray(t)[predicted] == c)) if predicted.any() else np.nan

        return metric

    def recall_of(c: int):
        def metric(t: np.ndarray, p: np.ndarray) -> float:
            actual = np.asarray(t) == c
            return float(np.mean(np.asarray(p)[actual] == c)) if actual.any() else np.nan

        return metric

    makers = {"selection_rate": selection, "precision": precision_of, "recall": recall_of}
    metrics = {f"{name}|{c}": maker(c) for name, maker in makers.items() for c in classes.tolist()}
    frame = MetricFrame(metrics=metrics, y_true=y_true, y_pred=y_pred, sensitive_features=sensitive)
    by_group = frame.by_group.reindex(list(groups))  # an empty group becomes a row of NaN
    return {
        name: np.stack([[float(by_group.loc[g, f"{name}|{c}"]) for c in classes.tolist()] for g in groups])
        for name in makers
    }


def _random_facts(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y_true = rng.choice([1, 2, 3, OTHER], size=n, p=[0.4, 0.3, 0.2, 0.1])
    y_pred = np.where(rng.random(n) < 0.5, y_true, rng.choice([1, 2, 3, OTHER, NOT_A_CLASS], size=n))
    group = rng.choice([0, 1], size=n, p=[0.7, 0.3])
    return y_true, y_pred, group, np.array([1, 2, 3, OTHER, 4])  # class 4 never occurs


def test_counts_equal_naive_loop_with_weights() -> None:
    y_true, y_pred, group, classes = _random_facts(200, seed=0)
    weights = np.random.default_rng(1).integers(0, 3, size=200).astype(np.float64)
    counts = parity_counts(y_true=y_true, y_pred=y_pred, group=group, classes=classes, weights=weights)
    facts = np.zeros(2)
    predicted, true, hits = np.zeros((2, 5)), np.zeros((2, 5)), np.zeros((2, 5))
    for t, p, g, w in zip(y_true, y_pred, group, weights, strict=True):
        facts[g] += w
        for c, class_id in enumerate(classes):
            predicted[g, c] += w * (p == class_id)
            true[g, c] += w * (t == class_id)
            hits[g, c] += w * (p == class_id and t == class_id)
    np.testing.assert_array_equal(counts.facts, facts)
    np.testing.assert_array_equal(counts.predicted, predicted)
    np.testing.assert_array_equal(counts.true, true)
    np.testing.assert_array_equal(counts.hits, hits)
    np.testing.assert_array_equal(counts.classes, classes)


def test_rates_equal_metric_frame() -> None:
    """Fairlearn's MetricFrame is the oracle of every rate read from the count table."""
    y_true, y_pred, group, classes = _random_facts(300, seed=2)
    counts = parity_counts(y_true=y_true, y_pred=y_pred, group=group, classes=classes)
    oracle = metric_frame_rates(y_true=y_true, y_pred=y_pred, sensitive=group, groups=(0, 1), classes=classes)
    for name, rate in (("selection_rate", selection_rate), ("precision", precision), ("recall", recall)):
        np.testing.assert_array_equal(rate(counts), oracle[name], err_msg=name)
    assert np.isnan(precision(counts)[:, -1]).all() and np.isnan(recall(counts)[:, -1]).all()  # class 4


def test_empty_group_rates_are_undefined_not_zero() -> None:
    counts = parity_counts(y_true=np.array([1, 2]), y_pred=np.array([1, 1]), group=np.array([0, 0]),
                           classes=np.array([1, 2]))
    for rate in (selection_rate, precision, recall, data_share):
        assert np.isnan(rate(counts)[1]).all()
    assert np.isnan(demographic_parity_gap(counts)).all()


# Schwertmann's gaps by hand: 3 facts of group 0, 2 of group 1, classes 1 and 2.
GAP_TRUE = np.array([1, 1, 2, 1, 2])
GAP_PRED = np.array([1, 2, 2, 1, 1])
GAP_GROUP = np.array([0, 0, 0, 1, 1])


def test_schwertmann_gaps_by_hand() -> None:
    counts = parity_counts(y_true=GAP_TRUE, y_pred=GAP_PRED, group=GAP_GROUP, classes=np.array([1, 2]))
    # SelR: g0 (1/3, 2/3), g1 (1, 0); Prec: g0 (1, 1/2), g1 (1/2, NaN); Rec: g0 (1/2, 1), g1 (1, 0)
    np.testing.assert_allclose(demographic_parity_gap(counts), [2 / 3, 2 / 3])
    np.testing.assert_allclose(predictive_parity_gap(counts), [1 / 2, np.nan])
    np.testing.assert_allclose(equal_opportunity_gap(counts), [1 / 2, 1])
    np.testing.assert_allclose(data_share(counts), [[2 / 3, 1 / 3], [1 / 2, 1 / 2]])


# Keidar's distances by hand: 8 persons, first four s = 1. Class 2 is never predicted; class 5 never occurs.
Y_PRED = np.array([0, 0, 1, OTHER, 0, 1, 1, 1])
Y_TRUE = np.array([0, 1, 1, OTHER, 0, 1, 0, 2])
S = np.array([True, True, True, True, False, False, False, False])
CLASSES = np.array([0, 1, 2, OTHER, 5])


def _keidar_counts(sensitive: np.ndarray):
    return parity_counts(y_true=Y_TRUE, y_pred=Y_PRED, group=np.where(sensitive, 0, 1), classes=CLASSES)


def test_demographic_parity_distance_by_hand() -> None:
    result = demographic_parity_distance(_keidar_counts(S))
    # s=1: P(0)=2/4 P(1)=1/4 P(2)=0 P(OTHER)=1/4 P(5)=0; s=0: 1/4, 3/4, 0, 0, 0
    assert result.value == pytest.approx(0.25 + 0.5 + 0 + 0.25 + 0)
    assert result.defined and result.n_undefined_classes == 0 and result.reason is None
    per_class = result.per_class.set_index("class")
    assert per_class.loc[2, "distance"] == 0  # never predicted: defined, contributes 0
    assert per_class.loc[1, "p_s0"] == pytest.approx(0.75)


def test_demographic_parity_distance_is_the_sum_of_the_per_class_gaps() -> None:
    counts = _keidar_counts(S)
    assert demographic_parity_distance(counts).value == pytest.approx(np.nansum(demographic_parity_gap(counts)))
    assert predictive_parity_distance(counts).value == pytest.approx(np.nansum(equal_opportunity_gap(counts)))


def test_demographic_parity_distance_empty_group_is_undefined() -> None:
    result = demographic_parity_distance(_keidar_counts(np.ones(8, bool)))
    assert result.value is None and not result.defined
    assert result.n_undefined_classes == len(CLASSES)
    assert "has no person" in result.reason
    assert result.per_class["distance"].isna().all() and not result.per_class["defined"].any()


def test_predictive_parity_distance_by_hand() -> None:
    result = predictive_parity_distance(_keidar_counts(S))
    # class 0: s=1 {0: hit} = 1, s=0 {4: hit, 6: miss} = 1/2 -> 1/2
    # class 1: s=1 {1: miss, 2: hit} = 1/2, s=0 {5: hit} = 1 -> 1/2
    # class 2: no y=2 in s=1 -> undefined; OTHER: no y=OTHER in s=0 -> undefined; 5: undefined
    assert result.value == pytest.approx(1.0)
    assert result.defined and result.n_undefined_classes == 3
    per_class = result.per_class.set_index("class")
    assert per_class.loc[0, "p_s1"] == 1.0 and per_class.loc[0, "p_s0"] == 0.5
    assert np.isnan(per_class.loc[2, "p_s1"]) and per_class.loc[2, "p_s0"] == 0.0
    assert list(per_class["defined"]) == [True, True, False, False, False]
    assert "y = a" in result.reason


def test_predictive_parity_distance_all_undefined() -> None:
    result = predictive_parity_distance(_keidar_counts(np.zeros(8, bool)))
    assert result.value is None and not result.defined
