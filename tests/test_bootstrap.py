"""Percentile bootstrap intervals over persons (kgbias_core.measures.bootstrap) against naive loops
over the same draws, and the intervals of B_in's aggregates and b_p in the measures table."""

from __future__ import annotations

import math

import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.measures.bootstrap import mean_interval, resampled_group_means
from kgbias_core.measures.groups import occupation_groups
from kgbias_core.measures.individual_bias import aggregate_individual, aggregate_interval
from kgbias_core.tables import measures_table


def test_mean_interval_equals_the_quantiles_of_a_loop_over_the_same_draws() -> None:
    values = torch.randn(50, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    low, high = mean_interval(values, n_resamples=200, confidence=0.9, seed=4)
    draws = torch.randint(50, (200, 50), generator=torch.Generator().manual_seed(4))  # the function's draws
    means = torch.stack([values[draws[b]].mean(dim=0) for b in range(200)])  # [B, 3], one resample at a time
    torch.testing.assert_close(low, torch.quantile(means, 0.05, dim=0))
    torch.testing.assert_close(high, torch.quantile(means, 0.95, dim=0))


def test_resampled_group_means_draw_only_within_each_group(tiny_model) -> None:
    groups = occupation_groups(tiny_model)
    # Every pair of occupation i holds the value 10 i for men and 10 i + 1 for women: a resample
    # within the groups can only give back exactly those means.
    values = (groups.pair_occupation * 10 + groups.pair_female.long()).double()
    means = resampled_group_means(values, groups, n_resamples=7)  # [7, O, 2]
    expected = torch.stack([torch.arange(groups.n_occupations) * 10.0,
                            torch.arange(groups.n_occupations) * 10.0 + 1], dim=-1).double()
    expected[groups.n_male == 0, 0] = math.nan
    expected[groups.n_female == 0, 1] = math.nan
    torch.testing.assert_close(means, expected.expand(7, -1, -1), equal_nan=True)


def test_aggregate_intervals_bracket_the_aggregates_and_are_nan_where_they_are(tiny_model) -> None:
    groups = occupation_groups(tiny_model)
    values = ModelAnalysis(tiny_model).pair_biases[0].double()
    vanilla, weighted = aggregate_individual(values, groups)
    (v_low, v_high), (w_low, w_high) = aggregate_interval(values, groups, n_resamples=400)
    both = (groups.n_male > 1) & (groups.n_female > 1)
    assert (v_low[both] <= vanilla[both] + 1e-9).all() and (vanilla[both] <= v_high[both] + 1e-9).all()
    assert (w_low[both] <= weighted[both] + 1e-9).all() and (weighted[both] <= w_high[both] + 1e-9).all()
    one_gender = (groups.n_male == 0) ^ (groups.n_female == 0)
    assert one_gender.any() and torch.isnan(w_low[one_gender]).all() and not torch.isnan(v_low[one_gender]).any()


def test_the_measures_table_carries_an_interval_for_every_mean_over_persons(tiny_model) -> None:
    table = measures_table(ModelAnalysis(tiny_model), n_resamples=100)
    both = table[(table["n_male"] > 1) & (table["n_female"] > 1)]
    for measure in ("group_bias", "individual_bias_vanilla", "individual_bias_weighted", "fisher_bp"):
        assert (both[f"{measure}_low"] <= both[measure] + 1e-6).all(), measure
        assert (both[measure] <= both[f"{measure}_high"] + 1e-6).all(), measure
    assert "projection_bias_low" not in table  # one projection: nothing to resample
    # b_p is a mean over every person with a binary gender: its interval exists for every occupation
    assert (table["fisher_bp_high"] > table["fisher_bp_low"]).all()
