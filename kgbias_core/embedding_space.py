"""The embedding space made visible: persons and occupations on the learned gender direction and one more axis.

The gender axis is the normalised difference of the mean male and the mean female person embedding,
d = (mean_{men} e - mean_{women} e) / ||...|| (a learned direction, as in Bolukbasi et al.'s "he - she"; not
Du's m - f, which is two single entities). The second axis is the first principal component of what is left
once the gender component is removed: the largest spread the gender axis does not explain. Positive x = towards
the men's mean. Pure tensor functions; the frame names the points for the dashboard and its CSV.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.data.graph import Gender
from kgbias_core.errors import NO_GENDER_DIRECTION, MeasureError
from kgbias_core.tables import GENDER_WORDS, UNKNOWN_GENDER, entity_name
from kgbias_core.types import FloatTensor

#: Point kind of an occupation in :func:`embedding_space` (persons carry their gender word instead).
OCCUPATION_KIND = "occupation"


@dataclass(frozen=True)
class GenderAxes:
    """Two axes of an embedding space and the points' coordinates on them."""

    x: FloatTensor  # [n] projection on the gender direction
    y: FloatTensor  # [n] projection on the residual's first principal component (centred)
    direction: FloatTensor  # [d] unit gender direction, towards the men's mean
    component: FloatTensor  # [d] unit first principal component of the residual, orthogonal to direction
    explained: float  # share of the residual's variance along ``component``


def gender_axes(points: FloatTensor, *, male: FloatTensor, female: FloatTensor) -> GenderAxes:
    """Project ``points`` [n, d] on d = (mean(male) - mean(female)) / ||.|| (male [a, d], female [b, d]) and on
    the first principal component of their residual points - (points . d) d (centred over the n points).

    The component's sign is fixed so that its largest-magnitude entry is positive (a PCA axis has none of its own).
    """
    points = points.double()
    difference = male.double().mean(0) - female.double().mean(0)
    direction = difference / torch.linalg.vector_norm(difference)
    x = points @ direction  # [n]
    residual = points - x[:, None] * direction[None, :]  # [n, d], orthogonal to the direction
    centred = residual - residual.mean(0, keepdim=True)
    _, singular, vh = torch.linalg.svd(centred, full_matrices=False)
    component = vh[0]
    component = component * torch.sign(component[component.abs().argmax()])
    variance = singular.pow(2)
    explained = float(variance[0] / variance.sum()) if float(variance.sum()) > 0 else float("nan")
    return GenderAxes(x=x, y=centred @ component, direction=direction, component=component, explained=explained)


def embedding_space(analysis: ModelAnalysis) -> tuple[pd.DataFrame, GenderAxes]:
    """Every person (an entity with a gender or occupation fact) and every occupation on :func:`gender_axes`.

    Columns ``entity`` (id), ``label``, ``name``, ``kind`` ("male", "female", "other", "unknown" for persons,
    :data:`OCCUPATION_KIND`), ``gender_axis``, ``second_axis``. An entity that is both (rare) is an occupation.
    """
    model, groups = analysis.model, analysis.groups
    e = model.entity_embeddings
    is_occupation = torch.zeros(model.n_entities, dtype=torch.bool, device=analysis.is_person.device)
    is_occupation[groups.occupations] = True
    persons = (analysis.is_person & ~is_occupation).nonzero().squeeze(-1)
    entities = torch.cat([persons, groups.occupations])
    men = (groups.gender == Gender.MALE).nonzero().squeeze(-1)
    women = (groups.gender == Gender.FEMALE).nonzero().squeeze(-1)
    if not len(men) or not len(women):
        raise MeasureError(NO_GENDER_DIRECTION)
    axes = gender_axes(e[entities].cpu(), male=e[men].cpu(), female=e[women].cpu())
    kinds = [GENDER_WORDS.get(g, UNKNOWN_GENDER) for g in groups.gender[persons].tolist()]
    kinds += [OCCUPATION_KIND] * int(groups.occupations.shape[0])
    ids = entities.tolist()
    frame = pd.DataFrame({
        "entity": ids,
        "label": [model.entity_labels[i] for i in ids],
        "name": [entity_name(analysis, i) for i in ids],
        "kind": kinds,
        "gender_axis": axes.x.numpy(),
        "second_axis": axes.y.numpy(),
    })
    return frame, axes
