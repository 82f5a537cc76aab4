"""kgbias_core/influence/hinge_curvature.py and experiments/whatif_accuracy/hinge_curvature.py (issue 25): the
step's curvature with the smoothed hinge's Gauss-Newton term, against autograd; the audit's temperature against the
step it is solved from; the smoothed gradient of a removal against the hinge's as tau -> 0; the summary's shares
against a plain loop; and a run on the tests' graph, every column read back from a retrain."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embeddings.objective import negatives_count
from kgbias_core.influence.hinge_curvature import (
    BISECTIONS,
    GOLDEN_STEPS,
    TEMPERATURE_START,
    audit_temperature,
    hinge_curvature_hvp,
)
from kgbias_core.influence.prediction import absolute_curvature_hvp, removal_gradient
from tests.conftest import REPO, load_script, small_distance_model


@pytest.fixture
def script(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "experiments" / "whatif_accuracy"))  # its sibling whatif_accuracy.py
    return load_script("experiments/whatif_accuracy/hinge_curvature.py", "hinge_curvature")


def margins_of(model):
    """s(theta) of every term (z, z'_j), written out independently of the script, for autograd."""
    negatives = model.frozen_negatives
    k = negatives_count(negatives, model.triples.shape[0])
    pairs = model.triples if k == 1 else model.triples.repeat(k, 1)

    def s(entities, relations):
        x = entities[pairs[:, 0]] + relations[pairs[:, 1]] - entities[pairs[:, 2]]
        y = entities[negatives[:, 0]] + relations[negatives[:, 1]] - entities[negatives[:, 2]]
        return model.config.margin + (x * x).sum(-1) - (y * y).sum(-1)

    return s, k


@pytest.mark.parametrize("negatives", [1, 4])
def test_the_operator_is_abs_h_plus_the_smoothed_hinges_gauss_newton(script, negatives: int) -> None:
    model = small_distance_model("squared_l2", negatives)
    entities, relations = model.entity_embeddings.detach(), model.relation_embeddings.detach()
    s_of, k = margins_of(model)
    generator = torch.Generator().manual_seed(0)
    vector = (torch.randn(entities.shape, generator=generator, dtype=entities.dtype),
              torch.randn(relations.shape, generator=generator, dtype=relations.dtype))
    tau = 0.5
    s, along = torch.func.jvp(s_of, (entities, relations), vector)  # g^T v of every term
    t = tau * model.config.margin
    weight = torch.sigmoid(s / t) * (1 - torch.sigmoid(s / t)) / t / k
    _, pull = torch.func.vjp(s_of, entities, relations)
    extra = pull(weight * along)
    want = [b + e for b, e in zip(absolute_curvature_hvp(model)(vector), extra, strict=True)]
    hvp = hinge_curvature_hvp(model, tau)
    diagonal = hvp.diagonal
    for got, expected in zip(hvp(vector), want, strict=True):
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5 * float(expected.abs().max()))
    assert all(bool((d > 0).all()) for d in diagonal)
    plain = hinge_curvature_hvp(model, 0.0)  # tau 0: the lab's |H|
    for got, expected in zip(plain(vector), absolute_curvature_hvp(model)(vector), strict=True):
        torch.testing.assert_close(got, expected)
    with pytest.raises(ValueError, match="squared_l2"):  # g is squared L2's: another distance is refused, not guessed
        hinge_curvature_hvp(small_distance_model("l1", 1), tau)


