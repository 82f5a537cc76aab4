"""Projection debiasing (Bourli & Pitoura): the component along the gender direction is removed exactly,
only from the rows asked for, and the result is an ordinary stored model that measures read."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embeddings.store import StoredModel, load_model, model_fingerprint, read_config, save_model
from kgbias_core.errors import DEBIASED_NO_RETRAIN, MeasureError
from kgbias_core.measures.group_bias import projection_bias
from kgbias_core.measures.groups import occupation_groups
from kgbias_core.whatif.projection import projected_model


def _numpy_projection(rows: np.ndarray, g: np.ndarray) -> np.ndarray:
    """The oracle: x - (x . g) g / (g . g), in float64."""
    return rows - np.outer(rows @ g, g) / (g @ g)


def test_projection_sets_b_wo_of_every_occupation_to_zero(tiny_model: StoredModel) -> None:
    groups = occupation_groups(tiny_model)
    before = projection_bias(entity_embeddings=tiny_model.entity_embeddings, groups=groups)
    after_model = projected_model(tiny_model, name="tiny-projected")
    after = projection_bias(entity_embeddings=after_model.entity_embeddings, groups=groups)
    assert float(before.abs().max()) > 0.1  # the base model has something to remove
    # float32 rounding of the projected vectors only: |o'| |m - f| * 2^-23 is far below 1e-5
    assert float(after.abs().max()) < 1e-5
    e = tiny_model.entity_embeddings.double().numpy()
    g = e[groups.male] - e[groups.female]
    expected = _numpy_projection(e[groups.occupations.numpy()], g)
    np.testing.assert_allclose(after_model.entity_embeddings[groups.occupations].double().numpy(), expected,
                               rtol=0, atol=1e-6)


def test_projection_moves_only_the_named_occupations(tiny_model: StoredModel) -> None:
    groups = occupation_groups(tiny_model)
    target = groups.labels[0]
    result = projected_model(tiny_model, name="tiny-projected-one", occupations=[target])
    moved = (result.entity_embeddings != tiny_model.entity_embeddings).any(dim=1).nonzero().squeeze(-1)
    assert moved.tolist() == [int(groups.occupations[0])]
    assert torch.equal(result.relation_embeddings, tiny_model.relation_embeddings)
    b_wo = projection_bias(entity_embeddings=result.entity_embeddings, groups=groups)
    assert abs(float(b_wo[0])) < 1e-5 and float(b_wo[1:].abs().max()) > 1e-3


def test_person_direction_projects_persons_too(tiny_model: StoredModel) -> None:
    groups = occupation_groups(tiny_model)
    result = projected_model(tiny_model, name="tiny-projected-persons", persons=True, direction="persons")
    e = tiny_model.entity_embeddings.double().numpy()
    gender = groups.gender.numpy()
    g = e[gender == 1].mean(0) - e[gender == 2].mean(0)
    binary = np.flatnonzero((gender == 1) | (gender == 2))
    np.testing.assert_allclose(result.entity_embeddings[binary].double().numpy(), _numpy_projection(e[binary], g),
                               rtol=0, atol=1e-6)
    # after projecting every person, the men's and women's means no longer differ along g
    after = result.entity_embeddings.double().numpy()
    assert abs((after[gender == 1].mean(0) - after[gender == 2].mean(0)) @ g) < 1e-6 * (g @ g)


def test_projected_model_is_stored_measured_and_refuses_influence(tmp_path: Path, tiny_model: StoredModel) -> None:
    path = save_model(projected_model(tiny_model, name="tiny-projected"), tmp_path)
    base_path = save_model(tiny_model, tmp_path)
    config = read_config(path)
    assert config["debias"]["method"] == "project" and config["debias"]["base_model"] == "tiny-transe"
    assert model_fingerprint(path) != model_fingerprint(base_path)
    loaded = load_model(path)
    analysis = ModelAnalysis(loaded)
    bias = analysis.group_bias()
    assert bool(torch.isfinite(bias).any())
    assert not torch.equal(bias, ModelAnalysis(tiny_model).group_bias())
    assert torch.isfinite(analysis.fisher_bp).all()
    with pytest.raises(MeasureError) as error:
        analysis.context  # noqa: B018
    assert str(error.value) == DEBIASED_NO_RETRAIN.format(model="tiny-projected", method="project")
