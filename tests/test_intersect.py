"""B_gr, the B_in aggregates and b_p within the subpopulations of an attribute (measures.intersections,
subpopulations.intersection_table, the ``intersect`` command) against plain loops over the labelled triples."""

from __future__ import annotations

import math
from dataclasses import replace

import pandas as pd
import pytest
import torch

from kgbias_core import subpopulations, tables
from kgbias_core.analysis import ModelAnalysis
from kgbias_core.cli import main
from kgbias_core.data.schema import AttributeRelation
from kgbias_core.measures.group_bias import group_bias
from kgbias_core.measures.individual_bias import aggregate_individual
from kgbias_core.measures.intersections import (
    attribute_cells,
    attribute_pairs,
    group_bias_difference_test,
    subpopulation_means,
)

from .conftest import double_vectors, naive_genders, naive_groups
from .test_fb13 import DATA, sample  # noqa: F401  (the seeded FB13 sample, trained once per module)

#: The tiny graph's largest occupation: two nationalities with 5 men and 5 women, the others fewer.
OCCUPATION = "actor"
ATTRIBUTE = "nationality"
TOO_FEW = "too few persons (n = "


@pytest.fixture(scope="module")
def analysis(tiny_model) -> ModelAnalysis:
    return ModelAnalysis(tiny_model)


def naive_values(model, relation: str) -> dict[str, set[str]]:
    """Person label -> the labels of its values of ``relation`` (person as head), by a loop over the triples."""
    labels, relations = model.entity_labels, model.relation_labels
    values: dict[str, set[str]] = {}
    for h, r, t in model.triples.tolist():
        if relations[r] == relation:
            values.setdefault(labels[h], set()).add(labels[t])
    return values


def naive_cells(model, occupation: str, values: dict[str, set[str]]) -> dict[str, tuple[set[str], set[str]]]:
    """Value label ("" for none) -> (men, women) of ``occupation`` holding it; a person is in each of its values."""
    men, women = naive_groups(model)[0][occupation]
    cells: dict[str, tuple[set[str], set[str]]] = {}
    for person in men | women:
        for value in values.get(person) or {""}:
            cell = cells.setdefault(value, (set(), set()))
            cell[person in women].add(person)
    return cells


def naive_measures(analysis, occupation: str, values: dict[str, set[str]]) -> dict[str, dict[str, float]]:
    """Per value: B_gr, the vanilla and weighted B_in and b_p, each by plain loops (NaN where undefined)."""
    model = analysis.model
    E, _, m, f, r_p = double_vectors(model)
    o = E[model.entity_id(occupation)]
    alpha = analysis.alpha.double()
    rows = {int(p): j for j, p in enumerate(analysis.fisher_persons.tolist())}
    column = analysis.groups.index(occupation)

    def psi(person: str) -> float:
        return float(((E[model.entity_id(person)] + r_p - o) ** 2).sum())

    def b_in(person: str) -> float:
        s = model.entity_id(person)
        return float(-4.0 / alpha[s] * ((E[s] + r_p - o) @ (m - f)))

    def mean(numbers: list[float]) -> float:
        return sum(numbers) / len(numbers) if numbers else math.nan

    binary = [p for p, held in naive_genders(model).items() if held in ({model.schema.male}, {model.schema.female})]
    found = {}
    for value, (men, women) in naive_cells(model, occupation, values).items():
        holders = [p for p in binary if (value in values.get(p, set()) if value else not values.get(p))]
        found[value] = {
            "n_male": len(men), "n_female": len(women),
            "group_bias": mean([psi(p) for p in women]) - mean([psi(p) for p in men]),
            "individual_bias_vanilla": mean([b_in(p) for p in men | women]),
            "individual_bias_weighted": mean([b_in(p) for p in women]) + mean([b_in(p) for p in men]),
            "fisher_bp": mean([float(analysis.fisher_changes[rows[model.entity_id(p)], column]) for p in holders]),
        }
    return found


FIGURES = ["group_bias", "individual_bias_vanilla", "individual_bias_weighted", "fisher_bp"]


def assert_close(found: float, expected: float) -> None:
    assert (math.isnan(found) and math.isnan(expected)) or found == pytest.approx(expected, rel=1e-4, abs=1e-5)


