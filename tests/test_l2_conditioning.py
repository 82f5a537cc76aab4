"""experiments/whatif_accuracy/l2_conditioning.py (issue 25): the L2 step at several norm floors, CG uncapped."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.influence import prediction
from kgbias_core.influence.retraining_check import removal_set
from tests.conftest import REPO, load_script, occupation_with_both, small_distance_model


def test_the_floors_change_the_step_and_count_products_and_the_lab_is_left_as_it_was(monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(REPO / "experiments" / "whatif_accuracy"))  # its sibling whatif_accuracy.py
    script = load_script("experiments/whatif_accuracy/l2_conditioning.py", "l2_conditioning")
    model = small_distance_model("l2", negatives=8)
    analysis = ModelAnalysis(model)
    label = analysis.groups.labels[occupation_with_both(analysis.context, minimum=2)]
    sets = pd.DataFrame({"occupation": [label, label], "kind": ["top", "bottom"], "k": [4, 4], "actual": [0.1, -0.1]})
    lab_solver = prediction.conjugate_gradients
    rows = script.floor_rows(analysis, sets, [prediction.L2_NORM_FLOOR, 1.0])
    assert (prediction.L2_NORM_FLOOR, prediction.CG_ITERATIONS, prediction.L2_CG_ITERATIONS) == (1e-3, 200, 25)
    assert prediction.conjugate_gradients is lab_solver
    monkeypatch.setattr(prediction, "L2_CG_ITERATIONS", script.UNCAPPED)  # the lab's step uncapped, as the script's
    monkeypatch.setattr(prediction, "CG_ITERATIONS", script.UNCAPPED)
    lab = [prediction.predict_removal(analysis, label, removal_set(analysis.influence(label), kind=kind, k=4)).point
           for kind in ("top", "bottom")]
    at_lab_floor = rows[rows["floor"] == prediction.L2_NORM_FLOOR]
    assert at_lab_floor["step"].tolist() == pytest.approx(lab, rel=1e-3)  # the lab's step, to its own tolerance
    assert (rows["products"] > 0).all()
    softer = rows[rows["floor"] == 1.0]
    assert not softer["step"].to_numpy() == pytest.approx(at_lab_floor["step"].to_numpy(), rel=1e-3)

    # each term |H| holds, by a loop: a positive once when any of its pairs is active, each active negative
    active = analysis.active_terms
    n = model.triples.shape[0]
    e, r = model.entity_embeddings, model.relation_embeddings
    by_loop = []
    for i in range(n):
        if bool(active[i::n].any()):
            h, rel, t = model.triples[i].tolist()
            by_loop.append(float(torch.linalg.vector_norm(e[h] + r[rel] - e[t])))
    for j in active.nonzero().squeeze(1).tolist():
        h, rel, t = model.frozen_negatives[j].tolist()
        by_loop.append(float(torch.linalg.vector_norm(e[h] + r[rel] - e[t])))
    norms = script.active_norms(model, active)
    assert sorted(norms.tolist()) == pytest.approx(sorted(by_loop))
    table = script.summary(rows, norms)
    assert table["sets"].tolist() == [2, 2]
    half = float((torch.tensor(by_loop) < torch.tensor(by_loop).median()).double().mean())
    assert table.set_index("floor").loc[1.0, "terms_under_floor"] == pytest.approx(half)
    assert table["products_max"].tolist() == rows.groupby("floor", sort=False)["products"].max().tolist()
