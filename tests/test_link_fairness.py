"""Schwertmann et al.'s link-prediction fairness (kgbias_core.measures.prediction_fairness) by hand and brute force."""

import numpy as np
import pytest
import torch
from pykeen.models import DistMult, RotatE, TransE
from pykeen.triples import TriplesFactory

from kgbias_core import errors
from kgbias_core.measures.prediction_fairness import (
    NOT_OCCUPATION,
    OTHER,
    _class_indices,
    _counts,
    _metrics_from_counts,
    fairness_report,
    filtered_ranks,
    predict_top1_tails,
    rank_metrics,
)

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def factory() -> TriplesFactory:
    rows = [[f"p{i}", "job", f"job{i % 3}"] for i in range(10)]
    rows += [[f"p{i}", "gender", "male" if i % 2 else "female"] for i in range(10)]
    rows += [["p0", "job", "job1"], ["p1", "job", "job2"]]
    return TriplesFactory.from_labeled_triples(np.asarray(rows))


def test_top1_equals_brute_force_argmax(factory: TriplesFactory) -> None:
    model = TransE(triples_factory=factory, embedding_dim=5, random_seed=3)
    heads = torch.arange(factory.num_entities)
    relation = factory.relation_to_id["job"]
    fast = predict_top1_tails(model, heads=heads, relation=relation, batch_size=3)
    for h, predicted in zip(heads.tolist(), fast.tolist(), strict=True):
        hrt = torch.tensor([[h, relation, t] for t in range(factory.num_entities)])
        assert predicted == int(model.score_hrt(hrt).reshape(-1).argmax())


def _brute_force_rank(model, triple: list[int], known: set[tuple[int, int, int]], n_entities: int) -> float:
    h, r, t = triple
    scores = model.score_hrt(torch.tensor([[h, r, e] for e in range(n_entities)])).reshape(-1)
    better = tied = 0
    for e in range(n_entities):
        if e == t or (h, r, e) in known:
            continue
        better += int(scores[e] > scores[t])
        tied += int(scores[e] == scores[t])
    return 1 + better + tied / 2


@pytest.mark.parametrize("cls", [TransE, RotatE])
def test_filtered_ranks_equal_brute_force(factory: TriplesFactory, cls: type) -> None:
    model = cls(triples_factory=factory, embedding_dim=5, random_seed=4)
    known = factory.mapped_triples
    test = known[torch.tensor([0, 3, 10, 11, 15])]
    fast = filtered_ranks(model, triples=test, known=known, batch_size=2)
    known_set = {tuple(row) for row in known.tolist()}
    slow = [_brute_force_rank(model, row, known_set, factory.num_entities) for row in test.tolist()]
    torch.testing.assert_close(fast, torch.tensor(slow, dtype=torch.float32))
    # a triple not in `known` is ranked against everything except the known tails of its (h, r)
    extra = torch.tensor([[0, factory.relation_to_id["job"], 5]])
    fast_extra = filtered_ranks(model, triples=extra, known=known)
    assert float(fast_extra[0]) == _brute_force_rank(model, extra[0].tolist(), known_set, factory.num_entities)


def test_filtered_ranks_realistic_ties(factory: TriplesFactory) -> None:
    model = DistMult(triples_factory=factory, embedding_dim=4, random_seed=0)
    with torch.no_grad():
        model.relation_representations[0]._embeddings.weight.zero_()  # every score is 0: all tied
    job = factory.relation_to_id["job"]
    p0 = factory.entity_to_id["p0"]
    known = factory.mapped_triples
    ranks = filtered_ranks(model, triples=torch.tensor([[p0, job, factory.entity_to_id["job0"]]]), known=known)
    # p0 also has job1 (filtered): the other E - 2 entities tie with the true tail
    assert float(ranks[0]) == 1 + (factory.num_entities - 2) / 2


def test_rank_metrics() -> None:
    metrics = rank_metrics(torch.tensor([1.0, 2.0, 4.0, 20.0]))
    assert metrics["mrr"] == pytest.approx((1 + 0.5 + 0.25 + 0.05) / 4)
    assert metrics["mr"] == pytest.approx(27 / 4)
    assert (metrics["hits@1"], metrics["hits@3"], metrics["hits@10"]) == (0.25, 0.5, 0.75)
    with pytest.raises(errors.MeasureError, match="no ranks given"):
        rank_metrics([])


