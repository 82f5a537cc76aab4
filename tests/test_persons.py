"""One person's view (issue 28): search, B_in and B'_in with the counterfactual, triples with influence, checked
against the analysis's pair tensors and a brute-force recomputation on the tiny graph."""

from __future__ import annotations

import math

import pytest
import torch

from kgbias_core import persons
from kgbias_core.analysis import ModelAnalysis
from kgbias_core.errors import MeasureError


@pytest.fixture(scope="module")
def analysis(tiny_model) -> ModelAnalysis:
    return ModelAnalysis(tiny_model)


def _a_woman_with_occupations(analysis) -> int:
    groups = analysis.groups
    return int(groups.pair_person[groups.pair_female][0])


def test_search_finds_a_person_by_part_of_the_name_exact_first(analysis, tiny_model) -> None:
    woman = _a_woman_with_occupations(analysis)
    name = tiny_model.entity_names[woman]
    found = persons.search_persons(analysis, name.split()[0].lower())
    assert len(found) > 1 and all(name.split()[0].lower() in n.lower() for n in found["name"])
    exact = persons.search_persons(analysis, name)
    assert exact.iloc[0]["person"] == tiny_model.entity_labels[woman] and exact.iloc[0]["gender"] == "female"
    assert persons.search_persons(analysis, "nurse").empty  # an occupation is no person


def test_resolve_person_by_id_or_unique_name_and_clear_errors(analysis, tiny_model) -> None:
    woman = _a_woman_with_occupations(analysis)
    label, name = tiny_model.entity_labels[woman], tiny_model.entity_names[woman]
    assert persons.resolve_person(analysis, label) == woman
    assert persons.resolve_person(analysis, name.upper()) == woman
    with pytest.raises(MeasureError, match="is not a person"):
        persons.resolve_person(analysis, "nurse")
    with pytest.raises(MeasureError, match="no person is named"):
        persons.resolve_person(analysis, "Nobody Atall")


def test_a_persons_b_in_and_counterfactual_match_a_brute_force_computation(analysis, tiny_model) -> None:
    woman = _a_woman_with_occupations(analysis)
    view = persons.person(analysis, tiny_model.entity_labels[woman])
    assert view.gender == "female" and view.degree == int(((tiny_model.triples[:, 0] == woman)
                                                           | (tiny_model.triples[:, 2] == woman)).sum())
    E, R = tiny_model.entity_embeddings.double(), tiny_model.relation_embeddings.double()
    s = tiny_model.schema
    m, f = E[tiny_model.entity_id(s.male)], E[tiny_model.entity_id(s.female)]
    r_p = R[tiny_model.relation_id(s.occupation_relation)]
    alpha = float(analysis.alpha[woman])
    assert len(view.occupations) >= 1
    for row in view.occupations.itertuples():
        o = E[tiny_model.entity_id(row.occupation)]
        v = E[woman] + r_p - o
        psi = float(v @ v)
        b_in = float(-4.0 / alpha * v @ (m - f))
        assert row.score == pytest.approx(psi, rel=1e-4)
        assert row.individual_bias == pytest.approx(b_in, rel=1e-3, abs=1e-6)
        assert row.fisher_individual == pytest.approx(float(-v @ (m - f)), rel=1e-3, abs=1e-6)
        # A woman's counterfactual is her flip to male: psi - B_in (Du Corollary 4, on the summed loss).
        assert row.score_flipped == pytest.approx(psi - b_in, rel=1e-3, abs=1e-6)
        # B_in is the first-order change of psi as the flip moves s by -(2/alpha)(m - f) (a man to a woman):
        # a central difference along that step, independent of the closed form.
        def psi_at(t: float, o: torch.Tensor = o) -> float:
            w = E[woman] - t * (2.0 / alpha) * (m - f) + r_p - o
            return float(w @ w)
        assert (psi_at(1e-3) - psi_at(-1e-3)) / 2e-3 == pytest.approx(b_in, rel=1e-4, abs=1e-9)


def test_a_persons_triples_carry_their_influence_on_the_occupation(analysis, tiny_model) -> None:
    woman = _a_woman_with_occupations(analysis)
    occupation = persons.person(analysis, tiny_model.entity_labels[woman]).occupations.iloc[0]["occupation"]
    frame = persons.person_triples(analysis, woman, occupation)
    triples = tiny_model.triples
    mine = ((triples[:, 0] == woman) | (triples[:, 2] == woman)).nonzero().squeeze(-1)
    assert sorted(frame["triple"]) == sorted(mine.tolist())
    influence = analysis.influence(occupation)
    for row in frame.itertuples():
        assert row.influence == pytest.approx(float(influence[row.triple]), rel=1e-6, abs=1e-12)
    assert frame["influence"].abs().is_monotonic_decreasing
    assert (frame["in words"].str.len() > 0).all()
    assert math.isnan(persons.person_triples(analysis, woman).iloc[0]["influence"])
