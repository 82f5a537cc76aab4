"""Readable tables built from a :class:`ModelAnalysis`: every measure per occupation, per person, per triple.

Plain functions that turn the analysis's memoised tensors into DataFrames with labels and names;
the CLI writes them as CSV and the dashboard caches them. Gender comes from ``groups.gender``
(the one reader, :func:`kgbias_core.data.graph.gender_of`), so that no two tables can disagree
on a person, e.g. one with two gender values.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.data.graph import NO_PERSON, Gender, triple_persons
from kgbias_core.embeddings.pykeen_bridge import pykeen_model
from kgbias_core.influence.closed_form import top_influence  # re-exported: findings and benches import it here
from kgbias_core.measures.bootstrap import mean_interval
from kgbias_core.measures.fisher import fisher_profession_table
from kgbias_core.measures.group_bias import group_bias_interval, projection_bias
from kgbias_core.measures.individual_bias import aggregate_individual, aggregate_interval
from kgbias_core.types import LongTensor

#: Below this many persons of either gender an occupation's figures carry a warning.
MIN_GROUP_SIZE = 5

#: ``*_low`` and ``*_high``: the measure's percentile bootstrap 95% interval over persons
#: (:mod:`kgbias_core.measures.bootstrap`). B_wo has none: it is one projection, no mean over persons.
MEASURE_COLUMNS = (
    "occupation", "name", "n_male", "n_female", "group_bias", "group_bias_low", "group_bias_high",
    "projection_bias", "individual_bias_vanilla", "individual_bias_vanilla_low", "individual_bias_vanilla_high",
    "individual_bias_weighted", "individual_bias_weighted_low", "individual_bias_weighted_high",
    "fisher_individual_vanilla", "fisher_individual_weighted", "fisher_bp", "fisher_bp_low", "fisher_bp_high",
)

#: How a gender code reads in a table; persons without a gender fact (UNKNOWN) read as "".
GENDER_WORDS = {Gender.MALE: "male", Gender.FEMALE: "female", Gender.OTHER: "other"}


def entity_name(analysis: ModelAnalysis, entity: int) -> str:
    """The readable name of entity id ``entity``, or its label where it has none."""
    return analysis.model.entity_names[entity] or analysis.model.entity_labels[entity]


def occupations_frame(analysis: ModelAnalysis) -> pd.DataFrame:
    """``occupation`` (label), ``name``, ``n_male``, ``n_female`` of every occupation, in the groups' order."""
    groups = analysis.groups
    return pd.DataFrame(
        {
            "occupation": list(groups.labels),
            "name": [entity_name(analysis, o) for o in groups.occupations.tolist()],
            "n_male": groups.n_male.tolist(),
            "n_female": groups.n_female.tolist(),
        }
    )


#: Sizes beyond which the measures table leaves out what does not scale to 20M triples (issue 10), with
#: a note on every row: Fisher's b_p needs one forward per (person, occupation) ([J, O] float64: 32 GB at
#: 2M persons x 2000 occupations); a bootstrap draws resamples x pairs (3e9 at 20M triples, 1000 resamples).
MAX_FISHER_CELLS = 50_000_000
MAX_BOOTSTRAP_DRAWS = 300_000_000
SKIPPED_AT_SCALE = "at this size: {what} left out (see README 'At scale')"