# Hand example. Occupations 10..15, entity 99 is not an occupation. min_count = 2 gives classes
# 10 (5 facts), 11 (3), 14 (2), 15 (2) and OTHER (12, 13).
FACTS = [
    # y_true, y_pred, gender
    (10, 10, "male"),
    (10, 11, "male"),
    (11, 11, "male"),
    (12, 10, "male"),  # true OTHER
    (10, 99, "male"),  # not an occupation
    (14, 14, "male"),
    (14, 10, "male"),
    (15, 11, "male"),
    (10, 10, "female"),
    (11, 10, "female"),
    (11, 13, "female"),  # predicted OTHER
    (13, 13, "female"),  # OTHER -> OTHER: correct
    (15, 99, "female"),  # not an occupation
    (10, 10, "nonbinary"),  # dropped: not one of the two groups
]
OCCUPATIONS = {10, 11, 12, 13, 14, 15}


def _hand_report(**kwargs):
    y_true, y_pred, gender = (np.asarray(column) for column in zip(*FACTS, strict=True))
    return fairness_report(
        y_true=y_true, y_pred=y_pred, gender=gender, occupation_ids=OCCUPATIONS, min_count=2, **kwargs
    )


def test_fairness_report_by_hand() -> None:
    report = _hand_report(n_bootstrap=50, seed=1)
    assert report.classes == (10, 11, 14, 15, OTHER)
    assert report.n_facts == 13 and report.n_dropped_gender == 1
    assert report.n_facts_by_group == {"male": 8, "female": 5}
    assert report.n_not_occupation == 2
    assert report.n_not_occupation_by_group == {"male": 1, "female": 1}

    nan = np.nan
    expected = {
        # class: (selR, precision, recall, data share) for male, then female
        10: ((3 / 8, 1 / 3, 1 / 3, 3 / 8), (2 / 5, 1 / 2, 1.0, 1 / 5)),
        11: ((3 / 8, 1 / 3, 1.0, 1 / 8), (0.0, nan, 0.0, 2 / 5)),
        14: ((1 / 8, 1.0, 1 / 2, 2 / 8), (0.0, nan, nan, 0.0)),
        15: ((0.0, nan, 0.0, 1 / 8), (0.0, nan, 0.0, 1 / 5)),  # 15: never predicted
        OTHER: ((0.0, nan, 0.0, 1 / 8), (2 / 5, 1 / 2, 1.0, 1 / 5)),
    }
    frame = report.by_class_group
    for class_id, per_group in expected.items():
        for group, values in zip(("male", "female"), per_group, strict=True):
            row = frame.loc[(class_id, group)]
            for name, value in zip(("selection_rate", "precision", "recall", "data_share"), values, strict=True):
                if np.isnan(value):
                    assert np.isnan(row[name]) and not row[f"{name}_defined"], (class_id, group, name)
                else:
                    assert row[name] == pytest.approx(value), (class_id, group, name)
                    if name != "data_share":
                        assert row[f"{name}_defined"]
            assert row["selection_deviation"] == pytest.approx(values[0] - values[3])

    gaps = report.by_class
    assert gaps.loc[10, "DPG"] == pytest.approx(0.025) and gaps.loc[OTHER, "DPG"] == pytest.approx(0.4)
    assert gaps.loc[10, "PPG"] == pytest.approx(1 / 6) and not gaps.loc[11, "PPG_defined"]
    assert gaps.loc[11, "EOG"] == pytest.approx(1.0) and np.isnan(gaps.loc[14, "EOG"])

    model = report.by_model
    assert model["DPG"] == pytest.approx((0.025 + 0.375 + 0.125 + 0 + 0.4) / 5)
    assert model["PPG"] == pytest.approx(1 / 6) and model["n_classes_PPG"] == 1
    assert model["EOG"] == pytest.approx((2 / 3 + 1 + 0 + 1) / 4) and model["n_classes_EOG"] == 4

    groups = report.by_group
    assert groups.loc["male", "selection_rate"] == pytest.approx(7 / 40)
    assert groups.loc["male", "precision"] == pytest.approx(5 / 9)
    assert groups.loc["male", "recall"] == pytest.approx((1 / 3 + 1 + 1 / 2) / 5)
    assert groups.loc["female", "selection_rate"] == pytest.approx(0.16)
    assert groups.loc["female", "precision"] == pytest.approx(0.5)
    assert groups.loc["female", "recall"] == pytest.approx(0.5)
    assert groups.loc["female", "n_classes_precision"] == 2

    ci = report.confidence_intervals
    assert ci.loc[("model", "DPG"), "estimate"] == pytest.approx(model["DPG"])
    assert (ci["low"] <= ci["high"]).all()


