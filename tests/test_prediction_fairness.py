"""Schwertmann et al.'s prediction fairness (kgbias_core.measures.prediction_fairness) by hand, against
Fairlearn's MetricFrame, and on stored models."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch

from kgbias_core import errors
from kgbias_core.cli import main
from kgbias_core.data.graph import Gender
from kgbias_core.embeddings.store import save_model
from kgbias_core.measures.groups import occupation_groups
from kgbias_core.measures.prediction_fairness import (
    NOT_OCCUPATION,
    OTHER,
    PAPER_MIN_COUNT,
    PAPER_N_FACTS,
    class_group_table,
    default_min_count,
    fairness_report,
    gap_table,
    group_table,
    model_fairness,
    occupation_test_facts,
)

from .test_parity import metric_frame_rates

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


def test_a_predictor_giving_one_answer_to_most_facts_is_degenerate() -> None:
    report = _hand_report(n_bootstrap=5)
    # Top-1 tails of the 13 used facts (the nonbinary one is dropped): 10 five times, by hand.
    assert (report.top_prediction, report.top_prediction_share) == (10, pytest.approx(5 / 13))
    assert not report.degenerate
    y_true, _, gender = (np.asarray(column) for column in zip(*FACTS, strict=True))
    y_pred = np.where(np.arange(len(FACTS)) < 11, 11, 10)  # 11 for 11 of the 13 used facts: 85%
    one_answer = fairness_report(y_true=y_true, y_pred=y_pred, gender=gender, occupation_ids=OCCUPATIONS,
                                 min_count=2, n_bootstrap=5)
    assert one_answer.top_prediction == 11 and one_answer.top_prediction_share == pytest.approx(11 / 13)
    assert one_answer.degenerate


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


def test_report_equals_metric_frame() -> None:
    """Fairlearn's MetricFrame is the oracle of level (iii); levels (i) and (ii) are its macro means."""
    y_true, y_pred, gender = _random_facts(300, seed=2)
    report = fairness_report(
        y_true=y_true, y_pred=y_pred, gender=gender, occupation_ids={1, 2, 3, 4}, min_count=30, n_bootstrap=1
    )
    classes = np.asarray(report.classes)
    true_class = np.where(np.isin(y_true, classes), y_true, OTHER)
    pred_class = np.where(np.isin(y_pred, classes), y_pred, OTHER)
    pred_class = np.where(np.isin(y_pred, [1, 2, 3, 4]), pred_class, NOT_OCCUPATION)
    oracle = metric_frame_rates(
        y_true=true_class, y_pred=pred_class, sensitive=gender, groups=("male", "female"), classes=classes
    )
    for g, group in enumerate(("male", "female")):
        frame = report.by_class_group.xs(group, level="group")
        for name in ("selection_rate", "precision", "recall"):
            np.testing.assert_array_equal(frame[name].to_numpy(), oracle[name][g], err_msg=f"{group} {name}")
            assert report.by_group.loc[group, name] == pytest.approx(np.nanmean(oracle[name][g]))
    for gap, name in (("DPG", "selection_rate"), ("PPG", "precision"), ("EOG", "recall")):
        np.testing.assert_array_equal(report.by_class[gap].to_numpy(), np.abs(oracle[name][0] - oracle[name][1]))


def test_fairness_errors() -> None:
    with pytest.raises(errors.MeasureError, match="same length, got 2, 1 and 2"):
        fairness_report(y_true=[1, 2], y_pred=[1], gender=["male", "female"], occupation_ids={1})
    with pytest.raises(errors.MeasureError, match="no test fact has a person whose gender"):
        fairness_report(y_true=[1], y_pred=[1], gender=["x"], occupation_ids={1})
    with pytest.raises(errors.MeasureError, match="two different labels"):
        fairness_report(y_true=[1], y_pred=[1], gender=["x"], occupation_ids={1}, groups=("x", "x"))


