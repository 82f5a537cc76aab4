"""Du et al.'s individual bias B_in and Fisher's one-step B'_in per (person, occupation) pair.

Notation of METHODS: psi(h, r, t) = ||h + r - t||_2^2; v = s + r_p - o. **Positive bias =
male-leaning**. Pure functions on the device of the embeddings they are given. Both measures move
s along the gradient g = d psi / d v, Du's 2v; an imported model's L1 or L2 psi has its own g
(:func:`~kgbias_core.embeddings.objective.distance_gradient`), and there B_in's alpha_s, derived
for squared L2, is an approximation.
"""

from __future__ import annotations

import torch

from kgbias_core.embeddings.objective import distance_gradient
from kgbias_core.measures.bootstrap import percentile_interval, resampled_group_means
from kgbias_core.measures.group_bias import group_means, pair_residuals, summed_by
from kgbias_core.measures.groups import OccupationGroups
from kgbias_core.types import FloatTensor


def gradient_projection(
    *, entity_embeddings: FloatTensor, relation_embeddings: FloatTensor, groups: OccupationGroups,
    distance: str = "squared_l2",
) -> FloatTensor:
    """g . (m - f) for every (person, occupation) pair, g = d psi / d v at v = s + r_p - o. -> [P].

    The one pass over the pairs that B_in and B'_in share (each is a per-pair multiple of it). For
    squared L2, g . (m - f) = 2 (s . d + r_p . d - o . d) with d = m - f: one [E] matrix-vector
    product and gathers of scalars instead of the [P, d] residuals (3M x d floats at 20M triples).
    """
    direction = entity_embeddings[groups.male] - entity_embeddings[groups.female]
    if distance == "squared_l2":
        along = entity_embeddings @ direction  # [E] e . d
        occupation = groups.occupations[groups.pair_occupation]
        return 2 * (along[groups.pair_person] + relation_embeddings[groups.occupation_relation] @ direction
                    - along[occupation])
    g = distance_gradient(pair_residuals(
        entity_embeddings=entity_embeddings, relation_embeddings=relation_embeddings, groups=groups
    ), distance=distance)
    return g @ direction


def individual_bias(
    *,
    entity_embeddings: FloatTensor,
    relation_embeddings: FloatTensor,
    groups: OccupationGroups,
    alpha: FloatTensor,
    distance: str = "squared_l2",
    projection: FloatTensor | None = None,
) -> FloatTensor:
    """B_in(s, o) = -2 / alpha_s * g . (m - f), g = d psi / d v = 2v at v = s + r_p - o, i.e.
    -4 / alpha_s * v . (m - f) (Du Corollary 4, METHODS §5). -> [P].

    The change of psi(s, r_p, o) when s's gender fact flips, predicted by influence. Positive =
    male-leaning. Du's extra constant 1/|G| is left out (it changes no ranking or correlation).
    ``projection``: :func:`gradient_projection` where the caller has it already.
    """
    if projection is None:
        projection = gradient_projection(entity_embeddings=entity_embeddings, relation_embeddings=relation_embeddings,
                                         groups=groups, distance=distance)
    return -2.0 / alpha[groups.pair_person] * projection


def fisher_individual_bias(
    *, entity_embeddings: FloatTensor, relation_embeddings: FloatTensor, groups: OccupationGroups,
    distance: str = "squared_l2", projection: FloatTensor | None = None,
) -> FloatTensor:
    """B'_in(s, o) = -g . (m - f) / 2 = -v . (m - f) for squared L2, up to a positive constant
    (Fisher's one-step update, Du Eq. 6). -> [P].

    Moving s a small step along (m - f) changes psi(s, r_p, o) by step g.(m - f); the sign is
    flipped so that positive = the occupation becomes more plausible for a more male s.
    ``projection``: :func:`gradient_projection` where the caller has it already.
    """
    if projection is None:
        projection = gradient_projection(entity_embeddings=entity_embeddings, relation_embeddings=relation_embeddings,
                                         groups=groups, distance=distance)
    return -0.5 * projection


def aggregate_individual(values: FloatTensor, groups: OccupationGroups) -> tuple[FloatTensor, FloatTensor]:
    """Vanilla and weighted aggregates of a per-pair bias (Du §3.3, METHODS §5). [P] -> ([O], [O]).

    vanilla(o) = mean over M_o ∪ F_o; weighted(o) = mean_{F_o} + mean_{M_o} (each gender counts the
    same however unbalanced the occupation). Vanilla is NaN only with no persons at all, weighted
    whenever a group is empty.
    """
    male, female = group_means(values, groups)
    total = summed_by(values, groups.pair_occupation, groups.n_occupations)
    vanilla = total / (groups.n_male + groups.n_female).to(values)
    return vanilla, female + male


def aggregate_interval(
    values: FloatTensor, groups: OccupationGroups, *, n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0
) -> tuple[tuple[FloatTensor, FloatTensor], tuple[FloatTensor, FloatTensor]]:
    """Percentile bootstrap intervals of the vanilla and the weighted aggregate of a per-pair bias.

    Resampled within M_o and F_o (:func:`~kgbias_core.measures.bootstrap.resampled_group_means`),
    each aggregate computed as in :func:`aggregate_individual` from the resampled group means.
    Shapes: values [P] -> ((vanilla low [O], high [O]), (weighted low [O], high [O])). NaN where the
    aggregate is: vanilla with no persons, weighted with an empty group.
    """
    means = resampled_group_means(values, groups, n_resamples=n_resamples, seed=seed)  # [B, O, (male, female)]
    sizes = torch.stack([groups.n_male, groups.n_female], dim=-1).to(values)  # [O, 2]
    # An empty group's NaN mean enters the vanilla mean with weight 0, not as NaN.
    vanilla = (torch.nan_to_num(means) * sizes).sum(-1) / sizes.sum(-1)  # [B, O]; 0/0 = NaN: no persons
    weighted = means.sum(-1)  # [B, O]
    return percentile_interval(vanilla, confidence), percentile_interval(weighted, confidence)