def measures_table(analysis: ModelAnalysis, *, n_resamples: int = 1000) -> pd.DataFrame:
    """Every measure per occupation: columns :data:`MEASURE_COLUMNS`, then ``n_other_gender``,
    ``n_unknown_gender`` and ``note`` (why a figure is undefined or noisy).

    ``n_resamples`` is the bootstrap's size for the 95% intervals of B_gr, B_in and b_p. On a graph
    beyond :data:`MAX_BOOTSTRAP_DRAWS` / :data:`MAX_FISHER_CELLS` the intervals / Fisher's b_p are NaN
    and the note says so; B_gr, B_wo, B_in and B'_in are always there.
    """
    model, groups = analysis.model, analysis.groups
    e, r = model.entity_embeddings, model.relation_embeddings
    n_pairs, n_occupations = int(groups.pair_person.shape[0]), groups.n_occupations
    nan = torch.full((n_occupations,), math.nan)
    skipped = []
    if n_resamples * n_pairs <= MAX_BOOTSTRAP_DRAWS:
        low, high = group_bias_interval(entity_embeddings=e, relation_embeddings=r, groups=groups,
                                        n_resamples=n_resamples, distance=model.config.distance)
    else:
        low = high = nan
        skipped.append("bootstrap intervals")
    b_in, b_fisher = analysis.pair_biases
    in_vanilla, in_weighted = aggregate_individual(b_in, groups)
    if skipped:
        (vanilla_low, vanilla_high), (weighted_low, weighted_high) = (nan, nan), (nan, nan)
    else:
        (vanilla_low, vanilla_high), (weighted_low, weighted_high) = aggregate_interval(b_in, groups,
                                                                                        n_resamples=n_resamples)
    fi_vanilla, fi_weighted = aggregate_individual(b_fisher, groups)
    if int(analysis.fisher_persons.shape[0]) * n_occupations <= MAX_FISHER_CELLS:
        fisher_bp = analysis.fisher_bp
        bp_low, bp_high = (nan, nan) if skipped else mean_interval(analysis.fisher_changes, n_resamples=n_resamples)
    else:
        fisher_bp = bp_low = bp_high = nan
        skipped.append("Fisher's b_p")
    frame = occupations_frame(analysis).assign(
        group_bias=analysis.group_bias().tolist(),
        group_bias_low=low.tolist(),
        group_bias_high=high.tolist(),
        projection_bias=projection_bias(entity_embeddings=e, groups=groups).tolist(),
        individual_bias_vanilla=in_vanilla.tolist(),
        individual_bias_vanilla_low=vanilla_low.tolist(),
        individual_bias_vanilla_high=vanilla_high.tolist(),
        individual_bias_weighted=in_weighted.tolist(),
        individual_bias_weighted_low=weighted_low.tolist(),
        individual_bias_weighted_high=weighted_high.tolist(),
        fisher_individual_vanilla=fi_vanilla.tolist(),
        fisher_individual_weighted=fi_weighted.tolist(),
        fisher_bp=fisher_bp.tolist(),
        fisher_bp_low=bp_low.tolist(),
        fisher_bp_high=bp_high.tolist(),
        n_other_gender=groups.n_other.tolist(),
        n_unknown_gender=groups.n_unknown.tolist(),
    )
    scale_note = SKIPPED_AT_SCALE.format(what=" and ".join(skipped)) if skipped else ""
    frame["note"] = ["; ".join(n for n in (_group_note(m, f), scale_note) if n)
                     for m, f in zip(frame["n_male"], frame["n_female"], strict=True)]
    return frame


def _group_note(n_male: int, n_female: int) -> str:
    if n_male == 0 and n_female == 0:
        return "no persons with binary gender: no bias measure defined"
    if n_female == 0:
        return "no women: B_gr and weighted measures undefined"
    if n_male == 0:
        return "no men: B_gr and weighted measures undefined"
    if min(n_male, n_female) < MIN_GROUP_SIZE:
        return f"small group (fewer than {MIN_GROUP_SIZE} of one gender): figures are noisy"
    return ""


def persons_table(analysis: ModelAnalysis, occupation: str) -> pd.DataFrame:
    """Persons with a binary gender of one occupation, with B_in and B'_in (METHODS §5).

    Columns: ``person`` (label), ``name``, ``gender``, ``degree``, ``individual_bias``, ``fisher_individual``
    (the paper's definitions), then ``individual_bias_centred`` and ``fisher_individual_centred``: each
    minus its mean over every (person, occupation) pair of the graph. Every pair shares one offset,
    -r_p . (m - f) (the occupation relation's component along the gender direction; docs/methods.md, "The
    shared offset"), which makes all persons of a graph lean the same way; the centred values say who leans
    more than the graph's typical person does.
    """
    groups = analysis.groups
    mine = (groups.pair_occupation == groups.index(occupation)).nonzero().squeeze(-1)
    persons = groups.pair_person[mine]
    b_in, b_fisher = analysis.pair_biases
    labels = analysis.model.entity_labels
    # Numeric columns straight from the tensors (no Python floats): an occupation of 130k persons.
    return pd.DataFrame(
        {
            "person": [labels[p] for p in persons.tolist()],
            "name": [entity_name(analysis, p) for p in persons.tolist()],
            "gender": np.where(groups.pair_female[mine].cpu().numpy(), "female", "male").tolist(),
            "degree": groups.degree[persons].cpu().numpy(),
            "individual_bias": b_in[mine].double().cpu().numpy(),
            "fisher_individual": b_fisher[mine].double().cpu().numpy(),
            "individual_bias_centred": (b_in[mine] - b_in.mean()).double().cpu().numpy(),
            "fisher_individual_centred": (b_fisher[mine] - b_fisher.mean()).double().cpu().numpy(),
        }
    )


