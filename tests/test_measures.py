"""Every vectorised measure against a naive Python loop over the persons of each occupation."""

from __future__ import annotations

import math

import pytest
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.influence.closed_form import hessian_diagonal
from kgbias_core.measures.group_bias import group_bias, group_bias_interval, projection_bias
from kgbias_core.measures.groups import occupation_groups
from kgbias_core.measures.individual_bias import aggregate_individual, fisher_individual_bias, individual_bias


def naive_groups(model):
    """(occupation -> (men, women)) and degrees, by plain loops over the labelled triples."""
    s = model.schema
    labels, rels = model.entity_labels, model.relation_labels
    triples = [(labels[h], rels[r], labels[t]) for h, r, t in model.triples.tolist()]
    genders: dict[str, set[str]] = {}
    for h, r, t in triples:
        if r == s.gender_relation:
            genders.setdefault(h, set()).add(t)
    groups: dict[str, tuple[set[str], set[str]]] = {}
    for h, r, t in triples:
        if r == s.occupation_relation:
            men, women = groups.setdefault(t, (set(), set()))
            if genders.get(h) == {s.male}:
                men.add(h)
            elif genders.get(h) == {s.female}:
                women.add(h)
    degree: dict[str, int] = {}
    for h, _, t in triples:
        degree[h] = degree.get(h, 0) + 1
        degree[t] = degree.get(t, 0) + 1
    return groups, degree


def test_groups_match_naive_counts(tiny_model) -> None:
    groups = occupation_groups(tiny_model)
    naive, degree = naive_groups(tiny_model)
    assert sorted(tiny_model.entity_labels[o] for o in groups.occupations.tolist()) == sorted(naive)
    for i, o in enumerate(groups.occupations.tolist()):
        men, women = naive[tiny_model.entity_labels[o]]
        assert (int(groups.n_male[i]), int(groups.n_female[i])) == (len(men), len(women))
        m, f = groups.members(i)
        assert {tiny_model.entity_labels[p] for p in m.tolist()} == men
        assert {tiny_model.entity_labels[p] for p in f.tolist()} == women
    for label, d in degree.items():
        assert int(groups.degree[tiny_model.entity_id(label)]) == d
    assert int(groups.n_other.sum()) > 0  # non-binary persons are counted, not dropped


def test_every_measure_equals_a_naive_loop(tiny_model) -> None:
    E = tiny_model.entity_embeddings.double()
    R = tiny_model.relation_embeddings.double()
    groups = occupation_groups(tiny_model)
    naive, degree = naive_groups(tiny_model)
    s = tiny_model.schema
    m, f = E[tiny_model.entity_id(s.male)], E[tiny_model.entity_id(s.female)]
    r_p = R[tiny_model.relation_id(s.occupation_relation)]
    n_triples = tiny_model.triples.shape[0]
    lam = 7.5
    alpha = hessian_diagonal(degree=groups.degree, n_triples=n_triples, damping=lam)
    b_gr = group_bias(entity_embeddings=E, relation_embeddings=R, groups=groups)
    b_wo = projection_bias(entity_embeddings=E, groups=groups)
    b_in = individual_bias(entity_embeddings=E, relation_embeddings=R, groups=groups, alpha=alpha.double())
    b_fi = fisher_individual_bias(entity_embeddings=E, relation_embeddings=R, groups=groups)
    in_v, in_w = aggregate_individual(b_in, groups)
    mean_degree = 2 * n_triples / tiny_model.n_entities
    for i, o in enumerate(groups.occupations.tolist()):
        men, women = naive[tiny_model.entity_labels[o]]
        o_vec = E[o]

        def psi(p: str, o_vec: torch.Tensor = o_vec) -> float:
            return float(((E[tiny_model.entity_id(p)] + r_p - o_vec) ** 2).sum())

        def bin_(p: str, o_vec: torch.Tensor = o_vec) -> float:
            v = E[tiny_model.entity_id(p)] + r_p - o_vec
            a = max(degree[p] - mean_degree, 0) + lam
            return float(-4 / a * (v @ (m - f)))

        assert float(b_wo[i]) == pytest.approx(float(o_vec @ (m - f)), abs=1e-9)
        if men and women:
            expected = sum(map(psi, women)) / len(women) - sum(map(psi, men)) / len(men)
            assert float(b_gr[i]) == pytest.approx(expected, rel=1e-9, abs=1e-9)
            weighted = sum(map(bin_, women)) / len(women) + sum(map(bin_, men)) / len(men)
            assert float(in_w[i]) == pytest.approx(weighted, rel=1e-6, abs=1e-9)
        else:
            assert math.isnan(float(b_gr[i])) and math.isnan(float(in_w[i]))
        everyone = men | women
        if everyone:
            assert float(in_v[i]) == pytest.approx(sum(map(bin_, everyone)) / len(everyone), rel=1e-6, abs=1e-9)
    # Per pair: B'_in = -v.(m - f) and B_in = 4/alpha_s * B'_in.
    v = E[groups.pair_person] + r_p - E[groups.occupations[groups.pair_occupation]]
    assert torch.allclose(b_fi, -(v @ (m - f)))
    assert torch.allclose(b_in, 4 / alpha.double()[groups.pair_person] * b_fi)


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


def test_measures_table_reports_empty_groups_in_words(tiny_model) -> None:
    table = ModelAnalysis(tiny_model, n_resamples=100).measures
    empty = table[(table.n_male == 0) | (table.n_female == 0)]
    assert (empty.note.str.contains("no women|no men")).all()
    full = table[(table.n_male > 0) & (table.n_female > 0)]
    assert full.group_bias.notna().all() and full.fisher_bp.notna().all()


def test_influence_table_directions(tiny_model) -> None:
    analysis = ModelAnalysis(tiny_model, n_resamples=10)
    table = analysis.measures
    occupation = table[(table.n_male > 3) & (table.n_female > 3)].occupation.iloc[0]
    raises = analysis.influence_table(occupation, top=5, direction="raises")
    lowers = analysis.influence_table(occupation, top=5, direction="lowers")
    both = analysis.influence_table(occupation, top=10)
    assert (raises.influence > 0).all() and raises.influence.is_monotonic_decreasing
    assert (lowers.influence < 0).all() and lowers.influence.is_monotonic_increasing
    assert both.influence.abs().is_monotonic_decreasing
    assert max(raises.influence.max(), -lowers.influence.min()) == both.influence.abs().max()


def test_warm_up_computes_the_influence_context_once(tiny_model, monkeypatch) -> None:
    import kgbias_core.analysis as analysis_module

    calls = []
    real = analysis_module.influence_context

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(analysis_module, "influence_context", counted)
    analysis = ModelAnalysis(tiny_model, n_resamples=10)
    thread = analysis.warm_up()
    context = analysis.context  # waits for the warm-up thread rather than computing again
    thread.join()
    assert analysis.context is context and len(calls) == 1
