"""What-if prediction of the change of B_gr for a removal edit: one Newton step of the edited objective.

This module is the one home of what-if prediction (issue 25). For a set S of training triples,

    J_{-S}(theta) = J(theta) - sum_{z in S} L(z, theta)          (METHODS §2-3: S weighted 0)

At the trained theta*, grad J(theta*) = 0, so grad J_{-S}(theta*) = -sum_{z in S} grad L(z), and one
Newton step towards the optimum of J_{-S} is

    Delta theta = -(H + lambda I)^{-1} grad J_{-S}(theta*) = +(H + lambda I)^{-1} sum_{z in S} grad L(z)

(Koh & Liang 2017, Eq. 2 with epsilon = -1 per removed triple; Du et al. 2022 Eq. 3 use the same
direction with the diagonal Hessian of Lemma 1, METHODS §3-4). B_gr is then evaluated *exactly* at
theta* + Delta theta (Du §3.1, METHODS §1) with the model's groups held fixed, as the ground truth
:func:`~kgbias_core.influence.retraining_check.masked_retrain_bias` holds them, so B_gr's own
non-linearity is kept. All solves are conjugate gradients over full-batch Hessian-vector products.

H: the Hessian of J is indefinite (the frozen negatives enter with a minus sign; METHODS §4). Two
curvatures are implemented and were measured against masked retrains on the synthetic graph
(experiments/whatif_accuracy):

- "exact": H + lambda I (:func:`~kgbias_core.influence.iterative.objective_hvp`,
  :func:`~kgbias_core.influence.iterative.conjugate_gradient_solve`), lambda from the spectrum, never
  tuned on retrains (:func:`spectral_damping`): Lanczos gives lambda_min < 0 and lambda_max, and
  lambda = max(0, -lambda_min) + margin, margin = max(0, -lambda_min) + eps * lambda_max. With the
  margin at eps * lambda_max alone the near-singular directions flipped the sign of 3 of 30 sets; with
  it, every sign was right but the step under-stated the retrained change 1.8-9.7x (median 3.4x):
  lambda ~ 2 |lambda_min| shrinks every direction whose curvature is near l2.
- "absolute" (the default, :func:`absolute_curvature_hvp`): every active term's curvature counted
  positive, |H| = l2 I + sum_{z active} (d^2 psi(z) + d^2 psi(z')), positive definite for l2 > 0, so no
  damping at all; the saddle-free Newton of Dauphin et al. (2014) term by term (Du's Lemma 1 keeps
  a diagonal with the negatives subtracted instead). Retrained / predicted: 0.34-1.62, median 0.82, sign right on
  48 of 48 targeted sets (synthetic graph, 8 occupations, 2-40% of the moving triples).

Interval: a multiplicative band [p / f, p * f], f = BAND_BASE + BAND_SMALL / sqrt(m), m the count of the
rarer gender in the occupation: the ratio retrained / predicted spreads most where one gender has a
handful of persons (0.34 and 0.38 at m = 1, within 0.64-1.62 at m >= 4). The constants were fitted
on the retrains of the synthetic graph of the tests (seed 7) and are checked on other synthetic graphs
by the bench; they are not fitted per model, and a real graph may need a wider band (not yet measured).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

import torch

from kgbias_core.embeddings.objective import negatives_count, negatives_of, transe_distance, transe_objective
from kgbias_core.embeddings.store import StoredModel
from kgbias_core.errors import NEWTON_NEEDS_SQUARED_L2, MeasureError
from kgbias_core.influence.iterative import Vector, conjugate_gradient_solve, conjugate_gradients, objective_hvp
from kgbias_core.measures.group_bias import group_bias
from kgbias_core.measures.groups import OccupationGroups
from kgbias_core.types import LongTensor


class AnalysedModel(Protocol):
    """What :func:`predict_removal` reads of a :class:`~kgbias_core.analysis.ModelAnalysis` (which sits above
    influence, so it is named by its shape, not imported)."""

    model: StoredModel
    groups: OccupationGroups

#: Name of the estimator a prediction states beside its number.
ESTIMATOR = "newton step (absolute curvature, CG, exact B_gr), band fitted on synthetic retrains"
#: The band's factor f = BAND_BASE + BAND_SMALL / sqrt(m), m the rarer gender's count: interval [p / f, p * f].
BAND_BASE = 1.5
BAND_SMALL = 1.5
#: The part of lambda_max added to the margin of lambda (see :func:`spectral_damping`).
CONDITION_EPS = 0.01
#: Lanczos steps for the extreme eigenvalues (the extremes converge first; 30 is ample for both ends).
LANCZOS_STEPS = 30


@dataclass(frozen=True)
class WhatIfPrediction:
    """A predicted change of B_gr for an edit, its interval, and the estimator that made it."""

    point: float
    low: float
    high: float
    estimator: str

    def summary(self, digits: int = 4) -> str:
        return f"{self.point:+.{digits}f} [{self.low:+.{digits}f}, {self.high:+.{digits}f}] ({self.estimator})"


def _flat(v: Vector) -> torch.Tensor:
    return torch.cat([v[0].reshape(-1), v[1].reshape(-1)])


def _unflat(x: torch.Tensor, like: Vector) -> Vector:
    n = like[0].numel()
    return x[:n].reshape(like[0].shape), x[n:].reshape(like[1].shape)


def hessian_extremes(model: StoredModel, *, steps: int = LANCZOS_STEPS, seed: int = 0) -> tuple[float, float]:
    """(lambda_min, lambda_max) of the full Hessian of J by Lanczos with full re-orthogonalisation.

    The Ritz values' extremes converge to the spectrum's extremes from inside (Golub & Van Loan §10.1),
    so lambda_min is over-estimated a little; the margin of :func:`spectral_damping` absorbs it.
    """
    hvp = objective_hvp(model)
    like = (model.entity_embeddings, model.relation_embeddings)
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(like[0].numel() + like[1].numel(), generator=generator, dtype=like[0].dtype).to(like[0].device)
    q = q / q.norm()
    basis, alphas, betas = [q], [], []
    for j in range(min(steps, q.numel())):
        w = _flat(hvp(_unflat(basis[j], like)))
        alpha = float(w @ basis[j])
        alphas.append(alpha)
        stacked = torch.stack(basis)
        w = w - stacked.T @ (stacked @ w)  # full re-orthogonalisation (twice is enough, Kahan)
        w = w - stacked.T @ (stacked @ w)
        beta = float(w.norm())
        if beta < 1e-10 * max(1.0, abs(alpha)):
            break
        betas.append(beta)
        basis.append(w / beta)
    k = len(alphas)
    tridiagonal = torch.diag(torch.tensor(alphas, dtype=torch.float64))
    off = torch.tensor(betas[: k - 1], dtype=torch.float64)
    tridiagonal += torch.diag(off, 1) + torch.diag(off, -1)
    ritz = torch.linalg.eigvalsh(tridiagonal)
    return float(ritz[0]), float(ritz[-1])


def spectral_damping(model: StoredModel, *, eps: float = CONDITION_EPS) -> float:
    """lambda = max(0, -lambda_min) + margin, margin = max(0, -lambda_min) + eps * lambda_max (module docstring)."""
    low, high = hessian_extremes(model)
    negative = max(0.0, -low)
    return negative + negative + eps * max(high, 0.0)


def removal_gradient(model: StoredModel, removed: LongTensor) -> Vector:
    """sum_{z in S} grad L(z) at the model's theta (margin terms only: the l2 term stays in J_{-S}); each z
    with all its K negatives."""
    E = model.entity_embeddings.detach().requires_grad_(True)
    R = model.relation_embeddings.detach().requires_grad_(True)
    negatives = negatives_of(model.frozen_negatives, removed, model.triples.shape[0])
    loss = transe_objective(entities=E, relations=R, triples=model.triples[removed],
                            negatives=negatives, margin=model.config.margin, l2=0.0)
    return torch.autograd.grad(loss, (E, R))


def _objective_gradient(model: StoredModel, weights: torch.Tensor) -> Vector:
    E = model.entity_embeddings.detach().requires_grad_(True)
    R = model.relation_embeddings.detach().requires_grad_(True)
    loss = transe_objective(entities=E, relations=R, triples=model.triples, negatives=model.frozen_negatives,
                            margin=model.config.margin, l2=model.config.l2, weights=weights)
    return torch.autograd.grad(loss, (E, R))


def _moved(model: StoredModel, step: Vector) -> StoredModel:
    weights = dict(model.weights)
    weights["entity_embeddings"] = model.entity_embeddings + step[0]
    weights["relation_embeddings"] = model.relation_embeddings + step[1]
    return replace(model, weights=weights)


def newton_step(model: StoredModel, removed: LongTensor, *, damping: float, iterations: int = 200) -> Vector:
    """Delta theta = (H + lambda I)^{-1} sum_{z in S} grad L(z) (Koh & Liang Eq. 2; sign derived above)."""
    rhs = removal_gradient(model, removed)
    if not (bool(rhs[0].any()) or bool(rhs[1].any())):  # all margins inactive: nothing moves (CG would divide by 0)
        return torch.zeros_like(rhs[0]), torch.zeros_like(rhs[1])
    return conjugate_gradient_solve(model, rhs, damping=damping, iterations=iterations)


def _bias(model: StoredModel, groups: OccupationGroups, occupation_index: int) -> float:
    values = group_bias(entity_embeddings=model.entity_embeddings.to(groups.occupations.device),
                        relation_embeddings=model.relation_embeddings.to(groups.occupations.device),
                        groups=groups, distance=model.config.distance)
    return float(values[occupation_index])


def absolute_curvature_hvp(model: StoredModel):
    """v -> |H| v: the Hessian of J with each active margin term's curvature counted positive.

    J's Hessian is l2 I + sum_{z active} (d^2 psi(z) - d^2 psi(z')): indefinite through the frozen
    negatives. Each d^2 psi is positive semi-definite (psi = ||h + r - t||^2 of a linear map of theta), so
    |H| = l2 I + sum_{z active} (d^2 psi(z) + d^2 psi(z')) is positive definite for l2 > 0: the saddle-free
    Newton idea of Dauphin et al. (2014), |lambda| for lambda, applied term by term. (Du's Lemma 1,
    METHODS §3, keeps a diagonal in which the negatives count with their minus sign, N_e - 2|G|/|E|
    clamped at 0; here they add to the curvature and the off-diagonal coupling is kept.)
    With K negatives per triple (the mean over j, :mod:`kgbias_core.embeddings.objective`) the terms are the
    pairs (z, z'_j): |H| = l2 I + (1/K) sum_{(z, j) active} (d^2 psi(z) + d^2 psi(z'_j)).
    """
    triples, negatives = model.triples, model.frozen_negatives
    k = negatives_count(negatives, triples.shape[0])
    pairs = triples if k == 1 else triples.repeat(k, 1)  # [K n, 3]: row j n + i is triple i, as the negatives
    E0, R0 = model.entity_embeddings.detach(), model.relation_embeddings.detach()
    with torch.no_grad():
        distance = transe_distance(entities=E0, relations=R0, triples=pairs)
        negative = transe_distance(entities=E0, relations=R0, triples=negatives)
        active = (model.config.margin + distance - negative) > 0  # only these terms have curvature
    both = torch.cat([pairs[active], negatives[active]])

    def hvp(vector: Vector) -> Vector:
        E, R = E0.clone().requires_grad_(True), R0.clone().requires_grad_(True)
        curvature = transe_distance(entities=E, relations=R, triples=both).sum()
        loss = ((curvature if k == 1 else curvature / k)
                + model.config.l2 / 2 * ((E**2).sum() + (R**2).sum()))
        grads = torch.autograd.grad(loss, (E, R), create_graph=True)
        dot = (grads[0] * vector[0]).sum() + (grads[1] * vector[1]).sum()
        return torch.autograd.grad(dot, (E, R))

    return hvp


def absolute_newton_step(model: StoredModel, removed: LongTensor, *, damping: float = 0.0) -> Vector:
    """Delta theta = (|H| + lambda I)^{-1} sum_{z in S} grad L(z) (the removal sign of the module docstring)."""
    hvp = absolute_curvature_hvp(model)

    def apply(v: Vector) -> Vector:
        h = hvp(v)
        return h[0] + damping * v[0], h[1] + damping * v[1]

    return conjugate_gradients(apply, removal_gradient(model, removed))


def newton_change(model: StoredModel, removed: LongTensor, *, groups: OccupationGroups, occupation_index: int,
                  damping: float, curvature: str = "absolute") -> float:
    """B_gr(theta + Delta theta) - B_gr(theta) of one occupation, exact, groups fixed (Du §3.1).

    ``curvature``: "absolute" (|H|, :func:`absolute_curvature_hvp`) or "exact" (H + lambda I, lambda from
    :func:`spectral_damping`).
    """
    removed = removed.to(model.triples.device)
    if curvature == "absolute":
        step = absolute_newton_step(model, removed, damping=damping)
    else:
        step = newton_step(model, removed, damping=damping)
    return _bias(_moved(model, step), groups, occupation_index) - _bias(model, groups, occupation_index)


def band_factor(smaller_group: int) -> float:
    """f of the interval [p / f, p * f]: BAND_BASE + BAND_SMALL / sqrt(m) (module docstring)."""
    return BAND_BASE + BAND_SMALL / max(1, smaller_group) ** 0.5


def newton_removal_prediction(
    model: StoredModel, *, removed: LongTensor, groups: OccupationGroups, occupation_index: int,
) -> WhatIfPrediction:
    """The change of B_gr of one occupation when ``removed`` (training-row indices) leaves the training set.

    One Newton step with the absolute curvature |H| (no damping where l2 > 0: |H| >= l2 I), B_gr exact
    at theta + Delta theta, and the band of :func:`band_factor`.
    """
    if model.config.distance != "squared_l2":
        raise MeasureError(NEWTON_NEEDS_SQUARED_L2.format(model=model.name, distance=model.config.distance))
    damping = 0.0 if model.config.l2 > 0 else CONDITION_EPS  # l2 = 0: a token shift keeps |H| invertible
    point = newton_change(model, removed, groups=groups, occupation_index=occupation_index, damping=damping)
    f = band_factor(int(min(groups.n_male[occupation_index], groups.n_female[occupation_index])))
    ends = sorted((point / f, point * f))
    return WhatIfPrediction(point=point, low=ends[0], high=ends[1], estimator=ESTIMATOR)


def predict_removal(analysis: AnalysedModel, occupation: str, removed: LongTensor) -> WhatIfPrediction:
    """What-if for the lab, ``debias`` and the report: B_gr of ``occupation`` without training rows ``removed``.

    Uses the analysis's groups, held fixed as the masked retrain holds them.
    """
    return newton_removal_prediction(analysis.model, removed=removed, groups=analysis.groups,
                                     occupation_index=analysis.groups.index(occupation))
