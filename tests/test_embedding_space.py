"""The embedding space (issue 28): the gender axis and the residual's first principal component against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embedding_space import OCCUPATION_KIND, embedding_space, gender_axes


def test_projection_matches_numpy_on_the_synthetic_graph(tiny_model) -> None:
    analysis = ModelAnalysis(tiny_model)
    frame, axes = embedding_space(analysis)
    E = tiny_model.entity_embeddings.double().numpy()
    s = tiny_model.schema
    labels, relations = tiny_model.entity_labels, tiny_model.relation_labels
    gender: dict[str, set[str]] = {}
    for h, r, t in tiny_model.triples.tolist():
        if relations[r] == s.gender_relation:
            gender.setdefault(labels[h], set()).add(labels[t])
    men = [tiny_model.entity_id(p) for p, v in gender.items() if v == {s.male}]
    women = [tiny_model.entity_id(p) for p, v in gender.items() if v == {s.female}]
    d = E[men].mean(0) - E[women].mean(0)
    d /= np.linalg.norm(d)
    points = E[frame["entity"].to_numpy()]
    np.testing.assert_allclose(frame["gender_axis"], points @ d, rtol=1e-6, atol=1e-9)
    residual = points - np.outer(points @ d, d)
    centred = residual - residual.mean(0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    pc = vt[0] * np.sign(vt[0][np.abs(vt[0]).argmax()])
    np.testing.assert_allclose(frame["second_axis"], centred @ pc, rtol=1e-6, atol=1e-9)
    assert abs(float(axes.direction.numpy() @ axes.component.numpy())) < 1e-9  # orthogonal axes
    # Every person and every occupation is drawn, each once.
    occupations = {labels[t] for _, r, t in tiny_model.triples.tolist() if relations[r] == s.occupation_relation}
    assert set(frame.loc[frame["kind"] == OCCUPATION_KIND, "label"]) == occupations
    assert set(frame.loc[frame["kind"].isin(["male", "female"]), "label"]) >= set(gender) - {
        p for p, v in gender.items() if len(v) > 1 or not v <= {s.male, s.female}}
    assert frame["entity"].is_unique
    # Men sit on the positive side on average: the axis points towards their mean.
    assert frame.loc[frame["kind"] == "male", "gender_axis"].mean() > frame.loc[frame["kind"] == "female",
                                                                                 "gender_axis"].mean()


def test_gender_axes_on_a_hand_made_space() -> None:
    import torch

    male = torch.tensor([[2.0, 0.0, 0.0], [2.0, 1.0, 0.0]])
    female = torch.tensor([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    points = torch.tensor([[1.0, 0.0, 5.0], [1.0, 0.0, -5.0], [3.0, 0.0, 0.0]])
    axes = gender_axes(points, male=male, female=female)
    assert axes.direction.tolist() == [1.0, 0.0, 0.0]
    assert axes.x.tolist() == [1.0, 1.0, 3.0]
    assert axes.component.abs().tolist() == pytest.approx([0.0, 0.0, 1.0])
    assert sorted(axes.y.abs().tolist()) == pytest.approx([0.0, 5.0, 5.0])
    assert axes.explained == pytest.approx(1.0)