def persons_of_occupations(analysis: ModelAnalysis, occupations: Sequence[str]) -> pd.DataFrame:
    """:func:`persons_table` of several occupations stacked, with ``occupation`` (label) and
    ``occupation_name`` columns; a person of two of them is a row of each."""
    groups, parts = analysis.groups, []
    for label in occupations:
        name = entity_name(analysis, int(groups.occupations[groups.index(label)]))
        parts.append(persons_table(analysis, label).assign(occupation=label, occupation_name=name))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def split_small(frame: pd.DataFrame, *, size: pd.Series, minimum: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(rows whose ``size`` reaches ``minimum``, the rest): a ranking keeps the first and lists the
    second apart, so that no ranking is led by a group of one or two persons."""
    enough = size >= minimum
    return frame[enough], frame[~enough]


def ranked_occupations(measures: pd.DataFrame, *, minimum: int = MIN_GROUP_SIZE) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Occupations of a :func:`measures_table` with at least ``minimum`` men and ``minimum`` women,
    ranked by B_gr (most female-leaning first), and the others (too few persons to rank), by name."""
    ranked, small = split_small(measures, size=measures[["n_male", "n_female"]].min(axis=1), minimum=max(1, minimum))
    return ranked.sort_values("group_bias", kind="stable"), small.sort_values("name", kind="stable")


def gender_ratio_table(measures: pd.DataFrame) -> pd.DataFrame:
    """Occupations of a :func:`measures_table` with both genders: B_gr beside log(#men / #women)
    (natural log, > 0 = more men) and the number of persons (Du et al.'s observation)."""
    frame = measures[(measures["n_male"] > 0) & (measures["n_female"] > 0)]
    return frame.assign(
        log_gender_ratio=np.log(frame["n_male"] / frame["n_female"]),
        n_persons=frame["n_male"] + frame["n_female"],
    )[["occupation", "name", "n_male", "n_female", "n_persons", "log_gender_ratio", "group_bias"]]


#: ``person_gender`` of a triple whose person has no gender fact in training, and of one without a person.
UNKNOWN_GENDER = "unknown"
NO_PERSON_WORD = "none"


def triples_frame(analysis: ModelAnalysis, indices: LongTensor) -> pd.DataFrame:
    """Readable rows for training triples by index: labels, names, relation, and the triple's person.

    The person is the entity that is a person per the schema (a gender or an occupation fact in training,
    :func:`~kgbias_core.data.graph.person_mask`): the head if it is one, else the tail, else none. Columns
    ``person`` (label, "" if none), ``person_name`` ("none" if none), ``person_gender`` ("male", "female",
    "other", "unknown" without a gender fact in training, "none" without a person) and ``person_degree``
    (the person's training triples; <NA> without a person). Never the occupation node's.
    """
    model, groups = analysis.model, analysis.groups
    triples = model.triples[indices]
    heads, tails = triples[:, 0], triples[:, 2]
    found = triple_persons(triples, analysis.is_person)  # [n], NO_PERSON where none
    safe = found.clamp(min=0)
    person, gender, degree = found.tolist(), groups.gender[safe].tolist(), groups.degree[safe].tolist()
    labels, relations = model.entity_labels, model.relation_labels
    return pd.DataFrame(
        {
            "triple": indices.tolist(),
            "head": [labels[h] for h in heads.tolist()],
            "relation": [relations[r] for r in triples[:, 1].tolist()],
            "tail": [labels[t] for t in tails.tolist()],
            "head_name": [entity_name(analysis, h) for h in heads.tolist()],
            "tail_name": [entity_name(analysis, t) for t in tails.tolist()],
            "person": [labels[p] if p != NO_PERSON else "" for p in person],
            "person_name": [entity_name(analysis, p) if p != NO_PERSON else NO_PERSON_WORD for p in person],
            "person_gender": [GENDER_WORDS.get(g, UNKNOWN_GENDER) if p != NO_PERSON else NO_PERSON_WORD
                              for p, g in zip(person, gender, strict=True)],
            "person_degree": pd.array([d if p != NO_PERSON else None for p, d in zip(person, degree, strict=True)],
                                      dtype="Int64"),
        }
    )


def relation_words(label: str) -> str:
    """A relation label in words: the last part of each Freebase path, underscores as spaces.

    "/people/person/profession" -> "profession"; a path through a compound (mediator) node,
    "/people/person/places_lived./people/place_lived/location" -> "places lived → location";
    a label without slashes ("cause_of_death", FB13) -> "cause of death".
    """
    parts = [part.rstrip("/").rsplit("/", 1)[-1] for part in label.split("./")]
    return " → ".join(part.replace("_", " ") for part in parts if part) or label


def triples_in_words(frame: pd.DataFrame) -> pd.DataFrame:
    """A :func:`triples_frame` with an ``in words`` column, "head name  —relation in words→  tail
    name" (:func:`relation_words`)."""
    # as text: an empty frame's columns have no dtype of their own (a plan that removes nothing)
    words = (frame["head_name"].astype(str) + "  —" + frame["relation"].astype(str).map(relation_words) + "→  "
             + frame["tail_name"].astype(str))
    return frame.assign(**{"in words": words})


def filter_triples(frame: pd.DataFrame, *, relations: Sequence[str], genders: Sequence[str]) -> pd.DataFrame:
    """Rows whose relation and person's gender are among the given ones (an empty choice keeps all)."""
    keep = pd.Series(True, index=frame.index)
    if relations:
        keep &= frame["relation"].isin(relations)
    if genders:
        keep &= frame["person_gender"].isin(genders)
    return frame[keep]


def influence_table(
    analysis: ModelAnalysis, occupation: str, *, top: int = 20, direction: str = "both"
) -> pd.DataFrame:
    """The ``top`` training triples by delta_z B_gr with names (METHODS §4): :func:`triples_frame` + ``influence``
    + ``negatives``, the label of the negatives it was computed from ("exact (frozen negatives)" or
    "approximate (negatives re-drawn), seed S": :mod:`kgbias_core.influence.negatives`).

    ``direction``: "both" ranks by |delta_z|; "raises" takes the most positive (removing them
    makes the embedding more male-leaning), "lowers" the most negative.
    """
    influence = analysis.influence(occupation)
    signed = {"both": influence.abs(), "raises": influence, "lowers": -influence}[direction]
    k = min(top, int((signed > 0).sum()))
    indices = torch.topk(signed, k).indices
    frame = triples_frame(analysis, indices)
    frame["influence"] = influence[indices].tolist()
    frame["negatives"] = analysis.negatives.label  # travels with every row, into CSVs and reports
    return frame


def influence_extremes(analysis: ModelAnalysis, occupation: str, *, k: int = 20) -> pd.DataFrame:
    """The ``k`` triples with the largest positive and the ``k`` with the most negative delta_z B_gr.

    Column ``direction``: "raises" (removing the triple would raise B_gr, i.e. make the
    occupation more male-leaning) or "lowers"; zero influences are never listed.
    """
    parts = []
    for direction in ("raises", "lowers"):
        frame = influence_table(analysis, occupation, top=k, direction=direction)
        frame.insert(0, "direction", direction)
        parts.append(frame)
    return pd.concat(parts, ignore_index=True)


def occupation_like_relations(analysis: ModelAnalysis) -> list[int]:
    """Relation ids that state an occupation: the schema's occupation relation and every relation whose
    label has the whole word "profession" or "occupation" (an inverse such as Du's
    people_with_this_profession, or kgbias's own ``…/inverse``)."""
    model = analysis.model
    return [  # whole words only: "professional_sports_team" is no occupation relation
        i for i, label in enumerate(model.relation_labels)
        if label == model.schema.occupation_relation
        or {"profession", "occupation"} & set(re.split(r"[^a-z]+", label.lower()))
    ]


def occupation_relation_share(
    analysis: ModelAnalysis, occupation: str, *, fraction: float = 0.01, sign: str = "any"
) -> dict[str, object]:
    """Share of occupation-like relations among the top ``fraction`` of the triples that move B_gr.

    Du et al. §3.1 report 74% (positive) and 78% (negative) of occupation and inverse-occupation
    triples among the top 1% for singer. ``sign`` picks the ranking (:func:`top_influence`);
    counted relations: :func:`occupation_like_relations`. Keys: ``share`` (NaN when no triple
    moves B_gr), ``n_top``, ``n_occupation``, ``relations``.
    """
    model = analysis.model
    top = top_influence(analysis.influence(occupation), fraction=fraction, sign=sign)
    occupation_like = occupation_like_relations(analysis)
    n_top = int(top.shape[0])
    hits = int(torch.isin(model.triples[top, 1],
                          torch.tensor(occupation_like, dtype=torch.long, device=model.triples.device)).sum())
    return {
        "share": hits / n_top if n_top else math.nan,
        "n_top": n_top,
        "n_occupation": hits,
        "relations": tuple(str(model.relation_labels[i]) for i in occupation_like),
    }


def fisher_table(
    analysis: ModelAnalysis, *, relation: str, value_a: str, value_b: str | None = None, min_count: int = 0
) -> pd.DataFrame:
    """Fisher's b_p per profession (METHODS §6) for attribute ``relation``, values a vs b (or a vs the rest).

    The columns of :func:`kgbias_core.measures.fisher.fisher_profession_table`, with the
    profession's ``label`` and ``name`` inserted after ``profession``.
    """
    model, groups = analysis.model, analysis.groups
    attribute = model.schema.attribute(relation)
    r_s = model.relation_id(attribute.relation)
    a = model.entity_id(value_a)
    b = None if value_b is None else model.entity_id(value_b)
    triples = model.triples
    facts = triples[triples[:, 1] == r_s]
    person_col, value_col = (0, 2) if attribute.person_is_head else (2, 0)
    values = torch.unique(facts[:, value_col])
    other = values[(values != a)] if b is None else None
    persons = torch.unique(facts[:, person_col])
    occ_facts = triples[triples[:, 1] == groups.occupation_relation]
    table = fisher_profession_table(
        pykeen_model(model),
        persons=persons,
        attribute_relation=r_s,
        value_a=a,
        value_b=b,
        other_values=other,
        occupation_relation=groups.occupation_relation,
        professions=groups.occupations,
        person_professions=occ_facts[:, [0, 2]].cpu().numpy(),
        person_values=facts[:, [person_col, value_col]].cpu().numpy(),
        min_count=min_count,
        attribute_person_is_head=attribute.person_is_head,
    )
    table.insert(1, "label", [model.entity_labels[p] for p in table["profession"]])
    table.insert(2, "name", [entity_name(analysis, p) for p in table["profession"]])
    return table


def attribute_values(analysis: ModelAnalysis, relation: str) -> pd.DataFrame:
    """Values of an attribute relation (schema name or relation label) with their person counts.

    Columns: ``label``, ``name``, ``n_persons`` (distinct persons holding the value), most common first.
    """
    model = analysis.model
    attribute = model.schema.attribute(relation)
    r_s = model.relation_id(attribute.relation)
    facts = model.triples[model.triples[:, 1] == r_s]
    person_col, value_col = (0, 2) if attribute.person_is_head else (2, 0)
    pairs = torch.unique(facts[:, [person_col, value_col]], dim=0)  # [k, 2] distinct (person, value)
    values, counts = torch.unique(pairs[:, 1], return_counts=True)
    frame = pd.DataFrame(
        {
            "label": [model.entity_labels[v] for v in values.tolist()],
            "name": [entity_name(analysis, v) for v in values.tolist()],
            "n_persons": counts.tolist(),
        }
    )
    return frame.sort_values(["n_persons", "label"], ascending=[False, True]).reset_index(drop=True)


def summary(analysis: ModelAnalysis) -> dict[str, int]:
    """The graph at a glance: triples, entities, relations, persons by gender, occupations.

    A person is an entity with a gender fact; ``n_other_gender`` counts non-binary and
    several-valued ones alike (:class:`~kgbias_core.data.graph.Gender`).
    """
    model, groups = analysis.model, analysis.groups
    triples = model.triples
    codes = torch.bincount(groups.gender, minlength=len(Gender))  # [4] entities per Gender code
    occupation_facts = triples[triples[:, 1] == groups.occupation_relation]
    return {
        "n_triples": int(triples.shape[0]),
        "n_entities": model.n_entities,
        "n_relations": model.n_relations,
        "n_persons": int(codes[Gender.MALE] + codes[Gender.FEMALE] + codes[Gender.OTHER]),
        "n_male": int(codes[Gender.MALE]),
        "n_female": int(codes[Gender.FEMALE]),
        "n_other_gender": int(codes[Gender.OTHER]),
        "n_occupations": groups.n_occupations,
        "n_persons_with_occupation": int(torch.unique(occupation_facts[:, 0]).numel()),
    }
