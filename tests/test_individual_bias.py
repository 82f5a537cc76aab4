"""B_in, B'_in and their aggregates (kgbias_core.measures.individual_bias) against naive loops."""

from __future__ import annotations

import math

import pytest
import torch

from kgbias_core.influence.closed_form import hessian_diagonal
from kgbias_core.measures.groups import occupation_groups
from kgbias_core.measures.individual_bias import aggregate_individual, fisher_individual_bias, individual_bias

from .conftest import double_vectors, naive_groups


def test_individual_biases_and_aggregates_equal_a_naive_loop(tiny_model) -> None:
    E, R, m, f, r_p = double_vectors(tiny_model)
    groups = occupation_groups(tiny_model)
    naive, degree = naive_groups(tiny_model)
    n_triples = tiny_model.triples.shape[0]
    lam = 7.5
    alpha = hessian_diagonal(degree=groups.degree, n_triples=n_triples, damping=lam)
    b_in = individual_bias(entity_embeddings=E, relation_embeddings=R, groups=groups, alpha=alpha.double())
    b_fi = fisher_individual_bias(entity_embeddings=E, relation_embeddings=R, groups=groups)
    in_v, in_w = aggregate_individual(b_in, groups)
    mean_degree = 2 * n_triples / tiny_model.n_entities
    for i, o in enumerate(groups.occupations.tolist()):
        men, women = naive[tiny_model.entity_labels[o]]

        def bin_(p: str, o_vec: torch.Tensor = E[o]) -> float:
            v = E[tiny_model.entity_id(p)] + r_p - o_vec
            a = max(degree[p] - mean_degree, 0) + lam
            return float(-4 / a * (v @ (m - f)))

        if men and women:
            weighted = sum(map(bin_, women)) / len(women) + sum(map(bin_, men)) / len(men)
            assert float(in_w[i]) == pytest.approx(weighted, rel=1e-6, abs=1e-9)
        else:
            assert math.isnan(float(in_w[i]))
        everyone = men | women
        if everyone:
            assert float(in_v[i]) == pytest.approx(sum(map(bin_, everyone)) / len(everyone), rel=1e-6, abs=1e-9)
    # Per pair: B'_in = -v.(m - f) and B_in = 4/alpha_s * B'_in.
    v = E[groups.pair_person] + r_p - E[groups.occupations[groups.pair_occupation]]
    assert torch.allclose(b_fi, -(v @ (m - f)))
    assert torch.allclose(b_in, 4 / alpha.double()[groups.pair_person] * b_fi)
