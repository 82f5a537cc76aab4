"""LiSSA and conjugate gradients over the objective's Hessian (kgbias_core.influence.iterative): the
Hessian-vector product against finite differences, the solvers against each other and against retraining."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from kgbias_core.data.synthetic import SyntheticConfig, generate_people_graph
from kgbias_core.embeddings.config import TrainConfig
from kgbias_core.embeddings.objective import negatives_of, transe_objective
from kgbias_core.embeddings.training import train_model
from kgbias_core.influence.closed_form import influence_context
from kgbias_core.influence.iterative import (
    conjugate_gradient_solve,
    group_bias_rhs,
    influence_from_solution,
    lissa_solve,
    objective_hvp,
)
from kgbias_core.influence.retraining_check import masked_retrain_bias, removal_set

from .conftest import occupation_with_both, small_distance_model


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


# --- every distance: the exact solve's Hessian and its gradients are the model's own psi's ------------------------
@pytest.fixture(scope="module", params=["squared_l2", "l2", "l1", "pseudo_huber"])
def distance_model(request):
    """The small graph trained with each distance and two negatives, in double precision (finite differences)."""
    return small_distance_model(request.param, negatives=2)


def test_the_hessian_vector_product_is_that_of_the_models_own_distance(distance_model) -> None:
    """H v against finite differences of grad J with the model's psi: before 2026-12-02 it was squared L2's H at
    any model's rows, so the exact solve of a pseudo-Huber or L1 model inverted another objective's Hessian."""
    model = distance_model
    E, R = model.entity_embeddings, model.relation_embeddings
    generator = torch.Generator().manual_seed(0)
    v = (torch.randn(E.shape, generator=generator, dtype=E.dtype), torch.randn(R.shape, generator=generator,
                                                                                dtype=R.dtype))

    def gradient(shift: float):
        e = (E + shift * v[0]).requires_grad_(True)
        r = (R + shift * v[1]).requires_grad_(True)
        loss = transe_objective(entities=e, relations=r, triples=model.triples, negatives=model.frozen_negatives,
                                margin=model.config.margin, l2=model.config.l2, distance=model.config.distance)
        return torch.autograd.grad(loss, (e, r))

    eps = 1e-7
    plus, minus = gradient(eps), gradient(-eps)
    for exact, p, m in zip(objective_hvp(model)(v), plus, minus, strict=True):
        assert torch.allclose(exact, (p - m) / (2 * eps), rtol=1e-4, atol=1e-4)


def test_influence_from_a_solution_is_s_dot_the_gradient_of_each_triples_loss(distance_model) -> None:
    """delta_z = s . grad L(z) against autograd's gradient of each training triple's own loss (its K negatives, the
    model's psi), for an arbitrary s: the gradient is psi'(u), not squared L2's 2u, for every distance."""
    model = distance_model
    context = influence_context(model)
    E, R = model.entity_embeddings, model.relation_embeddings
    generator = torch.Generator().manual_seed(1)
    s = (torch.randn(E.shape, generator=generator, dtype=E.dtype), torch.randn(R.shape, generator=generator,
                                                                                dtype=R.dtype))
    influence = influence_from_solution(context, model, s)
    n = model.triples.shape[0]
    for i in range(0, n, max(1, n // 40)):  # 40 triples spread over the table
        e, r = E.detach().requires_grad_(True), R.detach().requires_grad_(True)
        loss = transe_objective(entities=e, relations=r, triples=model.triples[i:i + 1],
                                negatives=negatives_of(model.frozen_negatives, torch.tensor([i]), n),
                                margin=model.config.margin, l2=0.0, distance=model.config.distance)
        g = torch.autograd.grad(loss, (e, r))
        expected = float((g[0] * s[0]).sum() + (g[1] * s[1]).sum())
        assert float(influence[i]) == pytest.approx(expected, rel=1e-6, abs=1e-9), i


def test_lanczos_stops_where_the_hessian_is_a_multiple_of_the_identity_in_single_precision() -> None:
    """An L1 model's H is l2 I off its kinks (|x|'' = 0): its extremes are l2 and spectral lambda is eps x l2. Its
    float32 products leave ~1e-6 of round-off after one Lanczos step, which is no new direction (before
    2026-12-02 Lanczos went on from it to -9,833 and +9,853 on the synthetic graph, lambda 19,764)."""
    from kgbias_core.influence.prediction import CONDITION_EPS, hessian_extremes, spectral_damping

    graph = generate_people_graph(SyntheticConfig(n_persons=40, seed=5))
    model = train_model(graph, TrainConfig(dim=4, epochs=10, batch_size=64, lr=1e-2, l2=1.0, seed=3, distance="l1"),
                        name="small", device=torch.device("cpu"))
    assert model.entity_embeddings.dtype == torch.float32
    low, high = hessian_extremes(model)
    assert low == pytest.approx(model.config.l2, rel=1e-4) and high == pytest.approx(model.config.l2, rel=1e-4)
    assert spectral_damping(model) == pytest.approx(CONDITION_EPS * model.config.l2, rel=1e-3)
