"""The TransE objective that influence functions can trust (METHODS §2-3), stated once.

    J(theta) = sum_z w_z (1/K) sum_{j=1..K} [gamma + psi(z) - psi(z'_j)]_+ + (l2 / 2) ||theta||^2,
    theta = (entities, relations)

with psi(h, r, t) = ||h + r - t||_2^2, z'_1 .. z'_K the K frozen negatives of z (METHODS §2 has K = 1,
where this is its J term for term), and w_z = 1 (0 masks z, and with it all its negatives, in a retrain
"without S", METHODS §2). The mean over j, not the sum, keeps every setting's meaning across K: the
margin part of a triple is still one hinge's worth, so l2 (summed-loss units), lambda and Du's
diagonal alpha_e = max(N_e - 2|G|/|E|, 0) + lambda (METHODS §3: an entity fills K times as many negative
slots, each weighted 1/K, so the expected Hessian of Du's Lemma 1 is K = 1's) stay what they were.

Layout of the negatives: one table [K n, 3] whose row j n + i is triple i's j-th negative (j-major), so
that a table of K = 1 is the [n, 3] table every older model stores, unchanged; K is its row count over
n (:func:`negatives_count`). Training (:func:`kgbias_core.embeddings.training.train_transe`),
the Hessian-vector products of the iterative influence solvers
(:mod:`kgbias_core.influence.iterative`) and the tests all call these functions, so the loss they
differentiate is the same one.
"""

from __future__ import annotations

import torch
from torch.nn import functional

from kgbias_core.embeddings.config import PSEUDO_HUBER_DELTA
from kgbias_core.types import FloatTensor, LongTensor


def residual_distance(residuals: FloatTensor, *, distance: str = "squared_l2") -> FloatTensor:
    """psi as a function of the residual v = h + r - t: ||v||_2^2, ||v||_2, ||v||_1 or the pseudo-Huber
    sum_i (sqrt(v_i^2 + delta^2) - delta). [n, d] -> [n].

    ``distance`` is a :data:`~kgbias_core.embeddings.config.DISTANCES` name. kgbias trains with
    squared L2; L1 and L2 are the distances of embeddings imported from PyKEEN, DGL-KE or PBG, whose
    measures must rank triples as their own engine does. pseudo_huber (delta =
    :data:`~kgbias_core.embeddings.config.PSEUDO_HUBER_DELTA`) is L1 far from 0 and (1 / 2 delta) v_i^2 near it:
    L1's link prediction with a curvature of its own, so the Hessian that influence inverts is not L1's 0
    (issue 24; docs/results/default_models.md).
    """
    if distance == "squared_l2":
        return residuals.pow(2).sum(-1)
    if distance == "l2":
        return torch.linalg.vector_norm(residuals, ord=2, dim=-1)
    if distance == "l1":
        return residuals.abs().sum(-1)
    if distance == "pseudo_huber":
        delta = PSEUDO_HUBER_DELTA
        return (torch.sqrt(residuals * residuals + delta * delta) - delta).sum(-1)
    raise ValueError(f"unknown distance {distance!r}")


def distance_gradient(residuals: FloatTensor, *, distance: str = "squared_l2") -> FloatTensor:
    """d psi / d v at each residual v: 2v (squared L2), v / ||v||_2 (L2), sign(v) (L1),
    v / sqrt(v^2 + delta^2) (pseudo-Huber). [n, d] -> [n, d].

    The individual measures (B_in, B'_in) move a person along this gradient; for squared L2 it is
    Du's 2v. At v = 0 the L2 and L1 gradients are taken as 0 (a subgradient).
    """
    if distance == "squared_l2":
        return 2 * residuals
    if distance == "l2":
        norm = torch.linalg.vector_norm(residuals, ord=2, dim=-1, keepdim=True)
        return residuals / norm.clamp_min(torch.finfo(residuals.dtype).tiny)
    if distance == "l1":
        return residuals.sign()
    if distance == "pseudo_huber":
        return residuals * torch.rsqrt(residuals * residuals + PSEUDO_HUBER_DELTA * PSEUDO_HUBER_DELTA)
    raise ValueError(f"unknown distance {distance!r}")


def pseudo_huber_curvature(residuals: FloatTensor, *, delta: float = PSEUDO_HUBER_DELTA) -> FloatTensor:
    """d^2 psi / dv_i^2 of the pseudo-Huber sum_i (sqrt(v_i^2 + delta^2) - delta): delta^2 / (v_i^2 + delta^2)^1.5,
    diagonal in v (1 / delta at v_i = 0, about delta^2 / |v_i|^3 far from it). [n, d] -> [n, d].

    Exact for pseudo_huber models; for L1 models the influence solvers take it at a delta of the model's own
    residual scale as L1's smoothed curvature (:func:`kgbias_core.influence.prediction.absolute_curvature_hvp`)."""
    squared = (residuals * residuals).add_(delta * delta)  # in place: [n, d] temporaries cost more than the math
    return squared.mul_(squared.sqrt()).reciprocal_().mul_(delta * delta)


