"""The Newton-step what-if (kgbias_core.influence.prediction): the CG solve, the spectrum, the exact-H step and
the absolute-curvature |H| step against dense linear algebra (|H| built by plain loops) on a very small graph,
the sign of the removal step against the masked objective, and
the prediction's sign and interval against masked retrains on the tiny graph."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.data.synthetic import SyntheticConfig, generate_people_graph
from kgbias_core.embeddings.config import TrainConfig
from kgbias_core.embeddings.objective import transe_objective
from kgbias_core.embeddings.training import train_model
from kgbias_core.errors import MeasureError
from kgbias_core.influence.closed_form import influence_context, triple_influence
from kgbias_core.influence.iterative import conjugate_gradient_solve
from kgbias_core.influence.prediction import (
    ESTIMATOR,
    WhatIfPrediction,
    absolute_curvature_hvp,
    absolute_newton_step,
    band_factor,
    hessian_extremes,
    newton_removal_prediction,
    newton_step,
    predict_removal,
    removal_gradient,
    spectral_damping,
)
from kgbias_core.influence.retraining_check import masked_retrain_bias, removal_set
from kgbias_core.influence.scale import predict


@pytest.fixture(scope="module")
def small_model():
    """A graph small enough (596 parameters) for a dense Hessian, in float64."""
    graph = generate_people_graph(SyntheticConfig(n_persons=40, seed=5))
    model = train_model(graph, TrainConfig(dim=4, epochs=10, batch_size=64, lr=1e-2, l2=1.0, seed=3),
                        name="small", device=torch.device("cpu"))
    weights = {"entity_embeddings": model.entity_embeddings.double(),
               "relation_embeddings": model.relation_embeddings.double()}
    return replace(model, weights=weights)


def _objective(model, weights=None):
    E, R = model.entity_embeddings, model.relation_embeddings
    split = E.numel()

    def value(theta: torch.Tensor) -> torch.Tensor:
        return transe_objective(entities=theta[:split].reshape(E.shape), relations=theta[split:].reshape(R.shape),
                                triples=model.triples, negatives=model.frozen_negatives,
                                margin=model.config.margin, l2=model.config.l2, weights=weights)

    return value, torch.cat([E.reshape(-1), R.reshape(-1)])


def _dense_hessian(model) -> torch.Tensor:
    value, theta = _objective(model)
    return torch.autograd.functional.hessian(value, theta)


def _flat(v) -> torch.Tensor:
    return torch.cat([v[0].reshape(-1), v[1].reshape(-1)])


def test_lanczos_finds_the_extreme_eigenvalues_of_the_dense_hessian(small_model) -> None:
    eigenvalues = torch.linalg.eigvalsh(_dense_hessian(small_model))
    low, high = hessian_extremes(small_model, steps=60)
    spread = float(eigenvalues[-1] - eigenvalues[0])
    assert abs(low - float(eigenvalues[0])) < 1e-3 * spread, (low, float(eigenvalues[0]))
    assert abs(high - float(eigenvalues[-1])) < 1e-3 * spread, (high, float(eigenvalues[-1]))
    damping = spectral_damping(small_model)
    # The damped system is positive definite with its smallest eigenvalue at least the margin |lambda_min|.
    assert float(eigenvalues[0]) + damping >= max(0.0, -float(eigenvalues[0])) * 0.99


def test_cg_solves_the_damped_system_as_a_dense_solve_does(small_model) -> None:
    H = _dense_hessian(small_model)
    damping = spectral_damping(small_model)
    generator = torch.Generator().manual_seed(0)
    rhs = (torch.randn(small_model.entity_embeddings.shape, generator=generator, dtype=torch.float64),
           torch.randn(small_model.relation_embeddings.shape, generator=generator, dtype=torch.float64))
    dense = torch.linalg.solve(H + damping * torch.eye(H.shape[0], dtype=H.dtype), _flat(rhs))
    cg = _flat(conjugate_gradient_solve(small_model, rhs, damping=damping, iterations=500, tolerance=1e-10))
    assert torch.allclose(cg, dense, rtol=1e-6, atol=1e-8 * float(dense.abs().max()))


def test_the_newton_step_is_the_dense_solve_of_the_removed_gradients(small_model) -> None:
    H = _dense_hessian(small_model)
    damping = spectral_damping(small_model)
    removed = torch.tensor([0, 5, 17, 40, 41, 100])
    # sum_{z in S} grad L(z), independently: grad J - grad J_{-S} (S weighted 0, as a masked retrain does).
    weights = torch.ones(small_model.triples.shape[0], dtype=torch.float64)
    weights[removed] = 0
    full, theta = _objective(small_model)
    masked, _ = _objective(small_model, weights)
    g_full = torch.autograd.functional.jacobian(full, theta)
    g_masked = torch.autograd.functional.jacobian(masked, theta)
    assert torch.allclose(_flat(removal_gradient(small_model, removed)), g_full - g_masked, atol=1e-10)
    dense = torch.linalg.solve(H + damping * torch.eye(H.shape[0], dtype=H.dtype), g_full - g_masked)
    step = _flat(newton_step(small_model, removed, damping=damping))
    assert torch.allclose(step, dense, rtol=1e-5, atol=1e-6 * float(dense.abs().max()))
    # The sign for removal: the step goes downhill on J_{-S} - J (what removing S changes in the objective),
    # so it moves towards the optimum of J_{-S} from that of J. Checked by differences of the two objectives.
    eps = 1e-6

    def removed_part(shift: float) -> float:
        return float(masked(theta + shift * step) - full(theta + shift * step))

    assert removed_part(eps) < removed_part(-eps)


def _dense_absolute_hessian(model) -> torch.Tensor:
    """|H| by plain loops: l2 I plus, per active triple and its negative, 2 a a^T (x) I_d with a = e_h + e_r - e_t."""
    E, R = model.entity_embeddings, model.relation_embeddings
    n_e, d = E.shape
    size = E.numel() + R.numel()
    dense = model.config.l2 * torch.eye(size, dtype=torch.float64)

    def psi(row) -> float:
        h, r, t = row.tolist()
        return float(((E[h] + R[r] - E[t]) ** 2).sum())

    for positive, negative in zip(model.triples, model.frozen_negatives, strict=True):
        if model.config.margin + psi(positive) - psi(negative) <= 0:
            continue
        for h, r, t in (positive.tolist(), negative.tolist()):
            a = torch.zeros(n_e + R.shape[0], dtype=torch.float64)
            a[h] += 1
            a[t] -= 1
            a[n_e + r] += 1
            dense += 2 * torch.kron(torch.outer(a, a), torch.eye(d, dtype=torch.float64))
    return dense


def test_the_absolute_curvature_is_the_positive_part_of_every_term_and_its_step_a_dense_solve(small_model) -> None:
    dense = _dense_absolute_hessian(small_model)
    generator = torch.Generator().manual_seed(2)
    v = (torch.randn(small_model.entity_embeddings.shape, generator=generator, dtype=torch.float64),
         torch.randn(small_model.relation_embeddings.shape, generator=generator, dtype=torch.float64))
    assert torch.allclose(_flat(absolute_curvature_hvp(small_model)(v)), dense @ _flat(v), rtol=1e-9, atol=1e-9)
    assert float(torch.linalg.eigvalsh(dense)[0]) >= small_model.config.l2 * (1 - 1e-9)  # positive definite
    removed = torch.tensor([1, 2, 30, 99])
    expected = torch.linalg.solve(dense, _flat(removal_gradient(small_model, removed)))
    step = _flat(absolute_newton_step(small_model, removed))
    assert torch.allclose(step, expected, rtol=1e-5, atol=1e-6 * float(expected.abs().max()))


def test_the_newton_prediction_has_the_retrained_sign_and_its_interval_covers_it(tiny_model) -> None:
    context = influence_context(tiny_model)
    groups = context.groups
    base = masked_retrain_bias(tiny_model, removed=None, groups=groups)
    both = ((groups.n_male >= 1) & (groups.n_female >= 1)).nonzero().squeeze(-1).tolist()
    smaller = torch.minimum(groups.n_male, groups.n_female)
    # The largest occupation with both genders, a mid-sized one and one with a single person of one gender.
    by_size = sorted(both, key=lambda i: -int(groups.n_male[i] + groups.n_female[i]))
    tiny_group = next(i for i in by_size if int(smaller[i]) == 1)
    chosen = [by_size[0], by_size[len(by_size) // 2], tiny_group]
    rows = []
    for index in chosen:
        influence = triple_influence(context, index)
        moving = int((influence != 0).sum())
        for kind in ("top", "bottom"):
            for share in (2, 40):  # a small edit and one that removes a large share of the moving triples
                k = max(1, moving * share // 100)
                removed = removal_set(influence, kind=kind, k=k)
                raw = float(influence[removed].sum())
                prediction = newton_removal_prediction(tiny_model, removed=removed, groups=groups,
                                                       occupation_index=index)
                actual = float(masked_retrain_bias(tiny_model, removed=removed, groups=groups)[index] - base[index])
                calibrated = (predict(raw, scale=tiny_model.influence_scale, calibration=tiny_model.calibration)
                              if tiny_model.influence_scale is not None else None)
                rows.append((groups.labels[index], f"{int(groups.n_male[index])}/{int(groups.n_female[index])}",
                             kind, k, moving, raw, prediction, actual, calibrated))
    print()
    print("occupation    men/women kind   k/moving   closed form  newton [interval]                 retrained  "
          "calibrated closed form")
    for label, sizes, kind, k, moving, raw, p, actual, calibrated in rows:
        print(f"{label:13s} {sizes:9s} {kind:6s} {k:4d}/{moving:<5d} {raw:+.4f}      "
              f"{p.point:+.4f} [{p.low:+.4f}, {p.high:+.4f}]       "
              f"{actual:+.4f}    {'n/a' if calibrated is None else calibrated.summary()}")
    signs = sum((p.point > 0) == (actual > 0) for *_, p, actual, _ in rows) / len(rows)
    covered = sum(p.low <= actual <= p.high for *_, p, actual, _ in rows) / len(rows)
    print(f"sign agreement {signs:.0%}, coverage {covered:.0%} over {len(rows)} sets")
    assert all(p.low <= p.point <= p.high and p.estimator == ESTIMATOR for *_, p, _, _ in rows)
    assert signs >= 0.8, signs
    assert covered >= 0.8, covered


def test_predict_removal_is_the_newton_prediction_of_the_analysis(tiny_model) -> None:
    analysis = ModelAnalysis(tiny_model)
    occupation = analysis.groups.labels[0]
    influence = analysis.influence(occupation)
    removed = removal_set(influence, kind="top", k=5)
    got = predict_removal(analysis, occupation, removed)
    assert isinstance(got, WhatIfPrediction) and got.estimator == ESTIMATOR
    expected = newton_removal_prediction(tiny_model, removed=removed, groups=analysis.groups, occupation_index=0)
    assert got == expected
    groups = analysis.groups
    f = band_factor(int(min(groups.n_male[0], groups.n_female[0])))
    assert (got.low, got.high) == tuple(sorted((got.point / f, got.point * f)))


def test_the_newton_step_refuses_a_distance_it_does_not_differentiate(tiny_model) -> None:
    model = replace(tiny_model, config=replace(tiny_model.config, distance="l1"))
    with pytest.raises(MeasureError, match="squared-L2"):
        newton_removal_prediction(model, removed=torch.tensor([0]), groups=influence_context(tiny_model).groups,
                                  occupation_index=0)
