"""Judging a what-if: bias change of every occupation, link prediction, the cached noise band."""

from __future__ import annotations

import pandas as pd
import pytest

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embeddings.store import load_result, save_model
from kgbias_core.evaluation.link_prediction import link_prediction
from kgbias_core.whatif.runs import bias_change, noise_band, noise_spread, random_baseline


def test_comparison_link_prediction_and_cached_noise_band(tiny_model, tmp_path) -> None:
    path = save_model(tiny_model, tmp_path)
    metrics = link_prediction(tiny_model)
    occupation_metrics = link_prediction(tiny_model, occupation_only=True)
    assert 0 < metrics["mrr"] <= 1 and 0 < occupation_metrics["hits@10"] <= 1
    assert occupation_metrics["n"] < metrics["n"]
    band = noise_band(tiny_model, model_dir=path, seeds=(11,))
    assert (band["spread"].dropna() >= 0).all() and band["spread"].max() > 0
    assert load_result(path, "noise_band", params={"seeds": [11]}) is not None
    assert load_result(path, "noise_band", params={"seeds": [12]}) is None  # other params: recompute
    analysis = ModelAnalysis(tiny_model)
    same = bias_change(analysis, analysis)
    assert (same["change"].dropna() == 0).all()


def test_noise_spread_and_random_baseline_read_the_stored_tables() -> None:
    band = pd.DataFrame({"occupation": ["nurse", "pilot"], "spread": [0.02, float("nan")]})
    assert noise_spread(band, "nurse") == 0.02
    assert noise_spread(band, "judge") is None and noise_spread(None, "nurse") is None
    curve = pd.DataFrame({"strategy": ["IF-REMOVE", "Random-REMOVE", "IF-REMOVE", "Random-REMOVE", "Random-REMOVE"],
                          "k": [0, 0, 20, 20, 50], "group_bias": [0.3, 0.3, 0.1, 0.29, 0.31]})
    k, change = random_baseline(curve, k=40)
    assert k == 50 and change == pytest.approx(0.01)  # the nearest random k
    assert random_baseline(curve, k=0) is None and random_baseline(None, k=5) is None
    assert random_baseline(curve[curve["strategy"] == "IF-REMOVE"], k=5) is None