@pytest.mark.parametrize("occupation", [OCCUPATION, "writer", "nurse"])
def test_subpopulation_measures_match_naive_loops(tiny_model, analysis, occupation) -> None:
    """Every row of the table (min_count 1: every subpopulation with both genders has figures) against loops."""
    found = subpopulations.intersection_table(analysis, occupation, ATTRIBUTE, min_count=1, n_resamples=50,
                                      n_permutations=10)
    assert list(found.table.columns) == list(subpopulations.INTERSECTION_COLUMNS)
    expected = naive_measures(analysis, occupation, naive_values(tiny_model, "nationality"))
    assert sorted(found.table.value) == sorted(expected)
    for row in found.table.itertuples():
        naive = expected[row.value]
        assert (row.n_male, row.n_female) == (naive["n_male"], naive["n_female"])
        assert row.name == (subpopulations.NO_VALUE if row.value == "" else tiny_model.entity_names[
            tiny_model.entity_id(row.value)])
        if min(row.n_male, row.n_female) == 0:
            assert all(math.isnan(getattr(row, c)) for c in FIGURES) and row.note.startswith(TOO_FEW)
            continue
        for column in FIGURES:
            assert_close(getattr(row, column), naive[column])
        assert row.group_bias_low <= row.group_bias_high


def test_a_person_with_several_values_counts_in_each_subpopulation(tiny_model, analysis) -> None:
    """Every third actor gets a second nationality: the cells, B_gr, the B_in aggregates and b_p against loops."""
    groups, model = analysis.groups, tiny_model
    pairs = attribute_pairs(model.triples, relation=model.relation_id("nationality"))
    values = naive_values(model, "nationality")
    men, women = naive_groups(model)[0][OCCUPATION]
    countries = sorted({v for held in values.values() for v in held})
    extra = []
    for i, person in enumerate(sorted(men | women)[::3]):
        other = next(c for c in countries[i % len(countries):] + countries if c not in values.get(person, set()))
        values.setdefault(person, set()).add(other)
        extra.append([model.entity_id(person), model.entity_id(other)])
    pairs = torch.cat([pairs, torch.tensor(extra)])
    split = attribute_cells(groups, person_values=pairs, occupation_index=groups.index(OCCUPATION))
    cells = split.cells
    assert int(cells.n_male.sum() + cells.n_female.sum()) > len(men | women)  # overlapping subpopulations

    e, r = model.entity_embeddings, model.relation_embeddings
    b_gr = group_bias(entity_embeddings=e, relation_embeddings=r, groups=cells)
    vanilla, weighted = aggregate_individual(analysis.pair_biases[0][split.pair_index], cells)
    b_p = subpopulation_means(analysis.fisher_changes[:, groups.index(OCCUPATION)], persons=analysis.fisher_persons,
                              person_values=pairs, subpopulations=split.values)
    labels = [model.entity_labels[v] for v in split.values.tolist()] + [""]
    expected = naive_measures(analysis, OCCUPATION, values)
    assert sorted(labels) == sorted(expected)
    for c, label in enumerate(labels):
        naive = expected[label]
        assert (int(cells.n_male[c]), int(cells.n_female[c])) == (naive["n_male"], naive["n_female"])
        for column, fast in zip(FIGURES, (b_gr, vanilla, weighted, b_p), strict=True):
            assert_close(float(fast[c]), naive[column])


def test_the_persons_without_a_value_form_their_own_subpopulation(tiny_model, analysis) -> None:
    values = naive_values(tiny_model, "nationality")
    men, women = naive_groups(tiny_model)[0][OCCUPATION]
    table = subpopulations.intersection_table(analysis, OCCUPATION, ATTRIBUTE).table
    none = table[table.value == ""].iloc[0]
    assert table.index[table.value == ""].tolist() == [len(table) - 1]  # reported last, with its counts
    assert none["name"] == subpopulations.NO_VALUE
    assert (none.n_male, none.n_female) == (len(men - set(values)), len(women - set(values))) and none.n_female > 0


def test_attribute_pairs_read_a_value_to_person_relation_the_other_way_round() -> None:
    triples = torch.tensor([[1, 0, 7], [1, 0, 7], [2, 0, 8], [9, 1, 3], [9, 1, 4], [5, 2, 1]])
    assert attribute_pairs(triples, relation=0).tolist() == [[1, 7], [2, 8]]  # person -> value, once each
    assert attribute_pairs(triples, relation=1, person_is_head=False).tolist() == [[3, 9], [4, 9]]
    assert attribute_pairs(triples, relation=3).shape == (0, 2)


def test_an_attribute_absent_from_the_graph_puts_everyone_in_no_value(tiny_model) -> None:
    schema = replace(tiny_model.schema, attributes=(AttributeRelation("religion", "religion"),))
    analysis = ModelAnalysis(replace(tiny_model, schema=schema))
    men, women = naive_groups(tiny_model)[0][OCCUPATION]
    table = subpopulations.intersection_table(analysis, OCCUPATION, "religion").table
    assert table[["value", "name", "n_male", "n_female"]].values.tolist() == [["", subpopulations.NO_VALUE, len(men),
                                                                                len(women)]]
    assert table.group_bias.iloc[0] == pytest.approx(float(analysis.group_bias(OCCUPATION)), abs=1e-5)