def test_the_audit_temperature_is_found_on_the_rising_side() -> None:
    """A step that falls from T = 0 to its lowest at 0.7, then rises: T is where it meets the retrain on the rising
    side, to the bisection's precision, from above and from below the start; no T where the retrain is above the step
    at the range's top, below its lowest point, or of the other sign."""
    def step_at(t: float) -> float:
        return 0.2 + 0.3 * math.log(t / 0.7) ** 2 if t < 0.7 else 0.2 + 0.1 * math.log(t / 0.7)

    for retrained in (0.3, 0.21, 0.4):  # T = 0.7 e^{(r - 0.2) / 0.1}: above the start, below it, far above
        t, read = audit_temperature(step_at, retrained)
        assert t == pytest.approx(0.7 * math.exp((retrained - 0.2) / 0.1), rel=0.006)
        assert [point for point, _ in read[:2]] == [8.0, TEMPERATURE_START]  # the top first, then the walk's start
        assert len(read) <= 2 + 4 + 2 + GOLDEN_STEPS + BISECTIONS
        t_neg, _ = audit_temperature(lambda t: -step_at(t), -retrained)  # a bottom set: the same T
        assert t_neg == pytest.approx(t)
    t, read = audit_temperature(step_at, 0.2 + 0.1 * math.log(9 / 0.7))
    assert t is None and len(read) == 1  # past the step at T = 8: one step says so
    assert audit_temperature(step_at, 0.19)[0] is None  # below the lowest point: the walk down turns back up
    assert audit_temperature(step_at, -0.3)[0] is None  # the retrain went the other way
    assert audit_temperature(step_at, float("nan"))[0] is None


def test_the_audit_temperature_meets_the_retrain_on_the_tests_model(tiny_model) -> None:
    """On the tests' model, the audit set's step at the temperature found equals the target to 2% (the target: the
    step at T = 1.3 gamma, so that a T exists)."""
    from kgbias_core.influence.prediction import PREDICTION_TOLERANCE, newton_change
    from kgbias_core.tasks.prediction_audit import audit_occupation, audit_set

    analysis = ModelAnalysis(tiny_model)
    label = audit_occupation(analysis)
    _, _, removed = audit_set(analysis, label)
    base = absolute_curvature_hvp(tiny_model)

    def step_at(t: float) -> float:
        return newton_change(tiny_model, removed, groups=analysis.groups, occupation_index=analysis.groups.index(label),
                             damping=0.0, tolerance=PREDICTION_TOLERANCE,
                             hvp=hinge_curvature_hvp(tiny_model, t, base=base))

    target = step_at(1.3)
    assert abs(target) < abs(step_at(0.0))  # the hinge's curvature shrinks the step here
    t, _ = audit_temperature(step_at, target)
    assert t is not None and step_at(t) == pytest.approx(target, rel=0.02)


def test_the_smoothed_removal_gradient_tends_to_the_hinges(script) -> None:
    model = small_distance_model("squared_l2", 4)
    s_of, _ = margins_of(model)
    s = s_of(model.entity_embeddings.detach(), model.relation_embeddings.detach())
    # triples none of whose terms sits within 1e-3 of the kink: there the smoothed hinge's slope is relu's
    n = model.triples.shape[0]
    clear = (s.view(-1, n).abs() > 1e-3).all(0).nonzero().squeeze(1)[:12]
    hinge = removal_gradient(model, clear)
    smooth = script.smooth_removal_gradient(model, clear, 1e-6)
    for got, expected in zip(smooth, hinge, strict=True):
        torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-9)
    broad = script.smooth_removal_gradient(model, clear, 1.0)
    assert not torch.allclose(broad[0], hinge[0])  # at tau = the margin, terms off the kink count in part


def test_the_summary_against_a_plain_loop(script) -> None:
    runs = pd.DataFrame({"men": [20, 3, 40, 12], "women": [15, 1, 10, 30], "step_0.0": [1.0, -2.0, 0.5, 4.0],
                         "step_1.0": [0.3, -0.5, 0.2, 1.1], "actual": [0.31, -0.2, 0.25, 1.0]})
    table = script.summary(runs).set_index(["estimator", "sets"])
    for estimator in ("0.0", "1.0"):
        for sets, rows in (("all", [0, 1, 2, 3]), ("10+ of each gender", [0, 2, 3]), ("fewer than 10 of one", [1])):
            got = table.loc[(estimator, sets)]
            points = [runs[f"step_{estimator}"][i] for i in rows]
            actual = [runs["actual"][i] for i in rows]
            ratios = sorted(a / p for a, p in zip(actual, points, strict=True))
            middle = len(ratios) // 2
            median = ratios[middle] if len(ratios) % 2 else (ratios[middle - 1] + ratios[middle]) / 2
            assert got["n"] == len(rows) and got["median_ratio"] == pytest.approx(median)
            within = sum(abs(a - p) <= 0.3 * abs(p) for a, p in zip(actual, points, strict=True)) / len(rows)
            assert got["within_30pct"] == pytest.approx(within)
            scaled = sum(abs(a - p * median) <= 0.3 * abs(p * median) for a, p in zip(actual, points, strict=True))
            assert got["within_30pct_scaled"] == pytest.approx(scaled / len(rows))
            assert got["sign_right"] == pytest.approx(
                sum(math.copysign(1, a) == math.copysign(1, p) for a, p in zip(actual, points, strict=True))
                / len(rows))


