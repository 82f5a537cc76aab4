"""Closed-form influence of training triples on B_gr (kgbias_core.influence.closed_form): against autograd
and against actual retraining."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from kgbias_core.embeddings.config import PSEUDO_HUBER_DELTA
from kgbias_core.embeddings.objective import transe_objective
from kgbias_core.embeddings.training import train_transe
from kgbias_core.errors import EMPTY_GROUP, MeasureError
from kgbias_core.influence import closed_form
from kgbias_core.influence.closed_form import (
    all_triple_influences,
    debiasing_removal,
    group_bias_gradient,
    influence_context,
    predicted_change,
    triple_influence,
)
from kgbias_core.measures.group_bias import group_bias

from .conftest import occupation_with_both


def test_group_bias_gradient_equals_autograd(tiny_model) -> None:
    context = influence_context(tiny_model)
    index = occupation_with_both(context)
    E = tiny_model.entity_embeddings.clone().requires_grad_(True)
    b = group_bias(entity_embeddings=E, relation_embeddings=tiny_model.relation_embeddings, groups=context.groups)
    (expected,) = torch.autograd.grad(b[index], E)
    assert torch.allclose(group_bias_gradient(context, index), expected, atol=1e-5)


def test_triple_influence_equals_autograd_formula(tiny_model) -> None:
    """delta_z = sum_e grad_e B_gr . grad_e L(z) / alpha_e, with grad L(z) from autograd (Du Eq. 3)."""
    context = influence_context(tiny_model)
    index = occupation_with_both(context)
    influence = triple_influence(context, index)
    grad_b = group_bias_gradient(context, index)
    R = tiny_model.relation_embeddings
    generator = torch.Generator().manual_seed(0)
    picks = torch.cat([
        torch.topk(influence.abs(), 30).indices,
        torch.randint(tiny_model.triples.shape[0], (30,), generator=generator),
    ])
    for i in picks.tolist():
        E = tiny_model.entity_embeddings.clone().requires_grad_(True)
        loss = transe_objective(entities=E, relations=R, triples=tiny_model.triples[i : i + 1],
                                negatives=tiny_model.negatives[i : i + 1], margin=tiny_model.config.margin, l2=0.0)
        (grad_l,) = torch.autograd.grad(loss, E)
        expected = float((grad_b * grad_l / context.alpha[:, None]).sum())
        assert float(influence[i]) == pytest.approx(expected, rel=1e-4, abs=1e-6)


#: psi of a residual v, written out independently of kgbias's objective module.
PSI = {"l1": lambda v: v.abs().sum(-1), "l2": lambda v: (v**2).sum(-1).sqrt(), "squared_l2": lambda v: (v**2).sum(-1),
       "pseudo_huber": lambda v: ((v**2 + PSEUDO_HUBER_DELTA**2).sqrt() - PSEUDO_HUBER_DELTA).sum(-1)}


@pytest.mark.parametrize("distance", ["l1", "l2", "pseudo_huber"])
def test_triple_influence_with_an_l1_or_l2_distance_equals_autograd(tiny_model, distance: str) -> None:
    """An imported model's own distance, or kgbias's pseudo-Huber: grad B_gr and grad L(z) of
    [gamma + psi(z) - psi(z')]_+ by autograd, with psi = ||.||_1, ||.||_2 or sum_i sqrt(v_i^2 + delta^2) - delta,
    against the closed form (same alpha, Du Eq. 3)."""
    model = replace(tiny_model, config=replace(tiny_model.config, distance=distance, margin=1.0))
    context = influence_context(model)
    index = occupation_with_both(context)
    influence = triple_influence(context, index)
    E0, R = model.entity_embeddings, model.relation_embeddings
    E = E0.clone().requires_grad_(True)
    b = group_bias(entity_embeddings=E, relation_embeddings=R, groups=context.groups, distance=distance)
    (grad_b,) = torch.autograd.grad(b[index], E)
    psi = PSI[distance]
    n = model.triples.shape[0]
    margins = model.config.margin + psi(E0[model.triples[:, 0]] + R[model.triples[:, 1]] - E0[model.triples[:, 2]]) \
        - psi(E0[model.negatives[:, 0]] + R[model.negatives[:, 1]] - E0[model.negatives[:, 2]])
    assert 0 < int((margins > 0).sum()) < n  # both active and inactive margins are checked
    picks = torch.cat([torch.topk(influence.abs(), 30).indices,
                       torch.randint(n, (30,), generator=torch.Generator().manual_seed(0))])
    for i in picks.tolist():
        E = E0.clone().requires_grad_(True)
        (h, r, t), (h2, _, t2) = model.triples[i].tolist(), model.negatives[i].tolist()
        loss = torch.relu(model.config.margin + psi(E[h] + R[r] - E[t]) - psi(E[h2] + R[r] - E[t2]))
        if float(loss.detach()) == 0:
            assert float(influence[i]) == 0  # an inactive margin has no influence
            continue
        (grad_l,) = torch.autograd.grad(loss, E)
        expected = float((grad_b * grad_l / context.alpha[:, None]).sum())
        assert float(influence[i]) == pytest.approx(expected, rel=1e-4, abs=1e-6)
    assert influence.abs().max() > 0


def test_all_occupations_table_equals_one_by_one(tiny_model) -> None:
    context = influence_context(tiny_model)
    rows, table = all_triple_influences(context)
    dense = table.to_dense()
    for row, index in enumerate(rows.tolist()):
        assert torch.allclose(dense[row], triple_influence(context, index))


def test_influence_on_an_occupation_with_an_empty_group_names_it(tiny_model) -> None:
    context = influence_context(tiny_model)
    groups = context.groups
    index = int(((groups.n_female == 0) | (groups.n_male == 0)).nonzero()[0, 0])
    expected = EMPTY_GROUP.format(occupation=groups.labels[index], n_male=int(groups.n_male[index]),
                                  n_female=int(groups.n_female[index]), measure="influence on B_gr")
    with pytest.raises(MeasureError) as error:
        triple_influence(context, index)
    assert str(error.value) == expected


def test_debiasing_removal_moves_towards_zero() -> None:
    influence = torch.tensor([0.5, -0.2, 0.1, -0.7, 0.0])
    assert debiasing_removal(influence, bias=0.3, k=2).tolist() == [3, 1]
    assert debiasing_removal(influence, bias=-0.3, k=5).tolist() == [0, 2]  # only helpful triples
    assert predicted_change(influence, torch.tensor([0, 3]), scale=2.0) == pytest.approx(-0.4)


@pytest.mark.slow
def test_influence_tracks_masked_retraining(tiny_model) -> None:
    """Remove the top-k, bottom-k and k random triples, retrain masked from the same seed (METHODS §9)."""
    context = influence_context(tiny_model)
    index = occupation_with_both(context)
    influence = triple_influence(context, index)
    config = tiny_model.config
    n = tiny_model.triples.shape[0]

    def retrained_bias(removed: torch.Tensor | None) -> float:
        weights = torch.ones(n)
        if removed is not None:
            weights[removed] = 0
        result = train_transe(
            triples=tiny_model.triples, negatives=tiny_model.negatives, n_entities=tiny_model.n_entities,
            n_relations=tiny_model.n_relations, config=config, weights=weights, device=torch.device("cpu"),
        )
        return float(group_bias(entity_embeddings=result.entity_embeddings,
                                relation_embeddings=result.relation_embeddings, groups=context.groups)[index])

    base = float(group_bias(entity_embeddings=tiny_model.entity_embeddings,
                            relation_embeddings=tiny_model.relation_embeddings, groups=context.groups)[index])
    # An unedited masked retrain reproduces the base model exactly (same permutation, same negatives).
    assert retrained_bias(None) == pytest.approx(base, abs=1e-6)
    predicted, actual = [], []
    generator = torch.Generator().manual_seed(1)
    for k in (3, 10, 30):
        for removed in (torch.topk(influence, k).indices, torch.topk(-influence, k).indices,
                        torch.randperm(n, generator=generator)[:k]):
            predicted.append(float(influence[removed].sum()))
            actual.append(retrained_bias(removed) - base)
    predicted, actual = np.array(predicted), np.array(actual)
    r = np.corrcoef(predicted, actual)[0, 1]
    assert r > 0.9, (r, predicted, actual)
    targeted = np.abs(predicted) > 1e-3
    assert (np.sign(predicted[targeted]) == np.sign(actual[targeted])).all()


def test_active_margins_are_the_float64_hinge_test_inside_and_outside_the_kink_band(
    tiny_model, monkeypatch
) -> None:
    E, R = tiny_model.entity_embeddings.double(), tiny_model.relation_embeddings.double()
    psi = [(E[t[:, 0]] + R[t[:, 1]] - E[t[:, 2]]).pow(2).sum(-1) for t in (tiny_model.triples, tiny_model.negatives)]
    expected = tiny_model.config.margin + psi[0] - psi[1] > 0  # brute force, every row in float64
    args = dict(entities=tiny_model.entity_embeddings, relations=tiny_model.relation_embeddings,
                triples=tiny_model.triples, negatives=tiny_model.negatives, margin=tiny_model.config.margin)
    assert torch.equal(closed_form.active_margins(**args), expected)
    # Every row in the band, and a float32 pass that is wrong everywhere, in blocks of 7: the float64
    # pass alone must give every row's answer.
    monkeypatch.setattr(closed_form, "KINK_BAND", 1e9)
    monkeypatch.setattr(closed_form, "MARGIN_BLOCK", 7)
    generator = torch.Generator().manual_seed(0)
    monkeypatch.setattr(closed_form, "_block_distances",
                        lambda entities, relations, block, buffers, distance: 10 * torch.rand(block.shape[0],
                                                                                             generator=generator))
    assert torch.equal(closed_form.active_margins(**args), expected)
