"""LiSSA and conjugate gradients over the objective's Hessian (kgbias_core.influence.iterative): the
Hessian-vector product against finite differences, the solvers against each other and against retraining."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch

from kgbias_core.embeddings.objective import transe_objective
from kgbias_core.influence.closed_form import influence_context
from kgbias_core.influence.iterative import (
    conjugate_gradient_solve,
    group_bias_rhs,
    influence_from_solution,
    lissa_solve,
    objective_hvp,
)
from kgbias_core.influence.retraining_check import masked_retrain_bias, removal_set

from .conftest import occupation_with_both


def test_hessian_vector_product_equals_finite_differences_of_the_objective(tiny_model) -> None:
    E, R = tiny_model.entity_embeddings.double(), tiny_model.relation_embeddings.double()
    model = replace(tiny_model, weights={"entity_embeddings": E, "relation_embeddings": R})
    generator = torch.Generator().manual_seed(0)
    v = (torch.randn(E.shape, generator=generator, dtype=torch.float64),
         torch.randn(R.shape, generator=generator, dtype=torch.float64))

    def gradient(shift: float):
        e = (E + shift * v[0]).requires_grad_(True)
        r = (R + shift * v[1]).requires_grad_(True)
        loss = transe_objective(entities=e, relations=r, triples=model.triples, negatives=model.negatives,
                                margin=model.config.margin, l2=model.config.l2)
        return torch.autograd.grad(loss, (e, r))

    eps = 1e-8  # small enough that no margin crosses its kink
    plus, minus = gradient(eps), gradient(-eps)
    h = objective_hvp(model)(v)
    for exact, p, m in zip(h, plus, minus, strict=True):
        assert torch.allclose(exact, (p - m) / (2 * eps), rtol=1e-5, atol=1e-5)


def test_a_batch_hessian_vector_product_is_the_full_one_when_the_batch_is_everything(tiny_model) -> None:
    generator = torch.Generator().manual_seed(1)
    v = (torch.randn(tiny_model.entity_embeddings.shape, generator=generator),
         torch.randn(tiny_model.relation_embeddings.shape, generator=generator))
    everything = torch.arange(tiny_model.triples.shape[0])
    for full, batch in zip(objective_hvp(tiny_model)(v), objective_hvp(tiny_model, batch=everything)(v), strict=True):
        assert torch.allclose(full, batch, rtol=1e-5, atol=1e-4)


def test_cg_solves_the_damped_system_lissa_approximates_it_and_both_predict_retraining(tiny_model) -> None:
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