def test_a_run_reads_its_sets_back_and_never_retrains_them_again(script, tiny_model, tmp_path, monkeypatch) -> None:
    """A run on the tests' model, then a second run with --sets-from the first's rows: the same steps, the retrained
    changes read back (no retrain), the first's step as computed as bench_newton."""
    monkeypatch.setattr(script, "the_model", lambda *a, **k: tiny_model)  # the tests' model, not a data set's
    first = tmp_path / "first.csv"
    args = ["--out", str(first), "--taus", "0,1", "--occupations", "2", "--shares", "16"]
    monkeypatch.setattr("sys.argv", ["hinge_curvature.py", *args])
    script.main()
    rows = pd.read_csv(first)
    assert len(rows) == 4 and set(rows["kind"]) == {"top", "bottom"}
    analysis = ModelAnalysis(tiny_model)
    from kgbias_core.influence.retraining_check import masked_retrain_bias, removal_set

    row = rows.iloc[0]
    index = analysis.groups.index(row["occupation"])
    removed = removal_set(analysis.influence(row["occupation"]), kind=row["kind"], k=int(row["k"]))
    base = masked_retrain_bias(tiny_model, removed=None, groups=analysis.groups)[index]
    again = masked_retrain_bias(tiny_model, removed=removed, groups=analysis.groups)[index]
    assert row["actual"] == pytest.approx(float(again - base), abs=1e-6)  # a real masked retrain of that set
    monkeypatch.setattr(script, "masked_retrain_bias", lambda *a, **k: pytest.fail("retrained a known set"))
    second = tmp_path / "second.csv"
    monkeypatch.setattr("sys.argv", ["hinge_curvature.py", "--out", str(second), "--taus", "0,1", "--shares", "16",
                                      "--sets-from", str(first.with_name("bench.csv"))])
    rows.rename(columns={"step_0.0": "newton"}).to_csv(first.with_name("bench.csv"), index=False)
    script.main()
    read = pd.read_csv(second)
    pd.testing.assert_series_equal(read["actual"], rows["actual"])
    pd.testing.assert_series_equal(read["bench_newton"], rows["step_0.0"], check_names=False)
    assert read["step_1.0"].to_numpy() == pytest.approx(rows["step_1.0"].to_numpy(), rel=1e-5)
    assert (second.with_name("second_summary.csv")).is_file()


def test_the_audit_set_at_tau_zero_is_the_labs_audit_prediction(script, tiny_model, tmp_path, monkeypatch) -> None:
    """--audit-taus builds the audit's set as the lab does; at tau 0 its step is the lab's step as computed."""
    from kgbias_core.influence.prediction import newton_change
    from kgbias_core.tasks.prediction_audit import audit_occupation, audit_set

    monkeypatch.setattr(script, "the_model", lambda *a, **k: tiny_model)
    analysis = ModelAnalysis(tiny_model)
    label = audit_occupation(analysis)
    out = tmp_path / "audit.csv"
    monkeypatch.setattr("sys.argv", ["hinge_curvature.py", "--audit-taus", "0,1", "--audit", label,
                                      "--audit-retrained", "0.5", "--out", str(out)])
    script.main()
    rows = pd.read_csv(out)
    moving, k, removed = audit_set(analysis, label)
    assert list(rows["tau"]) == [0.0, 1.0] and set(rows["k"]) == {k} and set(rows["moving"]) == {moving}
    lab = newton_change(tiny_model, removed, groups=analysis.groups, occupation_index=analysis.groups.index(label),
                        damping=0.0)
    assert rows["step"].iloc[0] == pytest.approx(lab, rel=2e-2)  # the script solves at the lab's CG tolerance
    assert abs(rows["step"].iloc[1]) < abs(rows["step"].iloc[0])  # the extra curvature shrinks the step here
