"""B_gr, its bootstrap interval and B_wo (kgbias_core.measures.group_bias) against naive loops."""

from __future__ import annotations

import pytest
import torch

from kgbias_core.measures.group_bias import group_bias, group_bias_interval, projection_bias, summed_by
from kgbias_core.measures.groups import occupation_groups

from .conftest import double_vectors, naive_group_bias


def test_group_bias_and_projection_equal_a_naive_loop(tiny_model) -> None:
    E, R, m, f, _ = double_vectors(tiny_model)
    groups = occupation_groups(tiny_model)
    b_gr = group_bias(entity_embeddings=E, relation_embeddings=R, groups=groups)
    b_wo = projection_bias(entity_embeddings=E, groups=groups)
    for i, o in enumerate(groups.occupations.tolist()):
        assert float(b_wo[i]) == pytest.approx(float(E[o] @ (m - f)), abs=1e-9)
        expected = naive_group_bias(tiny_model, tiny_model.entity_labels[o])
        assert float(b_gr[i]) == pytest.approx(expected, rel=1e-9, abs=1e-9, nan_ok=True)


def test_bootstrap_interval_brackets_the_estimate_and_narrows_with_confidence(tiny_model) -> None:
    groups = occupation_groups(tiny_model)
    args = dict(entity_embeddings=tiny_model.entity_embeddings, relation_embeddings=tiny_model.relation_embeddings,
                groups=groups, n_resamples=400)
    b = group_bias(entity_embeddings=args["entity_embeddings"], relation_embeddings=args["relation_embeddings"],
                   groups=groups)
    low, high = group_bias_interval(**args, confidence=0.95)
    low50, high50 = group_bias_interval(**args, confidence=0.5)
    both = (groups.n_male > 1) & (groups.n_female > 1)
    assert (low[both] <= b[both] + 1e-5).all() and (b[both] <= high[both] + 1e-5).all()
    assert ((high50 - low50)[both] <= (high - low)[both] + 1e-6).all()
    assert torch.isnan(low[(groups.n_male == 0) | (groups.n_female == 0)]).all()
    # Same seed, same interval: the bootstrap is deterministic.
    again, _ = group_bias_interval(**args, confidence=0.95)
    assert torch.equal(torch.nan_to_num(again), torch.nan_to_num(low))


def test_summed_by_equals_a_loop_in_float64_and_keeps_the_dtype() -> None:
    generator = torch.Generator().manual_seed(0)
    # Large and small values in one group: float32 sums would depend on the order they are added in.
    values = (torch.randn(500, generator=generator) * 10.0 ** torch.randint(-4, 5, (500,), generator=generator))
    index = torch.randint(7, (500,), generator=generator)
    sums = summed_by(values, index, 9)
    assert sums.dtype == torch.float32 and sums.shape == (9,)
    expected = [sum(float(v) for v, i in zip(values.double(), index, strict=True) if int(i) == k) for k in range(9)]
    assert sums.tolist() == pytest.approx([float(torch.tensor(e, dtype=torch.float32)) for e in expected], rel=0, abs=0)
    shuffled = torch.randperm(500, generator=generator)
    assert torch.equal(summed_by(values[shuffled], index[shuffled], 9), sums)  # the order does not show
