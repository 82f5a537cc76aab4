"""Projection debiasing (Bourli & Pitoura 2020, after Bolukbasi et al. 2016's hard debiasing).

Bourli & Pitoura ("Bias in Knowledge Graph Embeddings", ASONAM 2020) debias TransE by projecting
occupation embeddings onto the complement of a gender direction. kgbias learns that direction from
the trained model in one of two ways (``direction``):

- ``"values"`` (default): g = m - f, the difference of the gender relation's male and female value
  entities. It is the direction of Du §3.1's word-embedding-style baseline B_wo(o) = o . (m - f)
  (METHODS §1), so removing it sets B_wo of every projected occupation to exactly 0: the method's
  own success criterion, checkable in the store's model.
- ``"persons"``: g = mean of the men's embeddings - mean of the women's (persons with a binary gender
  value, :class:`~kgbias_core.measures.groups.OccupationGroups`), Bolukbasi's "defining pairs"
  averaged over the graph's people.

Each chosen vector x (occupations; persons too with ``persons=True``) becomes x - (x . g_hat) g_hat,
g_hat = g / ||g||. Nothing else moves: the relations, the gender values and every other entity keep
their weights. The result is an ordinary model of the store with the base model's triples, id maps
and splits; ``config.json`` records ``debias`` (method, direction, what was projected, base model and
its fingerprint). It is not an optimum of TransE's objective, so influence, what-ifs and noise bands
refuse it with :data:`~kgbias_core.errors.DEBIASED_NO_RETRAIN`; every measure and link prediction run.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Literal, get_args

import torch

from kgbias_core.data.graph import Gender
from kgbias_core.embeddings.store import StoredModel, config_fingerprint
from kgbias_core.errors import DEBIAS_NO_DIRECTION, MeasureError
from kgbias_core.measures.groups import OccupationGroups, occupation_groups
from kgbias_core.types import FloatTensor, LongTensor

#: Where the gender direction comes from (see the module docstring).
Direction = Literal["values", "persons"]
DIRECTIONS: tuple[str, ...] = get_args(Direction)


def gender_direction(
    *, entity_embeddings: FloatTensor, groups: OccupationGroups, direction: Direction = "values"
) -> FloatTensor:
    """The unnormalised gender direction g: m - f (``values``) or mean(men) - mean(women) (``persons``).

    Shapes: entity_embeddings [E, d] -> [d]. Points toward male (the sign convention of B_wo).
    """
    if direction == "values":
        return entity_embeddings[groups.male] - entity_embeddings[groups.female]
    men = groups.gender == Gender.MALE
    women = groups.gender == Gender.FEMALE
    if not bool(men.any()) or not bool(women.any()):
        raise ValueError("the graph has no man or no woman to average")
    return entity_embeddings[men].mean(0) - entity_embeddings[women].mean(0)


def project_out(vectors: FloatTensor, direction: FloatTensor) -> FloatTensor:
    """x - (x . g_hat) g_hat for every row x: the component along g removed. [n, d], [d] -> [n, d].

    Computed in float64 and rounded back, so that (x - (x . g_hat) g_hat) . g is 0 up to the
    rounding of the result itself.
    """
    g = direction.to(torch.float64)
    g_hat = g / torch.linalg.vector_norm(g)
    x = vectors.to(torch.float64)
    return (x - (x @ g_hat)[:, None] * g_hat).to(vectors.dtype)


def projected_entities(
    *,
    entity_embeddings: FloatTensor,
    groups: OccupationGroups,
    occupations: LongTensor | None = None,
    persons: bool = False,
    direction: Direction = "values",
) -> FloatTensor:
    """Entity embeddings with the gender component removed from ``occupations`` (indices into
    ``groups.occupations``; None: all) and, with ``persons``, from every person with a binary gender.

    Shapes: entity_embeddings [E, d] -> [E, d] (a new tensor; the input is untouched).
    """
    g = gender_direction(entity_embeddings=entity_embeddings, groups=groups, direction=direction)
    rows = groups.occupations if occupations is None else groups.occupations[occupations]
    if persons:
        binary = ((groups.gender == Gender.MALE) | (groups.gender == Gender.FEMALE)).nonzero().squeeze(-1)
        rows = torch.unique(torch.cat([rows, binary]))
    out = entity_embeddings.clone()
    out[rows] = project_out(entity_embeddings[rows], g)
    return out


def projected_model(
    model: StoredModel,
    *,
    name: str,
    occupations: Sequence[str] | None = None,
    persons: bool = False,
    direction: Direction = "values",
) -> StoredModel:
    """``model`` with the gender direction projected out (:func:`projected_entities`), as a new model.

    ``occupations``: labels or names (None: every occupation). The result keeps the base model's
    triples and negatives and records ``info["debias"]``; it is ready for :func:`save_model`.
    """
    start = time.perf_counter()
    groups = occupation_groups(model)
    entities = model.entity_embeddings
    try:
        gender_direction(entity_embeddings=entities, groups=groups, direction=direction)
    except ValueError as exc:
        raise MeasureError(DEBIAS_NO_DIRECTION.format(model=model.name, reason=exc)) from None
    index = None if occupations is None else torch.tensor([groups.index(o) for o in occupations], dtype=torch.long)
    projected = projected_entities(entity_embeddings=entities, groups=groups, occupations=index, persons=persons,
                                   direction=direction)
    labels = None if index is None else [groups.labels[i] for i in index.tolist()]
    base_config = {**model.config.to_dict(), "dataset": model.dataset, "data_hash": model.data_hash,
                   "edit": model.edit, **model.info}
    debias = {
        "method": "project",
        "direction": direction,
        "occupations": labels,  # None: all occupations
        "persons": persons,
        "base_model": model.name,
        "base_config_hash": config_fingerprint(base_config)["config_hash"],
    }
    return replace(
        model,
        name=name,
        weights={**model.weights, "entity_embeddings": projected},
        influence_scale=None,
        calibration=None,
        # seconds outside ``debias``: that dict is part of the fingerprint, which must not vary run to run.
        info={**model.info, "base_model": model.name, "debias": debias, "debias_seconds": time.perf_counter() - start},
    )
