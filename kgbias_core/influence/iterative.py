"""Iterative inverse-Hessian influence: LiSSA (Koh & Liang 2017) and a damped conjugate-gradient solve.

The closed form of :mod:`kgbias_core.influence.closed_form` keeps only the diagonal of the Hessian (Du Lemma 1).
These two methods use the full Hessian of the trained objective J(theta)
(:func:`kgbias_core.embeddings.objective.transe_objective`, the one training minimises) through
autograd Hessian-vector products, and solve s = (H + lambda I)^{-1} grad B_gr. Then
delta_z = s . grad L(z), computed for all triples at once from the residuals (METHODS §4). The
Hessian is indefinite (METHODS §4 measured eigenvalues down to about -63 on FB15k-237), so lambda
must be larger than for the closed form; both are baselines for benchmarks and for calibrating the
closed form's scale without retraining.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from kgbias_core.embeddings.objective import distance_gradient, negatives_of, transe_objective
from kgbias_core.embeddings.store import StoredModel
from kgbias_core.influence.closed_form import MARGIN_BLOCK, InfluenceContext, group_bias_gradient
from kgbias_core.types import FloatTensor, LongTensor

Vector = tuple[FloatTensor, FloatTensor]  # (entity part [E, d], relation part [R, d])


def objective_hvp(model: StoredModel, *, batch: LongTensor | None = None) -> Callable[[Vector], Vector]:
    """v -> H v for J on the summed scale; with ``batch`` (row indices), an unbiased estimate from it.

    J with K negatives per triple (:mod:`kgbias_core.embeddings.objective`): a batch carries its triples'
    K negatives each."""
    triples, negatives = model.triples, model.frozen_negatives
    n = triples.shape[0]
    rows = torch.arange(n, device=triples.device) if batch is None else batch
    weights = torch.full((rows.shape[0],), n / rows.shape[0], device=triples.device)  # [b]: |G| / b each
    batch_negatives = negatives_of(negatives, rows, n)  # [K b, 3]

    def hvp(vector: Vector) -> Vector:
        E = model.entity_embeddings.detach().requires_grad_(True)
        R = model.relation_embeddings.detach().requires_grad_(True)
        loss = transe_objective(entities=E, relations=R, triples=triples[rows], negatives=batch_negatives,
                                margin=model.config.margin, l2=model.config.l2, weights=weights.to(E.dtype),
                                distance=model.config.distance)
        grads = torch.autograd.grad(loss, (E, R), create_graph=True)
        dot = (grads[0] * vector[0]).sum() + (grads[1] * vector[1]).sum()
        return torch.autograd.grad(dot, (E, R))

    return hvp


def _dot(a: Vector, b: Vector) -> float:
    return float((a[0] * b[0]).sum() + (a[1] * b[1]).sum())


def conjugate_gradients(
    apply: Callable[[Vector], Vector], rhs: Vector, *, iterations: int = 100, tolerance: float = 1e-6,
    inverse_diagonal: Vector | None = None, on_iterate: Callable[[int, Vector], None] | None = None,
) -> Vector:
    """x = A^{-1} rhs by conjugate gradients for a positive definite ``apply`` (v -> A v); stops when the
    residual is ``tolerance`` times the start's. A zero ``rhs`` (a set whose margins are all inactive has no
    gradient) gives x = 0 at once, not a division by zero. ``inverse_diagonal``: a Jacobi preconditioner
    (1 / diag A, row-wise, broadcast over d), z = r * inverse_diagonal; None: plain CG. ``on_iterate(i, x)``:
    called with each iterate after its i-th product (the experiments read a solve stopped earlier from one run).
    The one CG loop over torch vectors (the planner's sparse solve has its own in numpy, in place, for memory)."""
    def precondition(r: Vector) -> Vector:
        return r if inverse_diagonal is None else (r[0] * inverse_diagonal[0], r[1] * inverse_diagonal[1])

    x = (torch.zeros_like(rhs[0]), torch.zeros_like(rhs[1]))
    r = (rhs[0].clone(), rhs[1].clone())
    rs = _dot(r, r)
    if rs == 0:
        return x
    target = tolerance * tolerance * rs
    z = precondition(r)
    p = (z[0].clone(), z[1].clone())
    rz = _dot(r, z) if inverse_diagonal is not None else rs
    for i in range(iterations):
        ap = apply(p)
        step = rz / _dot(p, ap)
        x = (x[0] + step * p[0], x[1] + step * p[1])
        if on_iterate is not None:
            on_iterate(i + 1, x)
        r = (r[0] - step * ap[0], r[1] - step * ap[1])
        rs_new = _dot(r, r)
        if rs_new < target:
            break
        z = precondition(r)
        rz_new = _dot(r, z) if inverse_diagonal is not None else rs_new
        p = (z[0] + rz_new / rz * p[0], z[1] + rz_new / rz * p[1])
        rz = rz_new
    return x


def conjugate_gradient_solve(
    model: StoredModel, rhs: Vector, *, damping: float, iterations: int = 100, tolerance: float = 1e-6
) -> Vector:
    """s = (H + lambda I)^{-1} rhs by conjugate gradients with exact full-batch HVPs."""
    hvp = objective_hvp(model)

    def apply(v: Vector) -> Vector:
        h = hvp(v)
        return h[0] + damping * v[0], h[1] + damping * v[1]

    return conjugate_gradients(apply, rhs, iterations=iterations, tolerance=tolerance)


def lissa_solve(
    model: StoredModel,
    rhs: Vector,
    *,
    damping: float,
    depth: int = 200,
    batch_size: int = 16384,
    repeats: int = 3,
    scale: float | None = None,
    seed: int = 0,
) -> Vector:
    """Koh & Liang's LiSSA estimate of (H + lambda I)^{-1} rhs from mini-batch HVPs.

    Recursion h_j = rhs + h_{j-1} - (H_batch + lambda I) h_{j-1} / scale, result h_depth / scale,
    averaged over ``repeats``; ``scale`` must exceed the largest eigenvalue of H + lambda I
    (default: 2x a power-iteration estimate).
    """
    n = model.triples.shape[0]
    generator = torch.Generator().manual_seed(seed)
    if scale is None:
        full = objective_hvp(model)
        # Drawn on the CPU from the seed (the same start on every device), then moved to the model's.
        v = (torch.randn(rhs[0].shape, generator=generator).to(rhs[0].device),
             torch.randn(rhs[1].shape, generator=generator).to(rhs[1].device))
        for _ in range(20):
            h = full(v)
            norm = _dot(h, h) ** 0.5
            v = (h[0] / norm, h[1] / norm)
        scale = 2.0 * (norm + damping)
    estimates = []
    for _ in range(repeats):
        h = (rhs[0].clone(), rhs[1].clone())
        for _ in range(depth):
            batch = torch.randint(n, (min(batch_size, n),), generator=generator).to(model.triples.device)
            hv = objective_hvp(model, batch=batch)(h)
            h = (
                rhs[0] + h[0] - (hv[0] + damping * h[0]) / scale,
                rhs[1] + h[1] - (hv[1] + damping * h[1]) / scale,
            )
        estimates.append((h[0] / scale, h[1] / scale))
    return (
        torch.stack([e[0] for e in estimates]).mean(0),
        torch.stack([e[1] for e in estimates]).mean(0),
    )


def influence_from_solution(context: InfluenceContext, model: StoredModel, solution: Vector) -> FloatTensor:
    """delta_z = s . grad L(z) for every training triple, s = (H + lambda I)^{-1} grad B_gr. -> [|G|].

    grad L(z) = 2u at h, -2u at t, 2u at r, minus the same for the negative (u' at h', t', r), psi'(u) for another
    distance (``context.distance``) in place of 2u; with K
    negatives, the mean over z's pairs with an active margin (:mod:`kgbias_core.influence.closed_form`).
    A triple's positive term s . grad psi(z) is the same for each of its active pairs, so it is taken once, on the
    pair that stands for them (``context.positive_weight``), times their number: with eight negatives the positive
    side costs a triple, not eight pairs. In blocks of :data:`MARGIN_BLOCK` pairs (u and u' of every pair at
    once are [2A, d]: 1.6 GB on FB15k-237 with eight negatives).
    """
    s_e, s_r = solution
    n_active = context.active.shape[0]
    device = context.device
    per_active = torch.zeros(n_active, dtype=s_e.dtype, device=device)
    weight = context.positive_weight
    standing = torch.arange(n_active, device=device) if weight is None else weight.nonzero().squeeze(1)
    for first in range(0, n_active, MARGIN_BLOCK):
        pairs = torch.arange(first, min(first + MARGIN_BLOCK, n_active), device=device)
        per_active[pairs] = -_solution_dots(context, solution, pairs, negative=True)
    for first in range(0, standing.shape[0], MARGIN_BLOCK):
        pairs = standing[first:first + MARGIN_BLOCK]
        positive = _solution_dots(context, solution, pairs, negative=False)
        per_active[pairs] += positive if weight is None else positive * weight[pairs]
    return context.per_triple(2.0 * per_active)


def _solution_dots(context: InfluenceContext, solution: Vector, pairs: LongTensor, *, negative: bool) -> FloatTensor:
    """(s_h - s_t + s_r) . u of the active ``pairs`` (u' and the negative's h', t' where ``negative``). [m]."""
    s_e, s_r = solution
    kind = 2 if negative else 0  # the slots' columns: (h, t), then (h', t')
    heads, tails = context.slots[pairs, kind], context.slots[pairs, kind + 1]
    relation = context.relation[pairs]
    u = context.residuals_of(pairs, torch.full_like(pairs, negative, dtype=torch.bool))
    if context.distance != "squared_l2":  # psi'(u) / 2 in place of u: the caller doubles it back
        u = distance_gradient(u, distance=context.distance) / 2
    return ((s_e[heads] - s_e[tails] + s_r[relation]) * u).sum(-1)


def group_bias_rhs(context: InfluenceContext, occupation_index: int) -> Vector:
    """grad B_gr over all parameters: the entity part of METHODS §4 plus the relation r_p.

    d psi(s, r_p, o) / d r_p = 2v = -d psi / d o, so grad_{r_p} B_gr = -grad_o B_gr. (The closed form
    gives relations no influence: its Hessian is pseudo-inverted to 0 there.)
    """
    grad_e = group_bias_gradient(context, occupation_index)
    groups = context.groups
    grad_r = torch.zeros_like(context.relation_embeddings)
    grad_r[groups.occupation_relation] = -grad_e[groups.occupations[occupation_index]]
    return grad_e, grad_r
