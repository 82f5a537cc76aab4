"""Du et al.'s group-level bias measures for TransE (B_gr, its bootstrap interval, B_wo).

Notation of METHODS: psi(h, r, t) = ||h + r - t||_2^2, lower = more plausible; for a pair
(s, o) the residual is v = s + r_p - o. An imported model keeps its own engine's psi (L1 or L2,
``distance``, :func:`~kgbias_core.embeddings.objective.residual_distance`).
**Positive bias = male-leaning**, everywhere.
All functions are pure and run on the device of the embeddings they are given.
"""

from __future__ import annotations

import torch

from kgbias_core.embeddings.objective import residual_distance
from kgbias_core.measures.bootstrap import percentile_interval, resampled_group_means
from kgbias_core.measures.groups import OccupationGroups
from kgbias_core.types import FloatTensor, LongTensor


def pair_residuals(
    *, entity_embeddings: FloatTensor, relation_embeddings: FloatTensor, groups: OccupationGroups
) -> FloatTensor:
    """v = s + r_p - o for every (person, occupation) pair. Shapes: [E, d], [R, d] -> [P, d]."""
    occupation = groups.occupations[groups.pair_occupation]
    return (
        entity_embeddings[groups.pair_person]
        + relation_embeddings[groups.occupation_relation]
        - entity_embeddings[occupation]
    )


def summed_by(values: FloatTensor, index: LongTensor, size: int) -> FloatTensor:
    """out[k] = sum of values[i] over the i with index[i] = k, for k < size. [n], [n] -> [size].

    Accumulated in float64 and returned in ``values``' dtype: on a GPU ``index_add_`` adds atomically,
    in an order that changes from run to run (B_gr moved by up to 1e-4 between two measurements of
    one FB13 model on an H100 with float32 sums); in float64 the order only touches bits that the
    rounding back drops.
    """
    sums = torch.zeros(size, dtype=torch.float64, device=values.device)
    return sums.index_add_(0, index, values.to(torch.float64)).to(values.dtype)


def group_means(values: FloatTensor, groups: OccupationGroups) -> tuple[FloatTensor, FloatTensor]:
    """Per-occupation means over M_o and over F_o of a per-pair value [P] -> ([O], [O]); NaN if empty."""
    n_occ = groups.n_occupations
    female = groups.pair_female
    sums = torch.stack([summed_by(values[~female], groups.pair_occupation[~female], n_occ),
                        summed_by(values[female], groups.pair_occupation[female], n_occ)])
    counts = torch.stack([groups.n_male, groups.n_female]).to(values)
    means = sums / counts  # 0/0 = NaN marks an empty group
    return means[0], means[1]


def group_bias(
    *, entity_embeddings: FloatTensor, relation_embeddings: FloatTensor, groups: OccupationGroups,
    distance: str = "squared_l2",
) -> FloatTensor:
    """B_gr(o) = mean_{s in F_o} psi(s, r_p, o) - mean_{s in M_o} psi(s, r_p, o) (Du §3.1, METHODS §1).

    Shapes: entity_embeddings [E, d], relation_embeddings [R, d] -> [O] (order of
    ``groups.occupations``). Positive: women are linked to o with the larger distance, i.e. the
    embedding leans male. NaN where M_o or F_o is empty (callers report why). ``distance``: the
    model's psi (``model.config.distance``).
    """
    psi = residual_distance(pair_residuals(
        entity_embeddings=entity_embeddings, relation_embeddings=relation_embeddings, groups=groups
    ), distance=distance)
    male, female = group_means(psi, groups)
    return female - male


def group_bias_interval(
    *,
    entity_embeddings: FloatTensor,
    relation_embeddings: FloatTensor,
    groups: OccupationGroups,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    distance: str = "squared_l2",
) -> tuple[FloatTensor, FloatTensor]:
    """Percentile bootstrap interval of B_gr over persons, resampled within M_o and F_o. -> ([O], [O]).

    Each resample draws |M_o| men and |F_o| women with replacement, for all occupations at once
    (:func:`~kgbias_core.measures.bootstrap.resampled_group_means`). NaN where a group is empty.
    """
    psi = residual_distance(pair_residuals(
        entity_embeddings=entity_embeddings, relation_embeddings=relation_embeddings, groups=groups
    ), distance=distance)
    means = resampled_group_means(psi, groups, n_resamples=n_resamples, seed=seed)  # [B, O, (male, female)]
    return percentile_interval(means[..., 1] - means[..., 0], confidence)


def projection_bias(*, entity_embeddings: FloatTensor, groups: OccupationGroups) -> FloatTensor:
    """B_wo(o) = o . (m - f) (Du §3.1, after Bourli & Pitoura; METHODS §1). [E, d] -> [O].

    Positive: the occupation's vector points along the male-minus-female direction.
    """
    direction = entity_embeddings[groups.male] - entity_embeddings[groups.female]
    return entity_embeddings[groups.occupations] @ direction
