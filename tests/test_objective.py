"""The TransE objective stated once: against a naive loop, PyKEEN's TransE, and the training loop."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from kgbias_core.embeddings.objective import margin_loss, transe_distance, transe_objective
from kgbias_core.embeddings.training import initial_embeddings, train_transe, transe_module

TRIPLES = torch.tensor([[0, 0, 1], [2, 1, 3], [4, 0, 0], [1, 1, 2], [3, 0, 4]])
NEGATIVES = torch.tensor([[0, 0, 3], [2, 1, 1], [2, 0, 0], [4, 1, 2], [3, 0, 1]])
MARGIN, L2 = 2.0, 0.5


def embeddings(dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return (torch.randn(5, 4, generator=generator, dtype=dtype), torch.randn(2, 4, generator=generator, dtype=dtype))


def naive_objective(E, R, triples, negatives, weights) -> float:
    """J written out triple by triple and coordinate by coordinate (METHODS §2-3)."""
    total = 0.0
    for (h, r, t), (h2, r2, t2), w in zip(triples.tolist(), negatives.tolist(), weights.tolist(), strict=True):
        psi = sum((E[h, i] + R[r, i] - E[t, i]).item() ** 2 for i in range(E.shape[1]))
        psi_neg = sum((E[h2, i] + R[r2, i] - E[t2, i]).item() ** 2 for i in range(E.shape[1]))
        total += w * max(MARGIN + psi - psi_neg, 0.0)
    return total + L2 / 2 * (sum(x * x for x in E.flatten().tolist()) + sum(x * x for x in R.flatten().tolist()))


def test_distance_is_the_squared_translation_error_and_pykeen_transe_score() -> None:
    E, R = embeddings()
    psi = transe_distance(entities=E, relations=R, triples=TRIPLES)
    for row, (h, r, t) in enumerate(TRIPLES.tolist()):
        assert psi[row].item() == pytest.approx(float(((E[h] + R[r] - E[t]) ** 2).sum()), rel=1e-6)
    module = transe_module(entities=E, relations=R, device=torch.device("cpu"))
    assert torch.equal(psi, -module.score_hrt(TRIPLES).squeeze(-1).detach())


def test_objective_equals_a_naive_loop_over_triples() -> None:
    E, R = embeddings(torch.float64)
    weights = torch.tensor([1.0, 0.0, 2.0, 1.0, 0.5], dtype=torch.float64)
    for w in (torch.ones(5, dtype=torch.float64), weights):
        value = transe_objective(entities=E, relations=R, triples=TRIPLES, negatives=NEGATIVES, margin=MARGIN,
                                 l2=L2, weights=w)
        assert value.item() == pytest.approx(naive_objective(E, R, TRIPLES, NEGATIVES, w), rel=1e-12)


def test_a_zero_weight_is_the_triple_left_out() -> None:
    E, R = embeddings(torch.float64)
    weights = torch.tensor([1.0, 0.0, 1.0, 0.0, 1.0], dtype=torch.float64)
    masked = transe_objective(entities=E, relations=R, triples=TRIPLES, negatives=NEGATIVES, margin=MARGIN, l2=L2,
                              weights=weights)
    keep = weights > 0
    rest = transe_objective(entities=E, relations=R, triples=TRIPLES[keep], negatives=NEGATIVES[keep],
                            margin=MARGIN, l2=L2)
    assert masked.item() == pytest.approx(rest.item(), rel=1e-12)


def test_inactive_margins_contribute_nothing() -> None:
    distance = torch.tensor([0.5, 3.0, 1.0])
    negative = torch.tensor([4.0, 0.5, 1.0])
    loss = margin_loss(distance=distance, negative_distance=negative, margin=1.0, weights=torch.tensor([1.0, 2.0, 1.0]))
    assert loss.tolist() == [0.0, 7.0, 1.0]


def test_the_training_loss_is_the_objectives_margin_part(tiny_model) -> None:
    """At learning rate 0 the weights stay at the initialisation: an epoch's mean loss is J's margin part / |G|."""
    config = replace(tiny_model.config, epochs=1, lr=0.0, lr_min=0.0)
    result = train_transe(triples=tiny_model.triples, negatives=tiny_model.negatives, n_entities=tiny_model.n_entities,
                          n_relations=tiny_model.n_relations, config=config, device=torch.device("cpu"))
    E, R = initial_embeddings(n_entities=tiny_model.n_entities, n_relations=tiny_model.n_relations,
                              dim=config.dim, seed=config.seed)
    assert torch.equal(result.entity_embeddings, E)
    margin_part = transe_objective(entities=E, relations=R, triples=tiny_model.triples,
                                   negatives=tiny_model.negatives, margin=config.margin, l2=0.0)
    assert result.losses[0] == pytest.approx(margin_part.item() / tiny_model.triples.shape[0], rel=1e-5)
