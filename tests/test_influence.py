"""Influence of training triples on B_gr: against autograd, and against actual retraining."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from kgbias_core.embeddings.training import train_transe
from kgbias_core.influence.closed_form import (
    all_triple_influences,
    debiasing_removal,
    group_bias_gradient,
    influence_context,
    predicted_change,
    triple_influence,
)
from kgbias_core.measures.group_bias import group_bias


def occupation_with_both(context, minimum: int = 5) -> int:
    groups = context.groups
    ok = ((groups.n_male >= minimum) & (groups.n_female >= minimum)).nonzero().squeeze(-1)
    return int(ok[torch.argmax(groups.n_female[ok])])


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
        (h, r, t), (h2, _, t2) = tiny_model.triples[i].tolist(), tiny_model.negatives[i].tolist()
        loss = torch.relu(
            tiny_model.config.margin + ((E[h] + R[r] - E[t]) ** 2).sum() - ((E[h2] + R[r] - E[t2]) ** 2).sum()
        )
        (grad_l,) = torch.autograd.grad(loss, E)
        expected = float((grad_b * grad_l / context.alpha[:, None]).sum())
        assert float(influence[i]) == pytest.approx(expected, rel=1e-4, abs=1e-6)


def test_all_occupations_table_equals_one_by_one(tiny_model) -> None:
    context = influence_context(tiny_model)
    rows, table = all_triple_influences(context)
    dense = table.to_dense()
    for row, index in enumerate(rows.tolist()):
        assert torch.allclose(dense[row], triple_influence(context, index))


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


def test_hessian_vector_product_equals_finite_differences(tiny_model) -> None:
    from kgbias_core.influence.iterative import objective_hvp

    E, R = tiny_model.entity_embeddings.double(), tiny_model.relation_embeddings.double()
    model = replace(tiny_model, weights={"entity_embeddings": E, "relation_embeddings": R})
    generator = torch.Generator().manual_seed(0)
    v = (torch.randn(E.shape, generator=generator, dtype=torch.float64),
         torch.randn(R.shape, generator=generator, dtype=torch.float64))

    def gradient(shift: float):
        e = (E + shift * v[0]).requires_grad_(True)
        r = (R + shift * v[1]).requires_grad_(True)
        t, n = model.triples, model.negatives
        psi = ((e[t[:, 0]] + r[t[:, 1]] - e[t[:, 2]]) ** 2).sum(-1)
        psi_n = ((e[n[:, 0]] + r[n[:, 1]] - e[n[:, 2]]) ** 2).sum(-1)
        loss = torch.relu(model.config.margin + psi - psi_n).sum()
        loss = loss + model.config.l2 / 2 * ((e ** 2).sum() + (r ** 2).sum())
        return torch.autograd.grad(loss, (e, r))

    eps = 1e-8  # small enough that no margin crosses its kink
    plus, minus = gradient(eps), gradient(-eps)
    h = objective_hvp(model)(v)
    for exact, p, m in zip(h, plus, minus, strict=True):
        assert torch.allclose(exact, (p - m) / (2 * eps), rtol=1e-5, atol=1e-5)


def test_cg_solves_the_damped_system_lissa_approximates_it_and_both_predict_retraining(tiny_model) -> None:
    from kgbias_core.influence.iterative import (
        conjugate_gradient_solve,
        group_bias_rhs,
        influence_from_solution,
        lissa_solve,
        objective_hvp,
    )
    from kgbias_core.influence.retraining_check import masked_retrain_bias, removal_set

    context = influence_context(tiny_model)
    index = occupation_with_both(context)
    rhs = group_bias_rhs(context, index)
    damping = 10 * tiny_model.damping  # the full Hessian is indefinite: it needs more damping
    cg = conjugate_gradient_solve(tiny_model, rhs, damping=damping, iterations=300)
    applied = objective_hvp(tiny_model)(cg)
    residual = sum(float((a + damping * x - b).norm() ** 2) for a, x, b in zip(applied, cg, rhs, strict=True))
    assert residual ** 0.5 < 1e-3 * sum(float(b.norm() ** 2) for b in rhs) ** 0.5
    lissa = lissa_solve(tiny_model, rhs, damping=damping, depth=150, batch_size=4096, repeats=2)
    cosine = sum(float((a * b).sum()) for a, b in zip(cg, lissa, strict=True)) / (
        sum(float(a.norm() ** 2) for a in cg) ** 0.5 * sum(float(b.norm() ** 2) for b in lissa) ** 0.5
    )
    assert cosine > 0.95, cosine
    influence = influence_from_solution(context, tiny_model, cg)
    base = float(masked_retrain_bias(tiny_model, removed=None, groups=context.groups)[index])
    for kind in ("top", "bottom"):
        removed = removal_set(influence, kind=kind, k=10)
        actual = float(masked_retrain_bias(tiny_model, removed=removed, groups=context.groups)[index]) - base
        assert np.sign(actual) == np.sign(float(influence[removed].sum())), (kind, actual)


def test_calibrated_scale_matches_a_held_out_removal(tiny_model) -> None:
    from kgbias_core.influence.retraining_check import calibrate_influence_scale, masked_retrain_bias

    scale = calibrate_influence_scale(tiny_model, n_occupations=1)
    assert 0 < scale < 2
    context = influence_context(tiny_model)
    index = occupation_with_both(context)
    influence = triple_influence(context, index)
    removed = torch.topk(influence, 8).indices  # a set the calibration did not use (k differs)
    base = float(masked_retrain_bias(tiny_model, removed=None, groups=context.groups)[index])
    actual = float(masked_retrain_bias(tiny_model, removed=removed, groups=context.groups)[index]) - base
    predicted = scale * float(influence[removed].sum())
    assert abs(predicted - actual) < 0.5 * abs(actual)
