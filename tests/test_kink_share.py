"""experiments/whatif_accuracy/kink_share.py (issue 25): the share of margin terms at their kink, and the gradient
left at the trained theta, against the core's active-term test and a loop over the terms."""

from __future__ import annotations

import pytest
import torch

from kgbias_core.embeddings.store import save_model
from kgbias_core.influence.prediction import active_terms
from tests.conftest import load_script


def test_kink_shares_and_the_residual_gradient(tiny_model, tmp_path) -> None:
    kinks = load_script("experiments/whatif_accuracy/kink_share.py", "kink_share")
    save_model(tiny_model, tmp_path)
    row = kinks.kink_row(tmp_path / tiny_model.name)
    assert row["active"] == pytest.approx(float(active_terms(tiny_model).float().mean()), abs=1e-3)
    e, r, m = tiny_model.entity_embeddings, tiny_model.relation_embeddings, tiny_model.config.margin
    slack = []
    for (h, rel, t), (h2, rel2, t2) in zip(tiny_model.triples.tolist(), tiny_model.frozen_negatives.tolist(),
                                            strict=True):  # K = 1: one negative per triple, a plain loop
        slack.append(m + float(((e[h] + r[rel] - e[t]) ** 2).sum()) - float(((e[h2] + r[rel2] - e[t2]) ** 2).sum()))
    slack = torch.tensor(slack)
    for eps in kinks.EPSILONS:
        assert row[f"inactive_within_{eps}"] == pytest.approx(float(((slack <= 0) & (slack > -eps * m)).float().mean()),
                                                             abs=1e-3)
        assert row[f"active_within_{eps}"] <= row["active"]
    assert row["grad_at_optimum"] > 0 and row["grad_of_edit"] > 0
    assert row["grad_ratio"] == pytest.approx(row["grad_at_optimum"] / row["grad_of_edit"])
    assert row["audit_ratio"] != row["audit_ratio"]  # no audit stored: NaN, not a made-up ratio
