"""The TransE objective that influence functions can trust (METHODS §2-3), stated once.

    J(theta) = sum_z w_z [gamma + psi(z) - psi(z')]_+ + (l2 / 2) ||theta||^2,   theta = (entities, relations)

with psi(h, r, t) = ||h + r - t||_2^2, z' the frozen negative of z, and w_z = 1 (0 masks z in a
retrain "without S", METHODS §2). Training (:func:`kgbias_core.embeddings.training.train_transe`),
the Hessian-vector products of the iterative influence solvers
(:mod:`kgbias_core.influence.iterative`) and the tests all call these functions, so the loss they
differentiate is the same one.
"""

from __future__ import annotations

import torch
from torch.nn import functional

from kgbias_core.types import FloatTensor, LongTensor


def residual_distance(residuals: FloatTensor, *, distance: str = "squared_l2") -> FloatTensor:
    """psi as a function of the residual v = h + r - t: ||v||_2^2, ||v||_2 or ||v||_1. [n, d] -> [n].

    ``distance`` is a :data:`~kgbias_core.embeddings.config.DISTANCES` name. kgbias trains with
    squared L2; L1 and L2 are the distances of embeddings imported from PyKEEN, DGL-KE or PBG, whose
    measures must rank triples as their own engine does.
    """
    if distance == "squared_l2":
        return residuals.pow(2).sum(-1)
    if distance == "l2":
        return torch.linalg.vector_norm(residuals, ord=2, dim=-1)
    if distance == "l1":
        return residuals.abs().sum(-1)
    raise ValueError(f"unknown distance {distance!r}")


def distance_gradient(residuals: FloatTensor, *, distance: str = "squared_l2") -> FloatTensor:
    """d psi / d v at each residual v: 2v (squared L2), v / ||v||_2 (L2), sign(v) (L1). [n, d] -> [n, d].

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
    raise ValueError(f"unknown distance {distance!r}")


def transe_distance(*, entities: FloatTensor, relations: FloatTensor, triples: LongTensor) -> FloatTensor:
    """psi(h, r, t) = ||h + r - t||_2^2 (METHODS Notation); lower = more plausible.

    Shapes: entities [E, d], relations [R, d], triples [n, 3] (h, r, t ids) -> [n].
    The lookups go through ``embedding`` (not indexing) so that the gradient accumulates into the
    weights as PyKEEN's embeddings do: the hand-written training loop reproduces its numbers bit for bit.
    """
    h = functional.embedding(triples[:, 0], entities)  # [n, d]
    r = functional.embedding(triples[:, 1], relations)  # [n, d]
    t = functional.embedding(triples[:, 2], entities)  # [n, d]
    return ((h + r - t) ** 2).sum(-1)


def margin_loss(
    *, distance: FloatTensor, negative_distance: FloatTensor, margin: float, weights: FloatTensor | None = None
) -> FloatTensor:
    """w_z [gamma + psi(z) - psi(z')]_+ per training triple (METHODS §2-3).

    Shapes: distance psi(z) [n], negative_distance psi(z') [n], weights [n] (None: all 1) -> [n].
    Zero where the margin is inactive: such a triple has no gradient and no influence (METHODS §4).
    """
    loss = torch.relu(margin + distance - negative_distance)
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
) -> FloatTensor:
    """J(theta) on the scale of the summed loss (METHODS §2-3). -> scalar.

    Shapes: entities [E, d], relations [R, d], triples and negatives [n, 3] (row i's frozen
    negative is negatives[i]), weights [n] (None: all 1). A sample of the triples with weights
    |G| / n is an unbiased estimate of the margin part over all of G.
    """
    distances = transe_distance(entities=entities, relations=relations, triples=torch.cat([triples, negatives]))
    distance, negative_distance = distances.split(triples.shape[0])  # [n] each
    margins = margin_loss(distance=distance, negative_distance=negative_distance, margin=margin, weights=weights)
    return margins.sum() + l2 / 2 * ((entities**2).sum() + (relations**2).sum())
