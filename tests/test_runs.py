"""Judging a what-if: bias change of every occupation, link prediction, the cached noise band."""

from __future__ import annotations

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embeddings.store import load_result, save_model
from kgbias_core.evaluation.link_prediction import link_prediction
from kgbias_core.whatif.runs import bias_change, noise_band


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