@pytest.mark.parametrize("min_count", [tables.MIN_GROUP_SIZE, 10**6])
def test_a_too_small_subpopulation_gets_the_note_never_a_number(analysis, min_count) -> None:
    table = subpopulations.intersection_table(analysis, OCCUPATION, ATTRIBUTE, min_count=min_count).table
    small = table[["n_male", "n_female"]].min(axis=1) < min_count
    figures = table[[c for c in subpopulations.INTERSECTION_COLUMNS if c not in ("value", "name", "n_male", "n_female",
                                                                         "note")]]
    assert figures[small].isna().all().all()
    for row in table[small].itertuples():
        assert row.note == (f"{TOO_FEW}{row.n_male} male, {row.n_female} female; fewer than {min_count} of one "
                            "gender)")
    assert figures[~small].notna().all().all() and (table[~small].note == "").all()
    defined = table[~small & (table.value != "")]
    if min_count == tables.MIN_GROUP_SIZE:  # the defined values first, by |B_gr|; then the small ones
        assert len(defined) >= 2 and list(defined.index) == list(range(len(defined)))
        assert defined.group_bias.abs().is_monotonic_decreasing


def slow_permutation_test(values, female, in_a, in_b, *, n_permutations: int, seed: int) -> tuple[float, float]:
    """group_bias_difference_test by loops: the same seeded draws, each row sorted by (gender, draw)."""
    x, g, a, b = values.double().tolist(), female.tolist(), in_a.tolist(), in_b.tolist()
    n = len(x)

    def difference(a: list[bool], b: list[bool]) -> float:
        def bias(member: list[bool]) -> float:
            women = [x[i] for i in range(n) if member[i] and g[i]]
            men = [x[i] for i in range(n) if member[i] and not g[i]]
            return sum(women) / len(women) - sum(men) / len(men)

        return bias(a) - bias(b)

    observed = difference(a, b)
    draws = torch.rand(n_permutations, n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    base = sorted(range(n), key=lambda i: g[i])  # men, then women
    extreme = 0
    for row in draws.tolist():
        order = sorted(range(n), key=lambda i: (g[i], row[i]))
        shuffled_a, shuffled_b = [False] * n, [False] * n
        for slot, source in zip(base, order, strict=True):
            assert g[slot] == g[source]  # labels move between persons of the same gender only
            shuffled_a[slot], shuffled_b[slot] = a[source], b[source]
        extreme += abs(difference(shuffled_a, shuffled_b)) >= abs(observed) * (1 - 1e-9)
    return observed, (1 + extreme) / (1 + n_permutations)


def test_permutation_test_equals_a_slow_loop_with_the_same_seed(tiny_model, analysis) -> None:
    model, groups = tiny_model, analysis.groups
    found = subpopulations.intersection_table(analysis, OCCUPATION, ATTRIBUTE, n_permutations=300, seed=4)
    test = found.comparison
    largest = found.table[found.table.note == ""].query("value != ''")
    assert {test.value_a, test.value_b} == set(largest.assign(n=largest.n_male + largest.n_female)
                                               .nlargest(2, "n").value)
    rows = found.table.set_index("value")
    assert test.difference == pytest.approx(rows.group_bias[test.value_a] - rows.group_bias[test.value_b], abs=1e-4)

    pairs = attribute_pairs(model.triples, relation=model.relation_id("nationality"))
    split = attribute_cells(groups, person_values=pairs, occupation_index=groups.index(OCCUPATION))
    a, b = (split.value_index(model.entity_id(v)) for v in (test.value_a, test.value_b))
    indices, in_a, in_b = split.membership(a, b)
    cells = naive_cells(model, OCCUPATION, naive_values(model, "nationality"))
    persons = [model.entity_labels[p] for p in groups.pair_person[indices].tolist()]
    assert {p for p, flag in zip(persons, in_a.tolist(), strict=True) if flag} == set.union(*cells[test.value_a])
    assert {p for p, flag in zip(persons, in_b.tolist(), strict=True) if flag} == set.union(*cells[test.value_b])
    E, _, _, _, r_p = double_vectors(model)
    o = E[model.entity_id(OCCUPATION)]
    psi = torch.stack([((E[model.entity_id(p)] + r_p - o) ** 2).sum() for p in persons])
    female = groups.pair_female[indices]
    slow = slow_permutation_test(psi, female, in_a, in_b, n_permutations=300, seed=4)
    fast = group_bias_difference_test(psi, female=female, in_a=in_a, in_b=in_b, n_permutations=300, seed=4)
    assert fast[0] == pytest.approx(slow[0]) and fast[1] == slow[1]
    assert test.difference == pytest.approx(slow[0], abs=1e-4) and test.p_value == slow[1]


def planted(shift: float, *, n: int = 20, seed: int = 0) -> tuple[torch.Tensor, ...]:
    """psi of n persons per gender and value (a: the first half), women of a shifted by ``shift``."""
    generator = torch.Generator().manual_seed(seed)
    female = torch.arange(4 * n) % 2 == 1
    in_a = torch.arange(4 * n) < 2 * n
    values = 1.0 + 0.1 * torch.randn(4 * n, generator=generator, dtype=torch.float64) + shift * (female & in_a)
    return values, female, in_a, ~in_a


def test_permutation_p_is_small_for_a_planted_difference_and_one_for_identical_subpopulations() -> None:
    values, female, in_a, in_b = planted(shift=1.0)
    difference, p_value = group_bias_difference_test(values, female=female, in_a=in_a, in_b=in_b)
    assert difference == pytest.approx(1.0, abs=0.1) and p_value == 1 / 2001  # no permutation is as extreme
    assert group_bias_difference_test(values, female=female, in_a=in_a, in_b=in_a) == (0.0, 1.0)
    _, unplanted = group_bias_difference_test(*planted(shift=0.0)[:1], female=female, in_a=in_a, in_b=in_b)
    assert unplanted > 0.05
    assert group_bias_difference_test(values, female=female, in_a=in_a, in_b=in_b, seed=1)[1] == p_value


def test_intersect_command_writes_the_table_and_refuses_an_unknown_attribute(tiny_store, tmp_path, capsys) -> None:
    model = str(tiny_store / "tiny-transe")
    out = tmp_path / "actor-nationality.csv"
    assert main(["intersect", "--model", model, "--occupation", "Actor", "--attribute", "nationality",
                 "--out", str(out)]) == 0
    frame = pd.read_csv(out, keep_default_na=False, na_values=[""])
    assert list(frame.columns) == list(subpopulations.INTERSECTION_COLUMNS)
    assert frame.note.fillna("").str.startswith(TOO_FEW).any() and frame.group_bias.notna().any()
    printed = capsys.readouterr().out
    assert "wrote 9 rows" in printed and "Actor: B_gr among" in printed and "permutation p" in printed

    assert main(["intersect", "--model", model, "--occupation", "actor", "--attribute", "birthplace",
                 "--value-a", "city_24", "--value-b", "city_36", "--min-count", "3", "--out", str(out)]) == 0
    assert "B_gr among City 24 minus among City 36" in capsys.readouterr().out

    assert main(["intersect", "--model", model, "--occupation", "actor", "--attribute", "colour",
                 "--out", str(tmp_path / "x.csv")]) == 2
    assert capsys.readouterr().err == "error: unknown attribute 'colour': the schema's attributes are nationality, " \
                                      "birthplace\n"
    assert not (tmp_path / "x.csv").exists()
    assert main(["intersect", "--model", model, "--occupation", "astronaut", "--attribute", "nationality",
                 "--out", str(tmp_path / "x.csv")]) == 2
    assert "unknown entity 'astronaut'" in capsys.readouterr().err


@pytest.mark.skipif(not (DATA / "fb13" / "train.txt").is_file(), reason="no FB13 in the data directory")
def test_fb13_sample_gives_nationality_subpopulations_for_politician_writer_actor(sample, tmp_path) -> None:  # noqa: F811
    model = str(sample / "models" / "fb13-sample")
    for occupation in ("Politician", "Writer", "Actor"):
        out = tmp_path / f"{occupation}.csv"
        assert main(["intersect", "--model", model, "--occupation", occupation, "--attribute", "nationality",
                     "--out", str(out)]) == 0
        frame = pd.read_csv(out, keep_default_na=False, na_values=[""])
        valued = frame[frame.value.notna()]
        assert len(valued) >= 5 and "united_states" in set(valued.value)
        assert valued.name.str.contains(" ").any()  # readable names: "United States", not "united_states"
        small = frame.note.notna()
        assert frame.loc[small, "group_bias"].isna().all() and frame.loc[~small, "group_bias"].notna().all()
        if occupation != "Politician":  # FB13's politicians are ~3% women: no nationality has 5 in the sample
            assert frame.loc[frame.value == "united_states", "group_bias"].notna().all()