def test_empty_group_is_undefined_not_zero() -> None:
    males = [fact for fact in FACTS if fact[2] == "male"]
    y_true, y_pred, gender = (np.asarray(column) for column in zip(*males, strict=True))
    report = fairness_report(
        y_true=y_true, y_pred=y_pred, gender=gender, occupation_ids=OCCUPATIONS, min_count=2, n_bootstrap=20
    )
    female = report.by_class_group.xs("female", level="group")
    assert female[["selection_rate", "precision", "recall"]].isna().all().all()
    assert not female[["selection_rate_defined", "precision_defined", "recall_defined"]].any().any()
    assert report.by_class[["DPG", "PPG", "EOG"]].isna().all().all()
    assert np.isnan(report.by_model["DPG"]) and report.by_model["n_classes_DPG"] == 0
    assert report.n_facts_by_group["female"] == 0


def _random_facts(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y_true = rng.choice([1, 2, 3, 4, 5], size=n, p=[0.4, 0.3, 0.2, 0.07, 0.03])
    y_pred = np.where(rng.random(n) < 0.5, y_true, rng.choice([1, 2, 3, 4, 5, 77], size=n))
    gender = rng.choice(["male", "female"], size=n, p=[0.7, 0.3])
    return y_true, y_pred, gender


def test_bootstrap_ci_contains_estimate_and_is_seeded() -> None:
    y_true, y_pred, gender = _random_facts(600, seed=0)
    kwargs = {"y_true": y_true, "y_pred": y_pred, "gender": gender, "occupation_ids": {1, 2, 3, 4, 5}}
    report = fairness_report(min_count=30, n_bootstrap=300, seed=5, **kwargs)
    ci = report.confidence_intervals
    assert len(ci) == 3 + 2 * 3
    assert ((ci["low"] <= ci["estimate"]) & (ci["estimate"] <= ci["high"])).all()
    assert (ci["high"] - ci["low"] > 0).all()
    assert report.n_not_occupation == int((y_pred == 77).sum())
    again = fairness_report(min_count=30, n_bootstrap=300, seed=5, **kwargs)
    assert again.confidence_intervals.equals(ci)


def test_bootstrap_counts_match_metric_frame() -> None:
    """The count path used for bootstrap replicates equals MetricFrame on the original sample."""
    y_true, y_pred, gender = _random_facts(300, seed=2)
    report = fairness_report(
        y_true=y_true, y_pred=y_pred, gender=gender, occupation_ids={1, 2, 3, 4}, min_count=30, n_bootstrap=1
    )
    classes = np.asarray(report.classes)
    true_class = np.where(np.isin(y_true, classes), y_true, OTHER)
    pred_class = np.where(np.isin(y_pred, classes), y_pred, OTHER)
    pred_class = np.where(np.isin(y_pred, [1, 2, 3, 4]), pred_class, NOT_OCCUPATION)
    true_index, pred_index = _class_indices(true_class=true_class, pred_class=pred_class, classes=classes)
    counts = _counts(
        true_index=true_index,
        pred_index=pred_index,
        group=np.where(gender == "male", 0, 1),
        n_classes=len(classes),
        weights=None,
    )
    metrics = _metrics_from_counts(counts)
    for g, group in enumerate(("male", "female")):
        frame = report.by_class_group.xs(group, level="group")
        for name in ("selection_rate", "precision", "recall"):
            np.testing.assert_allclose(metrics[name][g], frame[name].to_numpy(), equal_nan=True)


def test_fairness_errors() -> None:
    with pytest.raises(errors.MeasureError, match="same length, got 2, 1 and 2"):
        fairness_report(y_true=[1, 2], y_pred=[1], gender=["male", "female"], occupation_ids={1})
    with pytest.raises(errors.MeasureError, match="no test fact has a person whose gender"):
        fairness_report(y_true=[1], y_pred=[1], gender=["x"], occupation_ids={1})
    with pytest.raises(errors.MeasureError, match="two different labels"):
        fairness_report(y_true=[1], y_pred=[1], gender=["x"], occupation_ids={1}, groups=("x", "x"))
