"""Accuracy against disparity (issue 28): MRR from the cached link prediction, mean |B_gr| by a naive loop."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from kgbias_core.accuracy_disparity import accuracy_disparity_table, mean_abs_group_bias
from kgbias_core.analysis import ModelAnalysis
from kgbias_core.evaluation.link_prediction import cached_link_prediction

from .conftest import naive_group_bias, naive_groups


def test_mean_abs_group_bias_over_the_large_enough_occupations_matches_a_naive_loop(tiny_model) -> None:
    analysis = ModelAnalysis(tiny_model)
    groups, _ = naive_groups(tiny_model)
    large = [o for o, (men, women) in groups.items() if len(men) >= 5 and len(women) >= 5]
    value, n = mean_abs_group_bias(analysis, minimum=5)
    assert n == len(large) > 0
    assert value == pytest.approx(sum(abs(naive_group_bias(tiny_model, o)) for o in large) / len(large), rel=1e-4)


def test_every_model_is_a_row_with_its_mrr_and_kind(tiny_model, tmp_path) -> None:
    from kgbias_core.embeddings.store import save_model

    path = save_model(tiny_model, tmp_path)
    prediction = cached_link_prediction(path)
    run = replace(tiny_model, name="run", edit={"kind": "remove", "strategy": "if-remove k=5", "occupation": "nurse"})
    table = accuracy_disparity_table({"tiny": ModelAnalysis(tiny_model), "run": ModelAnalysis(run)},
                                     {"tiny": prediction, "run": None})
    tiny, what_if = table.set_index("model").loc["tiny"], table.set_index("model").loc["run"]
    assert tiny["kind"] == "base" and what_if["kind"] == "what-if" and what_if["edit"] == "if-remove k=5"
    both = prediction[prediction["side"] == "both"].set_index("queries")  # heads and tails pooled
    assert tiny["mrr"] == pytest.approx(float(both.loc["all", "mrr"]))
    assert tiny["occupation_mrr"] == pytest.approx(float(both.loc["occupation", "mrr"]))
    assert math.isnan(what_if["mrr"])  # not computed yet: shown as missing, never as 0
