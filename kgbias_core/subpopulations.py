"""Du's measures within the subpopulations of a second attribute (nationality, ...): one table per
occupation with B_gr and its interval, the B_in aggregates and Fisher's b_p per value, and a permutation test
of the two largest (METHODS §1-§5 applied per subpopulation). Built on :mod:`kgbias_core.tables`."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.data.schema import AttributeRelation, Schema
from kgbias_core.errors import (
    INTERSECT_ONE_VALUE,
    INTERSECT_SAME_VALUE,
    INTERSECT_VALUE_NOT_HELD,
    NO_ATTRIBUTES,
    UNKNOWN_ATTRIBUTE,
    MeasureError,
)
from kgbias_core.measures.group_bias import group_bias, group_bias_interval, pair_residuals
from kgbias_core.measures.individual_bias import aggregate_individual
from kgbias_core.measures.intersections import (
    AttributeCells,
    attribute_cells,
    attribute_pairs,
    defined_cells,
    group_bias_difference_test,
    guarded,
    subpopulation_means,
)
from kgbias_core.tables import MIN_GROUP_SIZE, entity_name

#: Columns of :func:`intersection_table`: one row per value of the attribute (``value`` its label,
#: "" for the persons with no value). ``group_bias_low``/``_high``: B_gr's percentile bootstrap 95%
#: interval over the subpopulation's persons.
INTERSECTION_COLUMNS = (
    "value", "name", "n_male", "n_female", "group_bias", "group_bias_low", "group_bias_high",
    "individual_bias_vanilla", "individual_bias_weighted", "fisher_bp", "note",
)
#: The ``name`` of the subpopulation of persons without any value of the attribute.
NO_VALUE = "no value"
#: A subpopulation's note when it has too few persons to get figures (never a number).
TOO_FEW_PERSONS = "too few persons (n = {n_male} male, {n_female} female; fewer than {minimum} of one gender)"
#: Permutations of the test of B_gr(a) − B_gr(b): the p-value's resolution is 1 / (1 + this).
N_PERMUTATIONS = 2000


@dataclass(frozen=True)
class SubpopulationComparison:
    """B_gr(a) − B_gr(b) between two subpopulations of one occupation and its permutation p-value."""

    value_a: str  # labels of the two values ("" where fewer than two subpopulations are defined)
    value_b: str
    name_a: str  # their readable names
    name_b: str
    difference: float  # B_gr within a minus within b (> 0: a leans more male); NaN if not compared
    p_value: float  # two-sided, with the +1 correction (kgbias_core.measures.intersections); NaN if not compared
    n_permutations: int
    note: str  # why no comparison was made ("" when there is one)


@dataclass(frozen=True)
class Intersections:
    """One occupation's measures within the subpopulations of one attribute (:func:`intersection_table`)."""

    occupation: str  # the occupation's label
    name: str  # its readable name
    attribute: str  # the attribute's name in the schema
    table: pd.DataFrame  # columns INTERSECTION_COLUMNS, the subpopulations that drive the gap first
    comparison: SubpopulationComparison


def schema_attribute(schema: Schema, name: str) -> AttributeRelation:
    """The schema's attribute (not gender) by name or relation label; unknown -> a :class:`MeasureError`
    naming the known ones."""
    for attribute in schema.attributes:
        if name in (attribute.name, attribute.relation):
            return attribute
    if not schema.attributes:
        raise MeasureError(NO_ATTRIBUTES.format(name=name))
    raise MeasureError(UNKNOWN_ATTRIBUTE.format(name=name, known=", ".join(a.name for a in schema.attributes)))


def _too_few(n_male: int, n_female: int, minimum: int) -> str:
    return "" if min(n_male, n_female) >= minimum else TOO_FEW_PERSONS.format(
        n_male=n_male, n_female=n_female, minimum=minimum)


