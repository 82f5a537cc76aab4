"""Readable tables (kgbias_core.tables) against naive loops over the labelled triples, and one gender
reader on every path: a person with two gender values reads the same in every table."""

from __future__ import annotations

import math
from collections import Counter

import pandas as pd
import pytest
import torch

from kgbias_core import tables
from kgbias_core.analysis import ModelAnalysis
from kgbias_core.data.graph import AMBIGUOUS_GENDER
from kgbias_core.embeddings.pykeen_bridge import pykeen_model
from kgbias_core.measures.fisher import fisher_bias

from .conftest import TWO_GENDER_PERSON, naive_genders, naive_groups


@pytest.fixture(scope="module")
def analysis(tiny_model) -> ModelAnalysis:
    return ModelAnalysis(tiny_model)


@pytest.fixture(scope="module")
def measures(analysis) -> object:
    return tables.measures_table(analysis, n_resamples=100)


def both_genders(measures, minimum: int = 4) -> str:
    return measures[(measures.n_male >= minimum) & (measures.n_female >= minimum)].occupation.iloc[0]


def naive_gender_word(model, label: str) -> str:
    values = naive_genders(model).get(label)
    if not values:
        return ""
    if len(values) > 1:
        return "other"
    (value,) = values
    return {model.schema.male: "male", model.schema.female: "female"}.get(value, "other")


def naive_persons(model) -> set[str]:
    """Labels of the persons per the schema: heads of a gender or an occupation fact, by a plain loop."""
    s = model.schema
    return {model.entity_labels[h] for h, r, _ in model.triples.tolist()
            if model.relation_labels[r] in (s.gender_relation, s.occupation_relation)}


def test_measures_table_counts_and_group_bias_match_naive_loops(tiny_model, analysis, measures) -> None:
    assert list(measures.columns) == [*tables.MEASURE_COLUMNS, "n_other_gender", "n_unknown_gender", "note"]
    naive, _ = naive_groups(tiny_model)
    genders = naive_genders(tiny_model)
    occupations = [tiny_model.entity_labels[t] for _, r, t in tiny_model.triples.tolist()
                   if tiny_model.relation_labels[r] == tiny_model.schema.occupation_relation]
    assert sorted(measures.occupation) == sorted(set(occupations))
    for row in measures.itertuples():
        men, women = naive[row.occupation]
        holders = {tiny_model.entity_labels[h] for h, r, t in tiny_model.triples.tolist()
                   if tiny_model.relation_labels[r] == tiny_model.schema.occupation_relation
                   and tiny_model.entity_labels[t] == row.occupation}
        assert (row.n_male, row.n_female) == (len(men), len(women))
        assert row.n_unknown_gender == sum(1 for p in holders if p not in genders)
        assert row.n_other_gender == len(holders) - len(men) - len(women) - row.n_unknown_gender
        assert row.name == tiny_model.entity_names[tiny_model.entity_id(row.occupation)]
        b_gr = float(analysis.group_bias(row.occupation))
        assert row.group_bias == b_gr or (math.isnan(b_gr) and math.isnan(row.group_bias))


def test_measures_table_reports_empty_groups_in_words(measures) -> None:
    empty = measures[(measures.n_male == 0) | (measures.n_female == 0)]
    assert (empty.note.str.contains("no women|no men")).all()
    full = measures[(measures.n_male > 0) & (measures.n_female > 0)]
    assert full.group_bias.notna().all() and full.fisher_bp.notna().all()


def test_persons_table_lists_the_men_and_women_of_the_occupation(tiny_model, analysis, measures) -> None:
    occupation = both_genders(measures)
    persons = tables.persons_table(analysis, occupation)
    assert list(persons.columns) == ["person", "name", "gender", "degree", "individual_bias", "fisher_individual",
                                     "individual_bias_centred", "fisher_individual_centred"]
    naive, degree = naive_groups(tiny_model)
    men, women = naive[occupation]
    assert sorted(persons.person) == sorted(men | women)
    for row in persons.itertuples():
        assert row.gender == ("male" if row.person in men else "female")
        assert row.degree == degree[row.person]


def test_centred_individual_bias_subtracts_the_mean_over_every_pair_of_the_graph(analysis, measures) -> None:
    every = tables.persons_of_occupations(analysis, list(measures.occupation))  # every (person, occupation) pair
    assert len(every) == analysis.groups.pair_person.shape[0]
    for column in ("individual_bias", "fisher_individual"):
        assert every[f"{column}_centred"].to_numpy() == pytest.approx(
            (every[column] - every[column].mean()).to_numpy(), abs=1e-5)


