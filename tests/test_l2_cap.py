"""experiments/whatif_accuracy/l2_cap.py (issue 25): the L2 step's point at several caps of CG, from one solve."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.influence import prediction
from kgbias_core.influence.iterative import conjugate_gradients
from kgbias_core.influence.retraining_check import removal_set
from tests.conftest import REPO, load_script, occupation_with_both, small_distance_model


def test_cg_hands_each_iterate_to_on_iterate_and_returns_the_last() -> None:
    a = torch.tensor([[4.0, 1.0], [1.0, 3.0]])
    rhs = (torch.tensor([[1.0, 2.0]]), torch.tensor([[0.5, -1.0]]))

    def apply(v):  # the same 2 x 2 system on each half of the vector
        return v[0] @ a, v[1] @ a

    seen = []
    x = conjugate_gradients(apply, rhs, iterations=10, tolerance=1e-12,
                            on_iterate=lambda i, it: seen.append((i, it[0].clone(), it[1].clone())))
    assert [i for i, _, _ in seen] == list(range(1, len(seen) + 1)) and 1 <= len(seen) <= 4
    assert torch.equal(seen[-1][1], x[0]) and torch.equal(seen[-1][2], x[1])
    assert x[0] @ a == pytest.approx(rhs[0], abs=1e-5) and x[1] @ a == pytest.approx(rhs[1], abs=1e-5)
    stopped = conjugate_gradients(apply, rhs, iterations=1, tolerance=1e-12)
    assert torch.equal(stopped[0], seen[0][1])  # the first iterate is a solve stopped after one product


def test_each_caps_point_is_a_solve_stopped_there_and_the_summary_scales_by_that_caps_audit(monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(REPO / "experiments" / "whatif_accuracy"))  # its siblings
    script = load_script("experiments/whatif_accuracy/l2_cap.py", "l2_cap")
    model = small_distance_model("l2", negatives=8)
    analysis = ModelAnalysis(model)
    labels = analysis.groups.labels
    label = labels[occupation_with_both(analysis.context, minimum=2)]
    sets = pd.DataFrame({"occupation": [label, label], "name": [label, label], "men": [5, 5], "women": [3, 3],
                         "kind": ["top", "bottom"], "share": [16, 16], "k": [4, 4], "in_audit": [True, False],
                         "actual": [0.1, -0.05]})
    cap = prediction.cg_cap("l2")
    rows = script.cap_rows(analysis, sets, [1, 3, cap, prediction.CG_ITERATIONS])
    for row, kind in zip(rows.itertuples(), ("top", "bottom"), strict=True):
        removed = removal_set(analysis.influence(label), kind=kind, k=4)
        lab = prediction.predict_removal(analysis, label, removed).point
        assert getattr(row, f"step_{cap}") == pytest.approx(lab, rel=1e-6)  # the lab's step at L2's cap
        monkeypatch.setattr(prediction, "L2_CG_ITERATIONS", 1)
        assert row.step_1 == pytest.approx(prediction.predict_removal(analysis, label, removed).point, rel=1e-6)
        monkeypatch.setattr(prediction, "L2_CG_ITERATIONS", cap)
        assert 0 < row.products <= prediction.CG_ITERATIONS
    summary = script.cap_summary({"g": rows}, {}, 0.95)
    assert summary["cap"].tolist() == [1, 3, cap, prediction.CG_ITERATIONS]
    for row in summary.itertuples():
        assert row.audit_ratio == f"g {0.1 / rows[f'step_{row.cap}'].iloc[0]:.2f}"
        assert row.sets == 1  # the audit set is left out of the judged sets
    assert summary["off_median"].iloc[-1] == 0.0
