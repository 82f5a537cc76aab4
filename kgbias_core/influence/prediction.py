"""What-if prediction of the change of B_gr for a removal edit: one Newton step of the edited objective.

This module is the one home of what-if prediction (issue 25). For a set S of training triples,

    J_{-S}(theta) = J(theta) - sum_{z in S} L(z, theta)          (METHODS §2-3: S weighted 0)

At the trained theta*, grad J(theta*) = 0, so grad J_{-S}(theta*) = -sum_{z in S} grad L(z), and one
Newton step towards the optimum of J_{-S} is

    Delta theta = -(H + lambda I)^{-1} grad J_{-S}(theta*) = +(H + lambda I)^{-1} sum_{z in S} grad L(z)

(Koh & Liang 2017, Eq. 2 with epsilon = -1 per removed triple; Du et al. 2022 Eq. 3 use the same
direction with the diagonal Hessian of Lemma 1, METHODS §3-4). H is the full Hessian of J (full-batch
Hessian-vector products, :func:`~kgbias_core.influence.iterative.objective_hvp`), solved by conjugate
gradients (:func:`~kgbias_core.influence.iterative.conjugate_gradient_solve`). Unlike Du's closed form,
B_gr is then evaluated *exactly* at theta* + Delta theta (Du §3.1, METHODS §1) with the model's
groups held fixed, as the ground truth :func:`~kgbias_core.influence.retraining_check.masked_retrain_bias`
holds them, so B_gr's own non-linearity (a square distance, group means) is kept.

lambda is set per model from the spectrum, never tuned on retrains (:func:`spectral_damping`): Lanczos
gives lambda_min < 0 and lambda_max of H (the hinge makes H indefinite, METHODS §4), and

    lambda = max(0, -lambda_min) + margin,   margin = max(0, -lambda_min) + eps * lambda_max

so the smallest eigenvalue of H + lambda I is at least |lambda_min| + eps * lambda_max: no direction of
negative curvature is amplified more than the positive part resists it, and the condition number stays
below about (lambda_max + 2 |lambda_min|) / |lambda_min|. (With the margin alone at eps * lambda_max the
near-singular directions flipped the sign of 3 of 30 sets on the synthetic graph; see the notes.) The
l2 term is already inside H.

The interval: the hull of the Newton prediction and Du's closed form sum_{z in S} delta_z (Du Eq. 3,
diagonal Hessian), the disagreement of the two estimators. They err in opposite directions for a
reason: the diagonal Hessian drops the coupling between rows that resists the move, so the closed
form over-states the change (issue 25: 2.6-40x), while the damping lambda, which the indefinite H
requires, shrinks the Newton step. On the synthetic graph the retrained change fell inside on every
targeted set measured (tests/test_prediction.py prints the table). When the two disagree in sign
the interval spans 0 and the sign is not known.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import torch

from kgbias_core.embeddings.objective import transe_objective
from kgbias_core.embeddings.store import StoredModel
from kgbias_core.errors import NEWTON_NEEDS_SQUARED_L2, MeasureError
from kgbias_core.influence.iterative import Vector, conjugate_gradient_solve, objective_hvp
from kgbias_core.measures.group_bias import group_bias
from kgbias_core.measures.groups import OccupationGroups
from kgbias_core.types import LongTensor

if TYPE_CHECKING:  # analysis sits above influence: a type only, no import at run time
    from kgbias_core.analysis import ModelAnalysis

#: Name of the estimator a prediction states beside its number.
ESTIMATOR = "newton step (full Hessian, spectral damping), interval to Du's closed form"
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
    """sum_{z in S} grad L(z) at the model's theta (margin terms only: the l2 term stays in J_{-S})."""
    E = model.entity_embeddings.detach().requires_grad_(True)
    R = model.relation_embeddings.detach().requires_grad_(True)
    loss = transe_objective(entities=E, relations=R, triples=model.triples[removed],
                            negatives=model.frozen_negatives[removed], margin=model.config.margin, l2=0.0)
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
    return conjugate_gradient_solve(model, removal_gradient(model, removed), damping=damping, iterations=iterations)


def _bias(model: StoredModel, groups: OccupationGroups, occupation_index: int) -> float:
    values = group_bias(entity_embeddings=model.entity_embeddings.to(groups.occupations.device),
                        relation_embeddings=model.relation_embeddings.to(groups.occupations.device),
                        groups=groups, distance=model.config.distance)
    return float(values[occupation_index])


def newton_change(model: StoredModel, removed: LongTensor, *, groups: OccupationGroups, occupation_index: int,
                  damping: float) -> float:
    """B_gr(theta + Delta theta) - B_gr(theta) of one occupation, exact, groups fixed (Du §3.1)."""
    step = newton_step(model, removed.to(model.triples.device), damping=damping)
    return _bias(_moved(model, step), groups, occupation_index) - _bias(model, groups, occupation_index)


def newton_removal_prediction(
    model: StoredModel, *, removed: LongTensor, groups: OccupationGroups, occupation_index: int,
    closed_form: float, damping: float | None = None,
) -> WhatIfPrediction:
    """The change of B_gr of one occupation when ``removed`` (training-row indices) leaves the training set.

    ``closed_form``: Du's sum_{z in S} delta_z for the same set (raw, uncalibrated), the interval's
    other end. ``damping`` None: :func:`spectral_damping` of the model (pass it when predicting many
    sets of one model: it costs a Lanczos run).
    """
    if model.config.distance != "squared_l2":
        raise MeasureError(NEWTON_NEEDS_SQUARED_L2.format(model=model.name, distance=model.config.distance))
    lam = spectral_damping(model) if damping is None else damping
    point = newton_change(model, removed, groups=groups, occupation_index=occupation_index, damping=lam)
    return WhatIfPrediction(point=point, low=min(point, closed_form), high=max(point, closed_form), estimator=ESTIMATOR)


def predict_removal(analysis: ModelAnalysis, occupation: str, removed: LongTensor) -> WhatIfPrediction:
    """What-if for the lab, ``debias`` and the report: B_gr of ``occupation`` without training rows ``removed``.

    Uses the analysis's groups (fixed, as the masked retrain keeps them), its closed-form influence for the
    interval, and a spectral damping memoised per analysis.
    """
    model = analysis.model
    index = analysis.groups.index(occupation)
    removed = removed.to(model.triples.device)
    closed_form = float(analysis.influence(occupation)[removed].sum())
    # One Lanczos run per model: the analysis's memo is the per-model cache every caller shares.
    damping = analysis._memo.get("newton_damping", lambda: spectral_damping(model))
    return newton_removal_prediction(model, removed=removed, groups=analysis.groups, occupation_index=index,
                                     closed_form=closed_form, damping=damping)
