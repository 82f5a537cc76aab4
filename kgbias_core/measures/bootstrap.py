"""Percentile bootstrap intervals over persons, for every measure that is a mean over persons.

Two resampling schemes, each vectorised over all occupations or professions at once:

- :func:`resampled_group_means`: per occupation, |M_o| men and |F_o| women drawn with replacement
  within their own group (a stratified bootstrap: each resample keeps the group sizes), for
  B_gr and the aggregates of B_in;
- :func:`mean_interval`: J persons drawn with replacement from all J, for Fisher's b_p, a mean
  over every person.

The interval of a measure is the (1 - confidence)/2 and (1 + confidence)/2 quantiles of its
resampled values (:func:`percentile_interval`); NaN where a group the measure needs is empty.
The seed is fixed, so the same table always gets the same interval.
"""

from __future__ import annotations

import torch

from kgbias_core.measures.groups import OccupationGroups
from kgbias_core.types import FloatTensor


def percentile_interval(resampled: FloatTensor, confidence: float) -> tuple[FloatTensor, FloatTensor]:
    """Quantiles of ``resampled`` [B, ...] over its first dimension -> (low [...], high [...])."""
    tail = (1.0 - confidence) / 2
    return torch.quantile(resampled, tail, dim=0), torch.quantile(resampled, 1.0 - tail, dim=0)


def resampled_group_means(
    values: FloatTensor, groups: OccupationGroups, *, n_resamples: int, seed: int = 0
) -> FloatTensor:
    """Means over M_o and over F_o of a per-pair value [P], in ``n_resamples`` stratified resamples.

    Each resample draws |M_o| men and |F_o| women with replacement, for all occupations at once
    (one [n_resamples, P] index tensor). -> [n_resamples, O, 2], last axis (male, female); NaN
    where the group is empty.
    """
    device = values.device
    key = groups.pair_occupation * 2 + groups.pair_female.long()  # [P] group of each pair
    order = torch.argsort(key, stable=True)
    key, values = key[order], values[order]
    sizes = torch.bincount(key, minlength=2 * groups.n_occupations)  # [2O]
    offsets = torch.cumsum(sizes, 0) - sizes
    generator = torch.Generator(device="cpu").manual_seed(seed)
    uniform = torch.rand(n_resamples, key.shape[0], generator=generator).to(device)  # [B, P]
    picks = offsets[key] + (uniform * sizes[key]).long().clamp_max(sizes[key] - 1)  # [B, P]
    sums = torch.zeros(n_resamples, 2 * groups.n_occupations, dtype=values.dtype, device=device)
    sums.scatter_add_(1, key.expand(n_resamples, -1), values[picks])
    return (sums / sizes.to(values)).view(n_resamples, groups.n_occupations, 2)  # 0/0 = NaN: empty group


def mean_interval(
    values: FloatTensor, *, n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0
) -> tuple[FloatTensor, FloatTensor]:
    """Percentile interval of the mean over persons of ``values`` [J, K] (one column per profession).

    A resample draws J persons with replacement: its mean is ``counts @ values / J`` with
    ``counts`` [B, J] how often each person was drawn, so all K columns share the resamples.
    -> (low [K], high [K]).
    """
    n = values.shape[0]
    generator = torch.Generator(device="cpu").manual_seed(seed)
    draws = torch.randint(n, (n_resamples, n), generator=generator).to(values.device)  # [B, J]
    counts = torch.zeros(n_resamples, n, dtype=values.dtype, device=values.device)
    counts.scatter_add_(1, draws, torch.ones_like(counts))
    return percentile_interval(counts @ values / n, confidence)  # [B, K] -> ([K], [K])