def test_persons_of_occupations_stack_each_occupations_persons(analysis, measures) -> None:
    chosen = measures.nlargest(2, "n_female").occupation.tolist()
    stacked = tables.persons_of_occupations(analysis, chosen)
    names = measures.set_index("occupation")["name"]
    for occupation in chosen:
        part = stacked[stacked.occupation == occupation]
        assert part.drop(columns=["occupation", "occupation_name"]).reset_index(drop=True).equals(
            tables.persons_table(analysis, occupation))
        assert set(part.occupation_name) == {names[occupation]}


def test_gender_ratio_table_keeps_occupations_with_both_genders(measures) -> None:
    ratios = tables.gender_ratio_table(measures)
    both = measures[(measures.n_male > 0) & (measures.n_female > 0)]
    assert list(ratios.occupation) == list(both.occupation)
    for row in ratios.itertuples():
        assert row.log_gender_ratio == pytest.approx(math.log(row.n_male / row.n_female))
        assert row.n_persons == row.n_male + row.n_female


def test_triples_in_words_and_their_filter(analysis) -> None:
    frame = tables.triples_in_words(tables.triples_frame(analysis, torch.arange(0, 400)))
    first = frame.iloc[0]
    assert first.relation == "located_in" and first["in words"] == f"{first.head_name}  —located in→  {first.tail_name}"
    assert "none" in set(frame.person_gender) and "" not in set(frame.person_gender)  # e.g. city located_in
    women = tables.filter_triples(frame, relations=["occupation"], genders=["female"])
    assert len(women) == ((frame.relation == "occupation") & (frame.person_gender == "female")).sum() > 0
    assert set(women.relation) == {"occupation"} and set(women.person_gender) == {"female"}
    assert tables.filter_triples(frame, relations=[], genders=[]).equals(frame)


def test_relations_read_in_words_whole() -> None:
    assert tables.relation_words("/people/person/profession") == "profession"
    assert tables.relation_words("/people/person/places_lived./people/place_lived/location") == (
        "places lived → location")  # through a compound node: both ends, not a path cut off
    assert tables.relation_words("cause_of_death") == "cause of death"


def test_triples_frame_reads_labels_and_the_persons_gender_and_degree(tiny_model, analysis) -> None:
    indices = torch.arange(0, tiny_model.triples.shape[0], 37)
    frame = tables.triples_frame(analysis, indices)
    _, degree = naive_groups(tiny_model)
    labels, relations = tiny_model.entity_labels, tiny_model.relation_labels
    persons = naive_persons(tiny_model)
    for row, (h, r, t) in zip(frame.itertuples(), tiny_model.triples[indices].tolist(), strict=True):
        assert (row.head, row.relation, row.tail) == (labels[h], relations[r], labels[t])
        person = labels[h] if labels[h] in persons else labels[t] if labels[t] in persons else ""
        if not person:
            assert (row.person, row.person_gender) == ("", "none") and pd.isna(row.person_degree)
            continue
        assert row.person == person
        assert row.person_gender == (naive_gender_word(tiny_model, person) or "unknown")
        assert row.person_degree == degree[person]


def test_influence_table_directions(analysis, measures) -> None:
    occupation = both_genders(measures)
    raises = tables.influence_table(analysis, occupation, top=5, direction="raises")
    lowers = tables.influence_table(analysis, occupation, top=5, direction="lowers")
    both = tables.influence_table(analysis, occupation, top=10)
    assert (raises.influence > 0).all() and raises.influence.is_monotonic_decreasing
    assert (lowers.influence < 0).all() and lowers.influence.is_monotonic_increasing
    assert both.influence.abs().is_monotonic_decreasing
    assert max(raises.influence.max(), -lowers.influence.min()) == both.influence.abs().max()


def test_influence_extremes_are_the_k_largest_each_way(analysis, measures) -> None:
    occupation = both_genders(measures)
    influence = analysis.influence(occupation).tolist()
    extremes = tables.influence_extremes(analysis, occupation, k=4)
    order = sorted(range(len(influence)), key=lambda i: influence[i])
    expected_lowers = [i for i in order if influence[i] < 0][:4]
    expected_raises = [i for i in reversed(order) if influence[i] > 0][:4]
    assert extremes[extremes.direction == "raises"].triple.tolist() == expected_raises
    assert extremes[extremes.direction == "lowers"].triple.tolist() == expected_lowers


