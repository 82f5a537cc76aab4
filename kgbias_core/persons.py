"""One person of the graph, one level below an occupation: search, their B_in and B'_in with the
counterfactual, and their training triples with each one's influence on their occupation's B_gr.

A person is an entity with a gender or an occupation fact in training
(:func:`~kgbias_core.data.graph.person_mask`). Du's B_in(s, o) (Corollary 4, METHODS §5) is the change of
psi(s, r_p, o) that influence predicts when s's gender fact flips from male to female: removing (s, r_g, m)
and adding (s, r_g, f) moves s by -(2 / alpha_s) (m - f), so psi changes by 2v . that = -4 / alpha_s
v . (m - f) = B_in (alpha on the summed loss's scale, so no 1/|G|). The counterfactual score of a man is
therefore psi + B_in, of a woman (flipped to male) psi - B_in. An influence prediction, not a retrain.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.data.graph import Gender
from kgbias_core.embeddings.objective import residual_distance
from kgbias_core.errors import AMBIGUOUS_PERSON, NOT_A_PERSON, UNKNOWN_PERSON, MeasureError
from kgbias_core.tables import GENDER_WORDS, UNKNOWN_GENDER, entity_name, triples_frame, triples_in_words

#: At most this many matches of a search are listed.
SEARCH_LIMIT = 50


def _persons(analysis: ModelAnalysis) -> torch.Tensor:
    return analysis.is_person.nonzero().squeeze(-1)


def search_persons(analysis: ModelAnalysis, query: str, *, limit: int = SEARCH_LIMIT) -> pd.DataFrame:
    """Persons whose name or id contains ``query`` (case-insensitive), exact matches first, then by degree.

    Columns ``person`` (label), ``name``, ``gender``, ``degree``; at most ``limit`` rows; an empty query
    lists the persons of highest degree.
    """
    groups, model = analysis.groups, analysis.model
    persons = _persons(analysis).tolist()
    wanted = query.strip().casefold()
    rows = []
    for p in persons:
        label, name = model.entity_labels[p], entity_name(analysis, p)
        if not wanted or wanted in name.casefold() or wanted in label.casefold():
            exact = wanted in (name.casefold(), label.casefold())
            rows.append((not exact, -int(groups.degree[p]), name, label, p))
    rows.sort()
    chosen = rows[:limit]
    return pd.DataFrame({
        "person": [r[3] for r in chosen],
        "name": [r[2] for r in chosen],
        "gender": [GENDER_WORDS.get(int(groups.gender[r[4]]), UNKNOWN_GENDER) for r in chosen],
        "degree": [-r[1] for r in chosen],
    })


def resolve_person(analysis: ModelAnalysis, text: str) -> int:
    """The entity id of the person ``text`` names: their id (label), else their readable name in any case
    where exactly one person has it. Unknown, shared or not a person: a :class:`MeasureError` naming it."""
    model = analysis.model
    entity = model.entity_to_id.get(text)
    if entity is not None:
        if not bool(analysis.is_person[entity]):
            raise MeasureError(NOT_A_PERSON.format(entity=text))
        return int(entity)
    wanted = text.strip().casefold()
    hits = [p for p in _persons(analysis).tolist() if entity_name(analysis, p).casefold() == wanted]
    if len(hits) == 1:
        return hits[0]
    if hits:
        candidates = ", ".join(f"{model.entity_labels[p]} ({entity_name(analysis, p)})" for p in hits[:10])
        raise MeasureError(AMBIGUOUS_PERSON.format(name=text, count=len(hits), candidates=candidates))
    raise MeasureError(UNKNOWN_PERSON.format(name=text))


@dataclass(frozen=True)
class Person:
    """A person at a glance."""

    entity: int  # entity id
    label: str
    name: str
    gender: str  # "male", "female", "other" or "unknown" (no gender fact in training)
    degree: int  # training triples the person is in
    occupations: pd.DataFrame  # person_occupations(): one row per occupation held


def person_occupations(analysis: ModelAnalysis, entity: int) -> pd.DataFrame:
    """The person's occupations with Du's B_in, Fisher's B'_in (METHODS §5) and the counterfactual.

    Columns ``occupation`` (label), ``occupation_name``, ``individual_bias``, ``fisher_individual``, ``score``
    (psi(s, r_p, o), lower = more plausible), ``score_flipped`` (psi with the gender flipped, predicted by
    influence: psi + B_in for a man, psi - B_in for a woman; module docstring). Without a binary gender the
    person is in no (person, occupation) pair: the biases and the flipped score are NaN.
    """
    groups, model = analysis.groups, analysis.model
    r_p = groups.occupation_relation
    triples = model.triples
    held = torch.unique(triples[(triples[:, 0] == entity) & (triples[:, 1] == r_p), 2])  # [k] occupation ids
    b_in, b_fisher = analysis.pair_biases
    mine = (groups.pair_person == entity).nonzero().squeeze(-1)
    by_occupation = {int(groups.occupations[groups.pair_occupation[i]]): i for i in mine.tolist()}
    e, r = model.entity_embeddings, model.relation_embeddings
    residuals = e[entity] + r[r_p] - e[held]  # [k, d]
    scores = residual_distance(residuals, distance=model.config.distance).tolist()
    sign = {Gender.MALE: 1.0, Gender.FEMALE: -1.0}.get(int(groups.gender[entity]), float("nan"))
    rows = []
    for o, score in zip(held.tolist(), scores, strict=True):
        pair = by_occupation.get(o)
        bias = float(b_in[pair]) if pair is not None else float("nan")
        fisher = float(b_fisher[pair]) if pair is not None else float("nan")
        rows.append({"occupation": model.entity_labels[o], "occupation_name": entity_name(analysis, o),
                     "individual_bias": bias, "fisher_individual": fisher, "score": score,
                     "score_flipped": score + sign * bias})
    frame = pd.DataFrame(rows, columns=["occupation", "occupation_name", "individual_bias", "fisher_individual",
                                        "score", "score_flipped"])
    return frame.sort_values("individual_bias", key=lambda s: -s.abs(), kind="stable").reset_index(drop=True)


def person(analysis: ModelAnalysis, text: str) -> Person:
    """The person ``text`` names (:func:`resolve_person`) with their occupations (:func:`person_occupations`)."""
    entity = resolve_person(analysis, text)
    groups = analysis.groups
    return Person(entity=entity, label=analysis.model.entity_labels[entity], name=entity_name(analysis, entity),
                  gender=GENDER_WORDS.get(int(groups.gender[entity]), UNKNOWN_GENDER),
                  degree=int(groups.degree[entity]), occupations=person_occupations(analysis, entity))


def person_triples(analysis: ModelAnalysis, entity: int, occupation: str | None = None) -> pd.DataFrame:
    """The person's training triples in words (:func:`~kgbias_core.tables.triples_in_words`), with ``influence``:
    each one's delta_z on ``occupation``'s B_gr (METHODS §4; NaN without an occupation), largest |influence| first."""
    triples = analysis.model.triples
    indices = ((triples[:, 0] == entity) | (triples[:, 2] == entity)).nonzero().squeeze(-1)
    frame = triples_in_words(triples_frame(analysis, indices))
    if occupation is None:
        return frame.assign(influence=float("nan"))
    influence = analysis.influence(occupation)[indices]
    frame["influence"] = influence.double().cpu().numpy()
    return frame.sort_values("influence", key=lambda s: -s.abs(), kind="stable").reset_index(drop=True)