def intersection_table(
    analysis: ModelAnalysis,
    occupation: str,
    attribute: str,
    *,
    value_a: str | None = None,
    value_b: str | None = None,
    min_count: int = MIN_GROUP_SIZE,
    n_resamples: int = 1000,
    n_permutations: int = N_PERMUTATIONS,
    seed: int = 0,
) -> Intersections:
    """B_gr with its 95% interval, the B_in aggregates and Fisher's b_p within each subpopulation of an
    attribute (METHODS §1, §5, §6; :mod:`kgbias_core.measures.intersections`), for one occupation.

    One row per value held by the occupation's persons, and one for the persons with no value (last,
    ``name`` "no value"); a person with several values counts in each. A subpopulation with fewer
    than ``min_count`` men or women has NaN figures and the note "too few persons (n = …)". b_p is
    Fisher's mean over every person with a binary gender holding the value (not only the occupation's).
    The defined rows come first, by |B_gr| (the subpopulations that drive the gap), then the small ones
    by size. The comparison tests B_gr(a) − B_gr(b) for values ``value_a`` and ``value_b`` (labels),
    or, with neither, for the two largest defined subpopulations (the "no value" group is no value).
    """
    model, groups = analysis.model, analysis.groups
    index = groups.index(occupation)
    relation = schema_attribute(model.schema, attribute)
    min_count = max(1, min_count)  # with no man or no woman B_gr is undefined, whatever the minimum
    if (value_a is None) != (value_b is None):
        raise MeasureError(INTERSECT_ONE_VALUE)
    r_s = model.relation_to_id.get(relation.relation)  # a schema attribute absent from the graph: nobody has a value
    person_values = (attribute_pairs(model.triples, relation=r_s, person_is_head=relation.person_is_head)
                     if r_s is not None else torch.empty(0, 2, dtype=torch.long))
    split = attribute_cells(groups, person_values=person_values, occupation_index=index)
    cells = split.cells
    e, r = model.entity_embeddings, model.relation_embeddings
    defined = defined_cells(cells, min_count=min_count)
    low, high = group_bias_interval(entity_embeddings=e, relation_embeddings=r, groups=cells,
                                    n_resamples=n_resamples, seed=seed, distance=model.config.distance)
    b_in, _ = analysis.pair_biases
    vanilla, weighted = aggregate_individual(b_in[split.pair_index], cells)
    b_p = subpopulation_means(analysis.fisher_changes[:, index], persons=analysis.fisher_persons,
                              person_values=person_values, subpopulations=split.values)
    values = split.values.tolist()
    frame = pd.DataFrame({
        "value": [model.entity_labels[v] for v in values] + [""],
        "name": [entity_name(analysis, v) for v in values] + [NO_VALUE],
        "n_male": cells.n_male.tolist(),
        "n_female": cells.n_female.tolist(),
        **{column: guarded(figure, defined).tolist() for column, figure in (
            ("group_bias", group_bias(entity_embeddings=e, relation_embeddings=r, groups=cells,
                                      distance=model.config.distance)),
            ("group_bias_low", low), ("group_bias_high", high),
            ("individual_bias_vanilla", vanilla), ("individual_bias_weighted", weighted),
            ("fisher_bp", b_p.to(torch.float32)),
        )},
    })
    frame["note"] = [_too_few(m, f, min_count) for m, f in zip(frame["n_male"], frame["n_female"], strict=True)]
    frame = frame.assign(_last=frame.index == split.no_value, _small=~defined.cpu().numpy(),
                         _size=-(frame["n_male"] + frame["n_female"]), _gap=-frame["group_bias"].abs())
    ordered = frame.sort_values(["_last", "_small", "_gap", "_size", "value"], kind="stable")
    table = ordered[list(INTERSECTION_COLUMNS)].reset_index(drop=True)
    comparison = _compare(analysis, split, table, value_a=value_a, value_b=value_b, attribute=relation.name,
                          occupation=occupation, n_permutations=n_permutations, seed=seed)
    return Intersections(occupation=groups.labels[index], name=groups.names[index], attribute=relation.name,
                         table=table, comparison=comparison)


def _compare(analysis: ModelAnalysis, split: AttributeCells, table: pd.DataFrame, *, value_a: str | None,
             value_b: str | None, attribute: str, occupation: str, n_permutations: int,
             seed: int) -> SubpopulationComparison:
    """The permutation test of B_gr(a) − B_gr(b) (:func:`intersection_table`)."""
    model, groups = analysis.model, analysis.groups
    valued = table[table["value"] != ""]
    if value_a is None:
        enough = valued[valued["note"] == ""]
        largest = enough.assign(size=enough["n_male"] + enough["n_female"])
        pair = largest.sort_values(["size", "value"], ascending=[False, True], kind="stable")["value"].head(2).tolist()
        if len(pair) < 2:
            return SubpopulationComparison("", "", "", "", math.nan, math.nan, n_permutations,
                                           note=f"fewer than two {attribute} values have enough persons to compare")
        value_a, value_b = pair
    if value_a == value_b:
        raise MeasureError(INTERSECT_SAME_VALUE.format(value=value_a))
    chosen = []
    for value in (value_a, value_b):
        cell = split.value_index(model.entity_id(value))
        if cell is None:
            raise MeasureError(INTERSECT_VALUE_NOT_HELD.format(occupation=occupation, attribute=attribute, value=value))
        chosen.append(cell)
    names = valued.set_index("value")["name"]
    rows = valued.set_index("value").loc[[value_a, value_b]]
    if (rows["note"] != "").any():
        small = ", ".join(names[v] for v in (value_a, value_b) if rows.loc[v, "note"])
        return SubpopulationComparison(value_a, value_b, names[value_a], names[value_b], math.nan, math.nan,
                                       n_permutations, note=f"too few persons in {small} to compare")
    pairs, in_a, in_b = split.membership(*chosen)
    psi = pair_residuals(entity_embeddings=model.entity_embeddings, relation_embeddings=model.relation_embeddings,
                         groups=groups)[pairs].pow(2).sum(-1)
    difference, p_value = group_bias_difference_test(psi, female=groups.pair_female[pairs], in_a=in_a, in_b=in_b,
                                                     n_permutations=n_permutations, seed=seed)
    return SubpopulationComparison(value_a, value_b, names[value_a], names[value_b], difference, p_value,
                                   n_permutations, note="")