@pytest.mark.parametrize("sign", ["any", "positive", "negative"])
def test_occupation_relation_share_counts_the_top_of_the_moving_triples(tiny_model, analysis, measures, sign) -> None:
    occupation = both_genders(measures)
    influence = analysis.influence(occupation).tolist()
    share = tables.occupation_relation_share(analysis, occupation, fraction=0.05, sign=sign)
    key = {"any": abs, "positive": lambda v: v, "negative": lambda v: -v}[sign]
    moving = [i for i in range(len(influence)) if key(influence[i]) > 0]
    top = sorted(moving, key=lambda i: -key(influence[i]))[:max(1, math.ceil(0.05 * len(moving)))]
    hits = sum(1 for i in top if tiny_model.relation_labels[int(tiny_model.triples[i, 1])] == "occupation")
    assert share["relations"] == ("occupation",)
    assert (share["n_top"], share["n_occupation"]) == (len(top), hits)
    assert share["share"] == pytest.approx(hits / len(top))


def test_attribute_values_count_distinct_persons(tiny_model, analysis) -> None:
    values = tables.attribute_values(analysis, "nationality")
    labels, relations = tiny_model.entity_labels, tiny_model.relation_labels
    pairs = {(labels[h], labels[t]) for h, r, t in tiny_model.triples.tolist() if relations[r] == "nationality"}
    counts = Counter(value for _, value in pairs)
    assert dict(zip(values.label, values.n_persons, strict=True)) == counts
    assert values.n_persons.is_monotonic_decreasing


def test_fisher_table_names_each_profession(tiny_model, analysis) -> None:
    s = tiny_model.schema
    table = tables.fisher_table(analysis, relation="gender", value_a=s.male, value_b=s.female)
    assert list(table.columns[:3]) == ["profession", "label", "name"]
    assert sorted(table.label) == sorted(analysis.groups.labels)
    for row in table.itertuples():
        assert row.label == tiny_model.entity_labels[row.profession]
        assert row.name == tiny_model.entity_names[row.profession]


def test_summary_counts_match_naive_loops(tiny_model, tiny_graph, analysis) -> None:
    summary = tables.summary(analysis)
    genders = naive_genders(tiny_model)
    words = Counter(naive_gender_word(tiny_model, person) for person in genders)
    assert summary["n_persons"] == len(genders)
    assert (summary["n_male"], summary["n_female"], summary["n_other_gender"]) == (
        words["male"], words["female"], words["other"])
    assert summary["n_triples"] == tiny_model.triples.shape[0]
    report = tiny_graph.gender_report()
    assert (summary["n_male"], summary["n_female"]) == (report.n_male, report.n_female)


def test_a_person_with_two_gender_values_reads_as_other_on_every_path(two_gender_model, two_gender_graph) -> None:
    """One reader of gender facts: the measures, the persons, the triples, the summary, Fisher's b_p and the
    graph's gender report all see :data:`TWO_GENDER_PERSON` (male and female facts) as neither man nor woman."""
    model = two_gender_model
    analysis = ModelAnalysis(model)
    person = model.entity_id(TWO_GENDER_PERSON)
    labels, relations = model.entity_labels, model.relation_labels
    own = [(i, relations[r], labels[t]) for i, (h, r, t) in enumerate(model.triples.tolist()) if h == person]
    occupations = [t for _, r, t in own if r == model.schema.occupation_relation]
    assert occupations and naive_genders(model)[TWO_GENDER_PERSON] == {"male", "female"}

    measures = tables.measures_table(analysis, n_resamples=10).set_index("occupation")
    naive, _ = naive_groups(model)
    for occupation in occupations:
        men, women = naive[occupation]
        row = measures.loc[occupation]
        assert (row.n_male, row.n_female) == (len(men), len(women))
        assert row.n_other_gender >= 1
        assert TWO_GENDER_PERSON not in set(tables.persons_table(analysis, occupation).person)

    frame = tables.triples_frame(analysis, torch.tensor([i for i, _, _ in own]))
    assert set(frame.person_gender) == {"other"}

    genders = naive_genders(model)
    single = {p for p, values in genders.items() if len(values) == 1}
    binary = sorted(model.entity_id(p) for p in single if genders[p] <= {model.schema.male, model.schema.female})
    groups = analysis.groups
    expected_bp = fisher_bias(pykeen_model(model), persons=torch.tensor(binary),
                              attribute_relation=groups.gender_relation, value_a=groups.male, value_b=groups.female,
                              occupation_relation=groups.occupation_relation, professions=groups.occupations)
    assert measures.loc[list(groups.labels), "fisher_bp"].tolist() == pytest.approx(expected_bp.tolist(), abs=1e-6)

    summary = tables.summary(analysis)
    report = two_gender_graph.gender_report()
    assert report.other_values.get(AMBIGUOUS_GENDER) == 1
    assert (summary["n_male"], summary["n_female"]) == (report.n_male, report.n_female)
    assert summary["n_other_gender"] == sum(report.other_values.values())
    assert summary["n_persons"] == len(genders) == report.n_male + report.n_female + summary["n_other_gender"]


