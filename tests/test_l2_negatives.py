"""experiments/whatif_accuracy/l2_negatives.py (issue 25): L2's step under four curvatures of its negatives."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.influence import prediction
from kgbias_core.influence.retraining_check import removal_set
from tests.conftest import REPO, load_script, occupation_with_both, small_distance_model


def _flat(vector) -> torch.Tensor:
    return torch.cat([vector[0].reshape(-1), vector[1].reshape(-1)])


@pytest.fixture(scope="module")
def script():
    import sys

    sys.path.insert(0, str(REPO / "experiments" / "whatif_accuracy"))  # its siblings
    try:
        yield load_script("experiments/whatif_accuracy/l2_negatives.py", "l2_negatives")
    finally:
        sys.path.remove(str(REPO / "experiments" / "whatif_accuracy"))


def test_each_variant_is_autograds_hessian_of_its_own_curvature(script) -> None:
    """Per variant, |H| against autograd's dense Hessian of l2/2 ||theta||^2 + the active terms' psi (each pair's
    positive and negative, 1/K each): exact, ||x|| on every term; lab, ||x||^2 / (2 ||x'||) at the trained residual
    on the negatives; isotropic, that on every term; positives, the negatives left out. The diagonals are the
    dense Hessians' diagonals, and the four differ from one another (the test tells them apart)."""
    model = small_distance_model("l2", negatives=3)
    E, R = model.entity_embeddings, model.relation_embeddings
    split = E.numel()
    active = prediction.active_terms(model)
    k = model.frozen_negatives.shape[0] // model.triples.shape[0]
    pairs = int(active.sum())
    terms = torch.cat([model.triples.repeat(k, 1)[active], model.frozen_negatives[active]])
    trained = (E[terms[:, 0]] + R[terms[:, 1]] - E[terms[:, 2]]).norm(dim=-1)
    exact_on = {"exact": slice(0, 2 * pairs), "lab": slice(0, pairs), "isotropic": slice(0, 0),
                "positives": slice(0, pairs)}
    square_on = {"exact": slice(0, 0), "lab": slice(pairs, 2 * pairs), "isotropic": slice(0, 2 * pairs),
                 "positives": slice(0, 0)}
    generator = torch.Generator().manual_seed(5)
    v = (torch.randn(E.shape, generator=generator, dtype=torch.float64),
         torch.randn(R.shape, generator=generator, dtype=torch.float64))
    products = {}
    for variant in script.VARIANTS:
        def objective(theta: torch.Tensor, variant=variant) -> torch.Tensor:
            e, r = theta[:split].reshape(E.shape), theta[split:].reshape(R.shape)
            x = e[terms[:, 0]] + r[terms[:, 1]] - e[terms[:, 2]]
            exact, square = exact_on[variant], square_on[variant]
            psi = x[exact].norm(dim=-1).sum() + ((x[square] * x[square]).sum(-1) / (2 * trained[square])).sum()
            return psi / k + model.config.l2 / 2 * (theta * theta).sum()

        dense = torch.autograd.functional.hessian(objective, torch.cat([E.reshape(-1), R.reshape(-1)]))
        operator = script.variant_operator(model, active, variant)
        products[variant] = _flat(operator(v))
        assert torch.allclose(products[variant], dense @ _flat(v), rtol=1e-8, atol=1e-8), variant
        diagonal = torch.cat([operator.diagonal[0].expand_as(v[0]).reshape(-1),
                              operator.diagonal[1].expand_as(v[1]).reshape(-1)])
        assert torch.allclose(diagonal, torch.diagonal(dense)), variant
    names = list(products)
    assert all(not torch.allclose(products[a], products[b]) for a in names for b in names if a < b)


def test_the_lab_variants_point_is_the_labs_prediction_and_the_summary_scales_each_by_its_audit(script) -> None:
    model = small_distance_model("l2", negatives=8)
    analysis = ModelAnalysis(model)
    label = analysis.groups.labels[occupation_with_both(analysis.context, minimum=2)]
    sets = pd.DataFrame({"occupation": [label, label], "name": [label, label], "men": [5, 5], "women": [3, 3],
                         "kind": ["top", "bottom"], "share": [16, 16], "k": [4, 4], "in_audit": [True, False],
                         "actual": [0.1, -0.05]})
    cap = prediction.cg_cap("l2")
    rows = script.variant_rows(analysis, sets, list(script.VARIANTS), [3, cap])
    for row, kind in zip(rows.itertuples(), ("top", "bottom"), strict=True):
        removed = removal_set(analysis.influence(label), kind=kind, k=4)
        assert getattr(row, f"lab_{cap}") == pytest.approx(prediction.predict_removal(analysis, label, removed).point,
                                                           rel=1e-6)
    assert len({round(float(rows[f"{v}_{cap}"].iloc[0]), 12) for v in script.VARIANTS}) == 4
    summary = script.point_summary({"g": rows}, {}, 0.95, {v: f"{v}_{cap}" for v in script.VARIANTS},
                                   f"exact_{cap}")
    for row in summary.itertuples():
        assert row.audit_ratio == f"g {0.1 / rows[f'{row.point}_{cap}'].iloc[0]:.2f}" and row.sets == 1
    assert summary.set_index("point").loc["exact", "off_median"] == 0.0
