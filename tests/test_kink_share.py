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
    # grad J by hand (squared L2, K = 1): l2 theta, and for each active term 2u at h and r, -2u at t, the negative's
    # u' with the opposite signs; not autograd, which the script uses
    heads, rels, tails = tiny_model.triples.T
    nheads, nrels, ntails = tiny_model.frozen_negatives.T
    u, v = e[heads] + r[rels] - e[tails], e[nheads] + r[nrels] - e[ntails]
    on = (slack > 0).unsqueeze(1).to(u.dtype)
    grad_e = tiny_model.config.l2 * e.clone()
    grad_r = tiny_model.config.l2 * r.clone()
    for rows, table, sign, vector in ((heads, grad_e, 2, u), (tails, grad_e, -2, u), (rels, grad_r, 2, u),
                                      (nheads, grad_e, -2, v), (ntails, grad_e, 2, v), (nrels, grad_r, -2, v)):
        table.index_add_(0, rows, sign * on * vector)
    expected = float((grad_e.pow(2).sum() + grad_r.pow(2).sum()).sqrt())
    assert row["grad_at_optimum"] == pytest.approx(expected, rel=1e-3)
    assert row["grad_of_edit"] > 0
    assert row["grad_ratio"] == pytest.approx(row["grad_at_optimum"] / row["grad_of_edit"])
    assert row["audit_ratio"] != row["audit_ratio"]  # no audit stored: NaN, not a made-up ratio
