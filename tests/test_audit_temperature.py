"""experiments/whatif_accuracy/audit_temperature.py (issue 25): the hinge's temperature set by one audit against the
audit's scale, on sets whose retrains are real. A run on the tests' model: its audit is one masked retrain made by the
script, both estimators' points are those of the core made here independently, and the ratio table equals a plain
loop over the rows."""

from __future__ import annotations

import importlib

import pandas as pd
import pytest

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.influence.hinge_curvature import hinge_curvature_hvp
from kgbias_core.influence.prediction import PREDICTION_TOLERANCE, newton_change
from kgbias_core.influence.retraining_check import masked_retrain_bias, removal_set
from kgbias_core.tasks.prediction_audit import audit_occupation, audit_set
from tests.conftest import REPO, load_script


@pytest.fixture
def script(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "experiments" / "whatif_accuracy"))  # its siblings band_fit, hinge_curvature
    return load_script("experiments/whatif_accuracy/audit_temperature.py", "audit_temperature")


def test_a_run_calibrates_both_estimators_on_one_retrain_and_judges_the_others(script, tiny_model, tmp_path,
                                                                               monkeypatch) -> None:
    analysis = ModelAnalysis(tiny_model)
    groups = analysis.groups
    audited = audit_occupation(analysis)
    others = [label for label, m, f in zip(groups.labels, groups.n_male.tolist(), groups.n_female.tolist(),
                                           strict=True) if label != audited and min(m, f) >= 3][:2]
    # a bench of two occupations' top and bottom 16%, each retrained masked here: the sets the run judges
    base = masked_retrain_bias(tiny_model, removed=None, groups=groups)
    bench = []
    for label in others:
        index, influence = groups.index(label), analysis.influence(label)
        k = max(1, int((influence != 0).sum()) * 16 // 100)
        for kind in ("top", "bottom"):
            removed = removal_set(influence, kind=kind, k=k)
            actual = float(masked_retrain_bias(tiny_model, removed=removed, groups=groups)[index] - base[index])
            bench.append({"occupation": label, "men": int(groups.n_male[index]), "women": int(groups.n_female[index]),
                          "kind": kind, "share": 16, "k": k, "actual": actual})
    pd.DataFrame(bench).to_csv(tmp_path / "bench.csv", index=False)

    hinge_module = importlib.import_module("hinge_curvature")  # the sibling the script imported its model from
    band_fit = importlib.import_module("band_fit")  # and the one it fits bands with
    monkeypatch.setattr(hinge_module, "the_model", lambda *a, **k: tiny_model)  # the tests' model, not a data set's
    out = tmp_path / "run.csv"
    monkeypatch.setattr("sys.argv", ["audit_temperature.py", "--sets", str(tmp_path / "bench.csv"),
                                      "--out", str(out)])
    script.main()
    rows = pd.read_csv(out)
    assert len(rows) == 4 and set(rows["occupation"]) == set(others)

    # the audit, made independently: the lab's audit set, one masked retrain, the ratio and the temperature
    index = groups.index(audited)
    _, _, removed = audit_set(analysis, audited)
    retrained = float(masked_retrain_bias(tiny_model, removed=removed, groups=groups)[index] - base[index])

    def change(hvp, scale=1.0, occupation=audited, removal=removed) -> float:
        return newton_change(tiny_model, removal, groups=groups, occupation_index=groups.index(occupation),
                             damping=0.0, tolerance=PREDICTION_TOLERANCE, scale=scale, hvp=hvp)

    from kgbias_core.influence.prediction import absolute_curvature_hvp

    abs_h = absolute_curvature_hvp(tiny_model)
    ratio = retrained / change(abs_h)
    assert rows["audit_ratio"].iloc[0] == pytest.approx(ratio, rel=1e-4)
    temperature = float(rows["temperature"].iloc[0])
    assert change(hinge_curvature_hvp(tiny_model, temperature, base=abs_h)) == pytest.approx(retrained, rel=0.02)
    for _, row in rows.iterrows():
        removal = removal_set(analysis.influence(row["occupation"]), kind=row["kind"], k=int(row["k"]))
        assert row["scaled"] == pytest.approx(change(abs_h, ratio, row["occupation"], removal), rel=1e-3)
        hinge = change(hinge_curvature_hvp(tiny_model, temperature, base=abs_h), 1.0, row["occupation"], removal)
        assert row["hinge"] == pytest.approx(hinge, rel=1e-3)
    assert rows["actual"].tolist() == pytest.approx([b["actual"] for b in bench])

    # the ratio table against a plain loop; the band table has both estimators, in-sample and held out
    ratios = pd.DataFrame(script.ratio_rows("tiny", rows)).set_index("estimator")
    for estimator in ("scaled", "hinge"):
        quotients = sorted(a / p for a, p in zip(rows["actual"], rows[estimator], strict=True))
        assert ratios.loc[estimator, "median_ratio"] == pytest.approx((quotients[1] + quotients[2]) / 2)
        within = sum(abs(a - p) <= 0.3 * abs(p) for a, p in zip(rows["actual"], rows[estimator], strict=True))
        assert ratios.loc[estimator, "within_30pct"] == pytest.approx(within / 4)
    # two "graphs" (one occupation each): a graph held out is judged by the pair fitted on the other alone
    graphs = {label: rows[rows["occupation"] == label] for label in others}
    table = script.bands(graphs, 0.95).set_index(["estimator", "evaluation"])
    for estimator in ("scaled", "hinge"):
        for held, other in (others, others[::-1]):
            judged_rows = graphs[held].assign(scaled=graphs[held][estimator], in_audit=False)
            judged_rows["m"] = judged_rows[["men", "women"]].min(axis=1).clip(lower=1)
            train = graphs[other].assign(scaled=graphs[other][estimator], in_audit=False)
            train["m"] = train[["men", "women"]].min(axis=1).clip(lower=1)
            a, b = band_fit.fit(train, 0.95)
            covered, _ = band_fit.judged(judged_rows, a, b)
            row = table.loc[(estimator, f"leave-one-graph-out {held}")]
            assert (row["a"], row["b"]) == (a, b) and row["coverage"] == pytest.approx(covered.mean())
        assert table.loc[(estimator, "leave-one-graph-out all"), "sets"] == 4
