"""The influence calibration (kgbias_core.influence.scale, .calibration): interval arithmetic by hand,
the choice of occupations, the fit and the leave-one-out loop against brute force, and the whole
calibration on the synthetic graph against independent masked retrains."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.errors import MeasureError
from kgbias_core.influence.calibration import (
    calibration_occupations,
    fit_calibration,
    leave_one_out,
)
from kgbias_core.influence.retraining_check import masked_retrain_bias, removal_set
from kgbias_core.influence.scale import Calibration, predict
from kgbias_core.tasks.calibration import calibrate

CALIBRATION = Calibration(scale=0.3, low=0.25, high=0.35, occupations=("a", "b"), per_occupation=(0.25, 0.35))


def test_a_calibrated_prediction_is_the_scales_range_whatever_the_sign() -> None:
    down = predict(-2.0, scale=0.3, calibration=CALIBRATION)
    assert (down.point, down.low, down.high) == pytest.approx((-0.6, -0.7, -0.5))
    up = predict(2.0, scale=0.3, calibration=CALIBRATION)
    assert (up.point, up.low, up.high) == pytest.approx((0.6, 0.5, 0.7))
    assert up.calibrated and up.has_interval and up.low <= up.point <= up.high
    assert "range +0.5000 to +0.7000" in up.summary()


def test_a_single_scale_has_no_interval_and_no_scale_has_no_size() -> None:
    single = predict(-2.0, scale=0.3)
    assert single.point == pytest.approx(-0.6) and not single.has_interval
    assert "no interval" in single.summary()
    bare = predict(-2.0, scale=None)
    assert not bare.calibrated and bare.point is None and bare.low is None
    assert bare.summary().startswith("uncalibrated") and "-2.0000" in bare.summary()


def test_calibration_round_trips_and_rejects_malformed_records() -> None:
    assert Calibration.from_dict(CALIBRATION.to_dict()) == CALIBRATION
    for bad, problem in (
        ([1, 2], "JSON object"),
        ({**CALIBRATION.to_dict(), "scale": "x"}, "finite numbers"),
        ({**CALIBRATION.to_dict(), "scale": 0.5}, "'low' <= 'scale' <= 'high'"),
        ({**CALIBRATION.to_dict(), "occupations": "a"}, "list of labels"),
        ({**CALIBRATION.to_dict(), "per_occupation": [0.3]}, "one finite number per occupation"),
    ):
        with pytest.raises(ValueError, match=problem):
            Calibration.from_dict(bad)


def _runs(slopes: dict[str, float], noise: float = 0.0) -> pd.DataFrame:
    rows, rng = [], np.random.default_rng(0)
    for label, slope in slopes.items():
        for kind, predicted in (("top", 1.0 + rng.random()), ("bottom", -1.0 - rng.random())):
            rows.append({"occupation": label, "name": label.upper(), "kind": kind, "k": 5, "predicted": predicted,
                         "actual": slope * predicted + noise * rng.standard_normal()})
    return pd.DataFrame(rows)


def test_fit_is_least_squares_through_the_origin_pooled_and_per_occupation() -> None:
    runs = _runs({"a": 0.2, "b": 0.3, "c": 0.5}, noise=0.05)
    calibration = fit_calibration(runs)
    per = {}
    for label, part in runs.groupby("occupation"):
        x, y = part["predicted"].to_numpy()[:, None], part["actual"].to_numpy()
        per[label] = float(np.linalg.lstsq(x, y, rcond=None)[0][0])
    x, y = runs["predicted"].to_numpy()[:, None], runs["actual"].to_numpy()
    assert calibration.scale == pytest.approx(float(np.linalg.lstsq(x, y, rcond=None)[0][0]))
    assert dict(zip(calibration.occupations, calibration.per_occupation, strict=True)) == pytest.approx(per)
    assert (calibration.low, calibration.high) == pytest.approx((min(per.values()), max(per.values())))


def test_leave_one_out_predicts_each_occupation_from_the_others_only() -> None:
    runs = _runs({"a": 0.2, "b": 0.3, "c": 0.5, "d": 0.35})
    held = leave_one_out(runs)
    assert len(held) == len(runs)
    for _, row in held.iterrows():
        others = [s for label, s in {"a": 0.2, "b": 0.3, "c": 0.5, "d": 0.35}.items() if label != row["occupation"]]
        ends = sorted((row["predicted"] * min(others), row["predicted"] * max(others)))
        assert (row["low"], row["high"]) == pytest.approx(ends)
        assert row["inside"] == (ends[0] - 1e-12 <= row["actual"] <= ends[1] + 1e-12)
    # b and d lie inside the others' range, a and c (the extremes) cannot
    assert held.groupby("occupation")["inside"].all().to_dict() == {"a": False, "b": True, "c": False, "d": True}
    with pytest.raises(MeasureError, match="at least 3 occupations"):
        leave_one_out(runs[runs["occupation"].isin(["a", "b"])])


def test_occupations_are_spread_over_bias_and_size(tiny_model) -> None:
    analysis = ModelAnalysis(tiny_model)
    groups, bias = analysis.groups, analysis.group_bias()
    chosen = calibration_occupations(groups, bias, n=4, min_each=1)
    assert len(set(chosen)) == 4
    smaller = torch.minimum(groups.n_male, groups.n_female)
    assert all(int(smaller[i]) >= 1 for i in chosen)
    eligible = sorted((i for i in range(len(groups.labels)) if int(smaller[i]) >= 1), key=lambda i: float(bias[i]))
    ranks = sorted(eligible.index(i) for i in chosen)
    assert ranks[0] < len(eligible) / 4 and ranks[-1] >= 3 * len(eligible) / 4  # both ends of the B_gr range
    with pytest.raises(MeasureError, match="at least 3 occupations"):
        calibration_occupations(groups, torch.full_like(bias, float("nan")), n=4)


def test_calibration_on_the_synthetic_graph_matches_independent_masked_retrains(tiny_model) -> None:
    calibration, runs = calibrate(tiny_model, n_occupations=4)
    assert len(calibration.occupations) == 4 and len(runs) == 8
    assert calibration.low <= calibration.scale <= calibration.high and calibration.low > 0
    analysis = ModelAnalysis(tiny_model)
    groups = analysis.groups
    row = runs.iloc[0]  # redo one run by hand
    index = groups.index(row["occupation"])
    removed = removal_set(analysis.influence(row["occupation"]), kind=row["kind"], k=int(row["k"]))
    base = masked_retrain_bias(tiny_model, removed=None, groups=groups)[index]
    after = masked_retrain_bias(tiny_model, removed=removed, groups=groups)[index]
    assert row["actual"] == pytest.approx(float(after - base), abs=1e-6)
    assert row["predicted"] == pytest.approx(float(analysis.influence(row["occupation"])[removed].sum()), rel=1e-5)
    held = leave_one_out(runs)
    assert held["inside"].dtype == bool and 0 <= held["inside"].mean() <= 1
    # the interval from the other occupations' scales has the retrained change's sign every time
    assert (np.sign(held["point"]) == np.sign(held["actual"])).all()