def test_fairness_uses_test_occupation_facts_of_persons_with_gender(tiny_model) -> None:
    facts, gender = occupation_test_facts(tiny_model)
    assert len(facts) == len(gender) > 0
    occupation = tiny_model.relation_id(tiny_model.schema.occupation_relation)
    assert (facts[:, 1] == occupation).all()
    report = model_fairness(tiny_model, min_count=5, n_bootstrap=50)
    assert report.n_facts + report.n_dropped_gender == len(facts)
    assert set(report.by_group.index) == {"male", "female"}


def test_person_with_male_and_female_facts_is_other_as_in_occupation_groups(tiny_model) -> None:
    """One gender reader: a person with both values is 'other' in the fairness input, OTHER in the groups."""
    facts, gender = occupation_test_facts(tiny_model)
    male_in_training = occupation_groups(tiny_model).gender[facts[:, 0]] == Gender.MALE
    person = int(facts[male_in_training.nonzero()[0, 0], 0])
    schema = tiny_model.schema
    r_g, female = tiny_model.relation_id(schema.gender_relation), tiny_model.entity_id(schema.female)
    extra = torch.tensor([[person, r_g, female]], device=tiny_model.triples.device)
    both = replace(tiny_model, triples=torch.cat([tiny_model.triples, extra]))
    assert int(occupation_groups(both).gender[person]) == Gender.OTHER
    facts_both, gender_both = occupation_test_facts(both)
    torch.testing.assert_close(facts_both, facts)  # still a person with a gender fact
    mine = (facts_both[:, 0] == person).numpy()
    assert set(gender_both[mine]) == {"other"}
    assert (gender_both[~mine] == gender[~mine]).all()
    report = model_fairness(both, min_count=5, n_bootstrap=5)
    assert report.n_dropped_gender == int((gender_both == "other").sum())


def test_fairness_command(tiny_model, tmp_path) -> None:
    path = str(save_model(tiny_model, tmp_path))
    assert main(["fairness", "--models", path, "--min-count", "5", "--bootstrap", "20",
                 "--out", str(tmp_path / "f.csv")]) == 0
    frame = pd.read_csv(tmp_path / "f.csv")
    assert {"model", "class", "group", "class_name"} <= set(frame.columns)
    assert set(frame.model) == {"tiny-transe"}


def test_comparison_tables_read_the_reports() -> None:
    report = _hand_report(n_bootstrap=50, seed=1)
    reports = {"a": report, "b": report}
    gaps = gap_table(reports)
    assert list(gaps["model"]) == ["a", "b"] and (gaps["n_classes"] == 4).all()
    assert gaps.loc[0, "DPG"] == pytest.approx(report.by_model["DPG"])
    ci = report.confidence_intervals.loc[("model", "PPG")]
    assert gaps.loc[0, "PPG (95% CI)"] == f"{report.by_model['PPG']:.3f} [{ci['low']:.3f}, {ci['high']:.3f}]"
    groups = group_table({"a": report})
    assert list(groups["group"]) == ["male", "female"] and list(groups["n_facts"]) == [8, 5]
    assert groups.loc[1, "precision"] == pytest.approx(0.5)
    names = {"a": [f"occupation {i}" for i in range(20)]}
    classes = class_group_table({"a": report}, names)
    assert len(classes) == 2 * len(report.classes)
    assert set(classes["class_name"]) == {"occupation 10", "occupation 11", "occupation 14", "occupation 15", "OTHER"}

def test_the_default_min_count_is_the_papers_share_of_the_test_facts(tiny_model) -> None:
    assert default_min_count(PAPER_N_FACTS) == PAPER_MIN_COUNT == default_min_count(10**6)  # FB15k-237 and above
    assert default_min_count(49) == round(100 * 49 / 1311) == 4
    assert default_min_count(3) == 2  # never a class for every single fact
    facts, _ = occupation_test_facts(tiny_model)
    report = model_fairness(tiny_model, n_bootstrap=5)
    assert report.min_count == default_min_count(len(facts)) < PAPER_MIN_COUNT
    assert len([c for c in report.classes if c != OTHER]) >= 2  # the paper's 100 would pool all into OTHER