# --- the person of a triple (issue 28): the entity with a gender or occupation fact, never the occupation's node
#: A person of the tiny graph whose gender fact is dropped (as Carl Reiner's is only in FB15k-237's valid.txt).
NO_GENDER_PERSON = "person_00001"
#: A person named as the tail of an inverse occupation triple.
TAIL_PERSON = "person_00002"


@pytest.fixture(scope="module")
def attribution_analysis(tiny_graph) -> ModelAnalysis:
    """The tiny graph without :data:`NO_GENDER_PERSON`'s gender fact, with "nurse —people_with_this_profession→
    :data:`TAIL_PERSON`" added; a model trained for one epoch (only labels and degrees matter here)."""
    import numpy as np

    from kgbias_core.data.graph import from_labeled_triples
    from kgbias_core.embeddings.config import TrainConfig
    from kgbias_core.embeddings.training import train_model

    graph = tiny_graph
    labels = {i: e for e, i in graph.entity_to_id.items()}
    relations = {i: r for r, i in graph.relation_to_id.items()}
    s = graph.schema
    train = [(labels[h], relations[r], labels[t]) for h, r, t in graph.training.mapped_triples.tolist()]
    assert any(h == NO_GENDER_PERSON and r == s.occupation_relation for h, r, _ in train)
    train = [t for t in train if not (t[0] == NO_GENDER_PERSON and t[1] == s.gender_relation)]
    train.append(("nurse", "people_with_this_profession", TAIL_PERSON))
    edited = from_labeled_triples(name="attribution", train=np.asarray(train, dtype=str), schema=s,
                                  entity_names=graph.entity_names)
    config = TrainConfig(dim=8, epochs=1, batch_size=1024, lr=1e-2, l2=10.0, seed=3)
    return ModelAnalysis(train_model(edited, config, name="attribution", device=torch.device("cpu")))


def _index(model, head: str, relation: str, tail: str) -> int:
    wanted = [model.entity_id(head), model.relation_id(relation), model.entity_id(tail)]
    return int((model.triples == torch.tensor(wanted)).all(dim=1).nonzero()[0, 0])


def test_a_triples_person_is_the_person_head_tail_or_none(attribution_analysis) -> None:
    analysis = attribution_analysis
    model = analysis.model
    s = model.schema
    head_occupation = next(model.entity_labels[t] for h, r, t in model.triples.tolist()
                           if model.entity_labels[h] == NO_GENDER_PERSON
                           and model.relation_labels[r] == s.occupation_relation)
    rows = {
        "head, no gender fact": _index(model, NO_GENDER_PERSON, s.occupation_relation, head_occupation),
        "tail": _index(model, "nurse", "people_with_this_profession", TAIL_PERSON),
        "none": _index(model, "city_00", "located_in", "Aland"),
    }
    frame = tables.triples_frame(analysis, torch.tensor(list(rows.values()))).set_index(pd.Index(list(rows)))
    labelled = [(model.entity_labels[h], model.relation_labels[r], model.entity_labels[t])
                for h, r, t in model.triples.tolist()]
    degree = Counter(e for h, _, t in labelled for e in (h, t))
    genders = naive_genders(model)

    first = frame.loc["head, no gender fact"]
    assert NO_GENDER_PERSON not in genders
    assert (first.person, first.person_gender, first.person_degree) == (NO_GENDER_PERSON, "unknown",
                                                                      degree[NO_GENDER_PERSON])
    assert first.person_degree != degree[head_occupation]  # the occupation node's degree, as before the fix
    assert first.person_name == model.entity_names[model.entity_id(NO_GENDER_PERSON)]

    tail = frame.loc["tail"]
    assert (tail.person, tail.person_gender, tail.person_degree) == (
        TAIL_PERSON, naive_gender_word(model, TAIL_PERSON), degree[TAIL_PERSON])
    assert tail.person_gender in {"male", "female"}

    none = frame.loc["none"]
    assert (none.person, none.person_name, none.person_gender) == ("", "none", "none")
    assert pd.isna(none.person_degree)


def test_du_fig1_chart_draws_the_persons_degree(attribution_analysis) -> None:
    from kgbias_app import charts

    analysis = attribution_analysis
    model = analysis.model
    s = model.schema
    occupation_triples = (model.triples[:, 1] == model.relation_id(s.occupation_relation)).nonzero().squeeze(-1)[:30]
    frame = tables.triples_in_words(tables.triples_frame(analysis, occupation_triples)).assign(influence=1.0)
    fig = charts.influence_degree_scatter(frame)
    drawn = sorted(x for trace in fig.data for x in trace.x)
    persons = model.triples[occupation_triples, 0]
    assert drawn == sorted(float(d) for d in analysis.groups.degree[persons].tolist())