def transe_distance(*, entities: FloatTensor, relations: FloatTensor, triples: LongTensor,
                    distance: str = "squared_l2") -> FloatTensor:
    """psi(h, r, t) = ||h + r - t||_2^2 (METHODS Notation); lower = more plausible.

    Shapes: entities [E, d], relations [R, d], triples [n, 3] (h, r, t ids) -> [n].
    The lookups go through ``embedding`` (not indexing) so that the gradient accumulates into the
    weights as PyKEEN's embeddings do: the hand-written training loop reproduces its numbers bit for bit.
    ``distance``: another psi of the residual (:func:`residual_distance`), for the L1 / L2 objective of
    embeddings imported from other engines and of the retrains that check predictions on them.
    """
    h = functional.embedding(triples[:, 0], entities)  # [n, d]
    r = functional.embedding(triples[:, 1], relations)  # [n, d]
    t = functional.embedding(triples[:, 2], entities)  # [n, d]
    return residual_distance(h + r - t, distance=distance)


def negatives_count(negatives: LongTensor, n_triples: int) -> int:
    """K of a negatives table [K n, 3] of ``n_triples`` training triples (module docstring); 1 for n = 0.

    A row count that is no multiple of n is a ValueError: no triple could be told its negatives.
    """
    if n_triples == 0:
        return 1
    if negatives.shape[0] % n_triples or negatives.shape[0] == 0:
        raise ValueError(f"{negatives.shape[0]} negatives for {n_triples} triples: not K per triple")
    return negatives.shape[0] // n_triples


def negatives_of(negatives: LongTensor, rows: LongTensor, n_triples: int) -> LongTensor:
    """The K negatives of the training triples ``rows`` (indices or a mask over n), in the same layout.

    Shapes: negatives [K n, 3] -> [K b, 3], row j b + i the j-th negative of the i-th selected triple.
    """
    k = negatives_count(negatives, n_triples)
    if k == 1:
        return negatives[rows]
    return negatives.view(k, n_triples, 3)[:, rows].reshape(-1, 3)  # [K, b, 3] -> [K b, 3]


def join_negatives(first: LongTensor, n_first: int, second: LongTensor, n_second: int) -> LongTensor:
    """Negatives of the triples cat([first's n_first, second's n_second]), in the layout. [K n1, 3], [K n2, 3]
    -> [K (n1 + n2), 3]. Both tables must hold the same K."""
    k = negatives_count(first, n_first)
    if k == 1:
        return torch.cat([first, second])
    return torch.cat([first.view(k, n_first, 3), second.view(k, n_second, 3)], dim=1).reshape(-1, 3)


def margin_loss(
    *, distance: FloatTensor, negative_distance: FloatTensor, margin: float, weights: FloatTensor | None = None
) -> FloatTensor:
    """w_z (1/K) sum_j [gamma + psi(z) - psi(z'_j)]_+ per training triple (METHODS §2-3, K negatives).

    Shapes: distance psi(z) [n], negative_distance psi(z'_j) [n] (K = 1) or [K, n], weights [n] (None:
    all 1) -> [n]. Zero where every margin is inactive: such a triple has no gradient and no influence
    (METHODS §4); with K > 1 each negative's hinge is active or not on its own.
    """
    loss = torch.relu(margin + distance - negative_distance)
    if loss.ndim == 2:  # [K, n]: the mean over a triple's negatives (module docstring)
        loss = loss.mean(0)
    return loss if weights is None else weights * loss


def transe_objective(
    *,
    entities: FloatTensor,
    relations: FloatTensor,
    triples: LongTensor,
    negatives: LongTensor,
    margin: float,
    l2: float,
    weights: FloatTensor | None = None,
    distance: str = "squared_l2",
) -> FloatTensor:
    """J(theta) on the scale of the summed loss (METHODS §2-3, K negatives: module docstring). -> scalar.

    Shapes: entities [E, d], relations [R, d], triples [n, 3], negatives [K n, 3] (row j n + i is
    triple i's j-th frozen negative; K = 1: negatives[i]), weights [n] (None: all 1). A sample of the
    triples (with their negatives, :func:`negatives_of`) with weights |G| / n is an unbiased estimate of
    the margin part over all of G. ``distance``: psi (:func:`residual_distance`; squared L2 unless the model's
    config says otherwise).
    """
    n = triples.shape[0]
    k = negatives_count(negatives, n)
    distances = transe_distance(entities=entities, relations=relations, triples=torch.cat([triples, negatives]),
                                distance=distance)
    distance, negative_distance = distances.split([n, k * n])  # [n], [K n]
    if k > 1:
        negative_distance = negative_distance.view(k, n)  # row j: every triple's j-th negative
    margins = margin_loss(distance=distance, negative_distance=negative_distance, margin=margin, weights=weights)
    return margins.sum() + l2 / 2 * ((entities**2).sum() + (relations**2).sum())
