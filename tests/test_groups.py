"""Occupation groups (kgbias_core.measures.groups): M_o, F_o, degrees and label -> index against naive loops."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kgbias_core.data.graph import Gender
from kgbias_core.errors import NOT_AN_OCCUPATION, UNKNOWN_ENTITY, MeasureError
from kgbias_core.measures.groups import occupation_groups

from .conftest import TWO_GENDER_PERSON, naive_genders, naive_groups


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


def test_index_maps_each_occupation_label_to_its_position(tiny_model) -> None:
    groups = occupation_groups(tiny_model)
    for position, entity in enumerate(groups.occupations.tolist()):
        label = tiny_model.entity_labels[entity]
        assert groups.labels[position] == label and groups.index(label) == position


def test_index_names_an_unknown_label_and_a_non_occupation(tiny_model) -> None:
    groups = occupation_groups(tiny_model)
    with pytest.raises(MeasureError) as unknown:
        groups.index("astronaut")
    assert str(unknown.value) == UNKNOWN_ENTITY.format(entity="astronaut")
    with pytest.raises(MeasureError) as not_occupation:
        groups.index(tiny_model.schema.male)
    assert str(not_occupation.value) == NOT_AN_OCCUPATION.format(
        entity=tiny_model.schema.male, relation=tiny_model.schema.occupation_relation
    )


def test_a_person_with_two_gender_values_is_in_neither_group(two_gender_model) -> None:
    groups = occupation_groups(two_gender_model)
    person = two_gender_model.entity_id(TWO_GENDER_PERSON)
    assert naive_genders(two_gender_model)[TWO_GENDER_PERSON] == {"male", "female"}
    assert int(groups.gender[person]) == Gender.OTHER
    assert person not in groups.pair_person.tolist()
    naive, _ = naive_groups(two_gender_model)
    for position, label in enumerate(groups.labels):
        men, women = naive[label]
        assert (int(groups.n_male[position]), int(groups.n_female[position])) == (len(men), len(women))


def test_an_occupation_is_found_by_label_or_by_readable_name(tiny_model) -> None:
    groups = occupation_groups(tiny_model)
    label = groups.labels[3]
    name = groups.names[3]
    assert groups.index(label) == 3
    assert groups.index(name.upper()) == 3 and groups.index(f"  {name.lower()} ") == 3


def test_a_name_shared_by_two_occupations_is_refused_with_the_candidates(tiny_model) -> None:
    groups = occupation_groups(tiny_model)
    twins = replace(groups, names=(groups.names[1], *groups.names[1:]))
    with pytest.raises(MeasureError, match=rf"names 2 occupations: {groups.labels[0]} \(.*\), {groups.labels[1]}"):
        twins.index(groups.names[1])
