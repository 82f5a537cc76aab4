"""Frozen negatives whose entity is drawn by training degree^0.75 (issue 24, part 2: better models, influence still
exact): the weights against a brute-force count, the draw's frequencies, its extension with K and an Add's negatives.
Elsewhere: the closed form against autograd (tests/test_multiple_negatives.py); the fingerprint, masked retraining
bit for bit, re-drawn negatives, the store's check and ``kgbias train --negative-entities`` (tests/test_corruption.py,
beside ``--corruption``'s)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest
import torch

from kgbias_core.embeddings.config import DEGREE_EXPONENT
from kgbias_core.embeddings.objective import negatives_of
from kgbias_core.embeddings.training import degree_weights, frozen_negatives, negative_draw
from kgbias_core.whatif.edits import _ADDED_NEGATIVES_STREAM, add_edit, addition, retrain

from .conftest import DEGREE_K as K


def test_the_weights_are_a_brute_force_count_to_the_power() -> None:
    triples = torch.tensor([[0, 0, 1], [0, 1, 2], [3, 0, 0], [1, 1, 1]])
    counts = Counter()
    for h, _, t in triples.tolist():
        counts[h] += 1
        counts[t] += 1
    weights = degree_weights(triples, n_entities=6)  # entities 4 and 5 are in no triple
    assert weights.tolist() == pytest.approx([counts[e] ** DEGREE_EXPONENT for e in range(6)])
    assert weights[4] == weights[5] == 0


def test_a_degree_draw_follows_its_weights_and_extends_with_k() -> None:
    triples = torch.tensor([[0, 0, 5], [5, 1, 0]] * 4000)  # entities of weight 0: every replacement differs
    n = triples.shape[0]
    weights = torch.tensor([0.0, 1.0, 2.0, 4.0, 8.0, 0.0], dtype=torch.float64)
    four = frozen_negatives(triples, n_entities=6, seed=1, count=4, entity_weights=weights)
    assert torch.equal(four, frozen_negatives(triples, n_entities=6, seed=1, count=4, entity_weights=weights))
    assert torch.equal(four[: 2 * n], frozen_negatives(triples, n_entities=6, seed=1, count=2, entity_weights=weights))
    assert not torch.equal(four, frozen_negatives(triples, n_entities=6, seed=1, count=4))  # not the uniform draw
    by_rank = four.view(4, n, 3)
    kept_head, kept_tail = by_rank[:, :, 0] == triples[:, 0], by_rank[:, :, 2] == triples[:, 2]
    assert (kept_head ^ kept_tail).all() and (by_rank[:, :, 1] == triples[:, 1]).all()  # one side replaced
    assert (~kept_head).float().mean().item() == pytest.approx(0.5, abs=0.01)  # the sides: half and half, as uniform
    share = torch.bincount(torch.where(kept_head, by_rank[:, :, 2], by_rank[:, :, 0]).reshape(-1),
                           minlength=6).double() / (4 * n)
    assert share[0] == share[5] == 0  # weight 0: never drawn
    assert share[1:5].tolist() == pytest.approx((weights[1:5] / weights.sum()).tolist(), abs=0.02)


def test_an_add_edits_negatives_follow_the_models_draw_and_never_name_a_dummy(degree_model) -> None:
    edit = add_edit(degree_model, "nurse", c=0.5)
    added = addition(degree_model, edit)
    n_entities = degree_model.n_entities + len(edit.added_entities)
    drawn = dict(n_entities=n_entities, seed=degree_model.config.seed, stream=_ADDED_NEGATIVES_STREAM, count=K)
    assert torch.equal(added.negatives, frozen_negatives(added.triples, **drawn, **negative_draw(
        degree_model.config, statistics=degree_model.triples, n_entities=n_entities,
        n_relations=degree_model.n_relations, triples=added.triples)))
    base = added.triples.repeat(K, 1)  # [K a, 3]: row j a + i is added triple i
    replaced = torch.cat([added.negatives[:, side][added.negatives[:, side] != base[:, side]] for side in (0, 2)])
    assert replaced.numel() > 0 and (replaced < degree_model.n_entities).all()  # a dummy has no training degree
    assert (base[:, [0, 2]] >= degree_model.n_entities).any()  # the dummies are in the added triples themselves
    # The retrain draws the same negatives for the added triples as the prediction does.
    quick = replace(degree_model, config=replace(degree_model.config, epochs=1))
    retrained = retrain(quick, edit, name="a")
    m = retrained.triples.shape[0]
    n = degree_model.triples.shape[0]
    assert torch.equal(negatives_of(retrained.negatives, torch.arange(n, m), m), added.negatives)
