"""Influence against masked retraining (kgbias_core.influence.retraining_check): removal sets, the accuracy
summary against hand computations (the calibration over occupations: test_calibration.py)."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch

from kgbias_core.influence.retraining_check import (
    default_ks,
    removal_set,
    summarize_accuracy,
)


def test_removal_sets_are_the_extremes_or_a_seeded_draw() -> None:
    influence = torch.tensor([0.3, -0.5, 0.0, 0.9, -0.1])
    assert removal_set(influence, kind="top", k=2).tolist() == [3, 0]
    assert removal_set(influence, kind="bottom", k=2).tolist() == [1, 4]
    random = removal_set(influence, kind="random", k=3, seed=4)
    assert torch.equal(random, removal_set(influence, kind="random", k=3, seed=4))
    assert len(set(random.tolist())) == 3 and set(random.tolist()) <= set(range(5))


def test_default_ks_are_growing_shares_of_the_moving_triples() -> None:
    assert default_ks(1000) == [20, 80, 320]
    assert default_ks(10) == [1, 1, 3]  # at least one triple each


def test_accuracy_summary_equals_hand_computation() -> None:
    runs = pd.DataFrame({"kind": ["top", "bottom", "random", "random"],
                         "predicted": [1.0, -2.0, 0.1, -0.1], "actual": [2.0, -3.0, 0.3, -0.4]})
    summary = summarize_accuracy(runs)
    x, y = [1.0, -2.0, 0.1, -0.1], [2.0, -3.0, 0.3, -0.4]
    mx, my = sum(x) / 4, sum(y) / 4
    r = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True)) / math.sqrt(
        sum((a - mx) ** 2 for a in x) * sum((b - my) ** 2 for b in y))
    assert summary.r == pytest.approx(r)
    assert summary.noise == pytest.approx(0.4)  # the largest |actual| of a random set
    assert summary.scale == pytest.approx((1 * 2 + 2 * 3) / (1 + 4))  # least squares through 0, targeted sets
    assert summary.sign_agreement == 1.0
