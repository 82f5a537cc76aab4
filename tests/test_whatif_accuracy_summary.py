"""The whatif_accuracy bench's summary (experiments/whatif_accuracy): what the docs' issue-25 table reads."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kgbias_core.commands.common import shard
from tests.conftest import load_script


def _bench():
    return load_script("experiments/whatif_accuracy/whatif_accuracy.py", "whatif_accuracy_bench")


def _row(kind, men, women, point, actual, *, floor=0.05, audit=False, share=2):
    return {"occupation": f"o{men}", "men": men, "women": women, "in_fit": False, "kind": kind, "share": share,
            "newton": point / 0.25, "low": point / 0.25 - 0.01, "high": point / 0.25 + 0.01,
            "old_point": point, "old_low": point - 0.1, "old_high": point + 0.1, "actual": actual,
            "scale": 0.25, "scaled": point, "scaled_low": point - 0.2, "scaled_high": point + 0.2,
            "floor": floor, "in_audit": audit, "newton_s": 1.0, "exact_newton": float("nan")}


def test_summary_leaves_out_the_audited_occupation_and_judges_random_sets_by_coverage_only() -> None:
    runs = pd.DataFrame([
        _row("top", 50, 40, 0.4, 0.45),            # inside both, sign right
        _row("bottom", 3, 2, -0.4, -0.7),          # outside: -0.7 < -0.6
        _row("top", 3, 2, 0.02, -0.03),            # inside the noise: wrong sign, but no claim
        _row("top", 900, 500, 0.4, 9.0, audit=True),  # the audit's own occupation: never counted
        _row("random", 50, 40, 0.0, 0.01),
        _row("random", 3, 2, 0.0, 0.5),
    ])
    frame = _bench().summary_frame(runs)
    scaled = frame[frame["estimator"].str.endswith("band as run")].set_index("sets")
    assert scaled.loc["targeted", "n"] == 3 and scaled.loc["random", "n"] == 2
    assert math.isclose(scaled.loc["targeted", "coverage"], 2 / 3)
    assert math.isclose(scaled.loc["targeted", "sign"], 2 / 3)
    assert scaled.loc["targeted", "sign_beyond_floor"] == 1.0  # the wrong sign was inside the floor
    assert math.isclose(scaled.loc["targeted", "half_width_large"], 0.2 / 0.4)
    assert scaled.loc["targeted", "small_n"] == 2
    assert scaled.loc["random", "coverage"] == 0.5
    for column in ("half_width", "half_width_large", "sign", "sign_beyond_floor", "ratio"):
        assert math.isnan(scaled.loc["random", column])
    text = _bench().summarize(runs)  # the printed lines are the frame's rows, then the cost
    assert text.count("\n") == len(frame) and "targeted | Newton step x 0.250 (audit), noise floor, band as run " \
        "(3 sets): coverage 67%" in text and text.endswith("max 1.00 s; exact-H step (targeted): median " \
                                                           "retrained/predicted nan")


def test_the_summary_judges_the_scaled_point_again_with_todays_band() -> None:
    """Runs made under an earlier band: the point and the floor are kept, the interval is today's
    [p / f, p * f] +- floor with the scaled step's f = SCALED_BAND_BASE + SCALED_BAND_SMALL / sqrt(m)."""
    from kgbias_core.influence.prediction import SCALED_BAND_BASE, SCALED_BAND_SMALL

    f = SCALED_BAND_BASE + SCALED_BAND_SMALL / 40 ** 0.5
    edge = 0.4 * f + 0.05  # today's upper end for m = 40, point 0.4, floor 0.05
    runs = pd.DataFrame([_row("top", 50, 40, 0.4, edge - 0.001), _row("top", 50, 40, 0.4, edge + 0.001),
                         _row("random", 50, 40, 0.0, 0.01)])
    bench = _bench()
    low, high = bench.current_band(runs)
    assert high[0] == high[1] == pytest.approx(edge) and low[0] == pytest.approx(0.4 / f - 0.05)
    frame = bench.summary_frame(runs)
    today = frame[frame["estimator"].str.contains("sqrt")].set_index("sets")
    as_run = frame[frame["estimator"].str.endswith("band as run")].set_index("sets")
    assert today.loc["targeted", "coverage"] == 0.5  # edge + 0.001 is outside today's band
    assert as_run.loc["targeted", "coverage"] == 1.0  # the stored interval (+-0.2 around 0.4) held both
    assert today.loc["targeted", "half_width"] == pytest.approx((edge - (0.4 / f - 0.05)) / 2 / 0.4)
    assert today.loc["random", "coverage"] == 1.0


def test_runs_predicted_at_the_audits_temperature_are_named_so_and_judged_with_the_hinge_band() -> None:
    """Runs whose lab point the audit's hinge temperature made (column temperature): the summary names T, and
    today's band is the hinge step's f = HINGE_BAND_BASE + HINGE_BAND_SMALL / sqrt(m), not the scaled step's."""
    from kgbias_core.influence.prediction import HINGE_BAND_BASE, HINGE_BAND_SMALL, SCALED_BAND_BASE

    f = HINGE_BAND_BASE + HINGE_BAND_SMALL / 40 ** 0.5
    edge = 0.4 * f + 0.05
    rows = [_row("top", 50, 40, 0.4, edge - 0.001), _row("top", 50, 40, 0.4, edge + 0.001)]
    runs = pd.DataFrame(rows).assign(scale=1.0, temperature=0.54)
    bench = _bench()
    low, high = bench.current_band(runs)
    assert high[0] == pytest.approx(edge) and low[0] == pytest.approx(0.4 / f - 0.05)
    frame = bench.summary_frame(runs)
    assert frame["estimator"].str.startswith("Newton step, hinge at T = 0.54 (audit)").sum() == 2
    today = frame[frame["estimator"].str.contains(f"band {HINGE_BAND_BASE} + {HINGE_BAND_SMALL}/sqrt", regex=False)]
    assert today["coverage"].tolist() == [0.5]
    scaled = bench.summary_frame(runs.drop(columns="temperature").assign(scale=0.25))  # a run before the hinge
    assert scaled["estimator"].str.contains(f"x 0.250 (audit), noise floor, band {SCALED_BAND_BASE}", regex=False).any()


def test_the_band_fit_finds_the_narrowest_band_that_covers() -> None:
    """band_fit.py on rows whose retrained/point ratio spans 0.8-1.25 at m = 100 without a floor: the narrowest
    covering band is f = 1.25 (then 1/f = 0.8), whatever split of a + b/10 gives it, and it covers every set."""
    band_fit = load_script("experiments/whatif_accuracy/band_fit.py", "band_fit")
    ratios = [0.8, 0.9, 1.0, 1.1, 1.25]
    runs = pd.DataFrame([{**_row("top", 100, 120, 0.5, 0.5 * q, floor=0.0), "occupation": f"o{i}"}
                         for i, q in enumerate(ratios)])
    rows = band_fit.targeted_rows(runs)
    a, b = band_fit.fit(rows, coverage=1.0)
    assert a + b / 10 == pytest.approx(1.25, abs=0.006)
    covered, width = band_fit.judged(rows, a, b)
    assert covered.all() and np.median(width) == pytest.approx((1.25 - 1 / 1.25) / 2, abs=0.005)
    table = band_fit.evaluate({"g": rows, "h": rows}, coverage=1.0)
    assert set(table["evaluation"]) >= {"in-sample all", "leave-one-out all", "g -> h", "all -> g"}


def test_the_closed_form_band_scales_the_closed_form_by_its_own_audit_ratio(monkeypatch) -> None:
    """closed_form_band.py: the closed form times retrained/closed form on the audited top 16% set. Where that
    scaled closed form is the scaled step on every set, the two points' fits are the same; where the closed form
    spreads more around the retrained changes, its fitted band is wider."""
    monkeypatch.syspath_prepend(str(Path(__file__).parents[1] / "experiments" / "whatif_accuracy"))  # band_fit
    script = load_script("experiments/whatif_accuracy/closed_form_band.py", "closed_form_band")
    monkeypatch.setattr(script.band_fit, "BASES", np.arange(1.0, 3.001, 0.25))  # a coarse grid: the logic, quickly
    monkeypatch.setattr(script.band_fit, "SMALLS", np.arange(0.0, 3.001, 0.5))
    ratios = [0.8, 0.9, 1.0, 1.1, 1.25]
    rows = [{**_row("top", 100, 120, 0.5, 0.5 * q, floor=0.0), "occupation": f"o{i}"} for i, q in enumerate(ratios)]
    # The audited set's scaled step is its retrained change (the scale is read off it), as in a real run.
    audit = {**_row("top", 100, 120, 0.5, 0.5, floor=0.0, audit=True, share=16), "occupation": "audited"}
    runs = pd.DataFrame([*rows, audit]).assign(closed_form=lambda d: d["scaled"] * 2.0)
    assert script.band_fit.audit_ratio(runs, "closed_form") == pytest.approx(0.5)
    table = script.compared({"g": runs, "h": runs}, coverage=1.0)
    step, closed = (table[table["point"] == point].drop(columns=["point", "ratio"]).reset_index(drop=True)
                    for point in script.POINTS)
    pd.testing.assert_frame_equal(step, closed)  # the closed form x 0.5 is the scaled step on every set: alike
    spread = runs.assign(closed_form=runs["closed_form"] * np.r_[1.5, 1.0, 1.0, 1.0, 1.0, 1.0])  # 0.8 -> 0.53
    wider = script.compared({"g": spread}, coverage=1.0).set_index(["point", "evaluation"])["half_width"]
    assert wider[(script.POINTS[1], "in-sample g")] > wider[(script.POINTS[0], "in-sample g")]
    with pytest.raises(SystemExit, match="no audited"):
        script.band_fit.audit_ratio(runs[~runs["in_audit"]], "closed_form")


def test_a_run_without_calibration_has_no_old_estimator_row() -> None:
    """``--no-calibration`` leaves the old estimator's columns empty: the summary leaves it out rather than count
    every set as missed by an interval that was never computed."""
    rows = [_row("top", 50, 40, 0.4, 0.45), _row("bottom", 20, 12, -0.3, -0.35), _row("random", 50, 40, 0.0, 0.01)]
    runs = pd.DataFrame(rows).assign(old_point=np.nan, old_low=np.nan, old_high=np.nan)
    frame = _bench().summary_frame(runs)
    assert not frame["estimator"].str.contains("calibrated").any()
    assert (frame[frame["estimator"].str.endswith("band as run")]["coverage"] == 1.0).all()
    with_old = _bench().summary_frame(pd.DataFrame(rows))
    assert with_old["estimator"].str.contains("calibrated").sum() == 2  # targeted and random


def test_summarize_only_names_the_occupations_also_of_rows_appended_later(tiny_store: Path, tmp_path: Path,
                                                                          monkeypatch) -> None:
    """``--summarize-only --model``: the run file gets a name column, and rows appended after it was added (a bench
    still running) get their names the next time, instead of staying empty."""
    from kgbias_core.commands.common import append_row
    from kgbias_core.embeddings.store import load_model

    model = load_model(tiny_store / "tiny-transe")
    labels = [label for label in ("nurse", "engineer") if label in model.entity_labels]
    names = dict(zip(model.entity_labels, model.entity_names, strict=True))
    runs = tmp_path / "runs.csv"
    append_row({**_row("top", 50, 40, 0.4, 0.45), "occupation": labels[0]}, runs)
    argv = ["whatif_accuracy.py", "--summarize-only", "--model", str(tiny_store / "tiny-transe"), "--runs", str(runs)]
    monkeypatch.setattr("sys.argv", argv)
    _bench().main()
    append_row({**_row("bottom", 20, 12, -0.3, -0.35), "occupation": labels[-1]}, runs)  # the bench's next row
    assert pd.isna(pd.read_csv(runs)["name"].iloc[1])
    _bench().main()
    assert pd.read_csv(runs)["name"].tolist() == [names[labels[0]], names[labels[-1]]]


def test_rescore_predicts_the_same_sets_again_with_the_models_scale_for_edits(tiny_store: Path, tmp_path: Path,
                                                                              monkeypatch) -> None:
    """``--rescore``: no retrain; each row's set is rebuilt (checked by its closed-form sum) and predicted as the
    lab predicts it today (the audit's hinge temperature on this one-negative model, the noise floor); a row of
    another set is refused."""
    import shutil

    from kgbias_core.analysis import ModelAnalysis
    from kgbias_core.embeddings.store import load_model
    from kgbias_core.influence.retraining_check import removal_set
    from kgbias_core.jobs import Progress
    from kgbias_core.tasks import prediction_audit_task
    from kgbias_core.whatif.edits import make_edit, predict_edit
    from kgbias_core.whatif.step_ratio import EDITS, model_step_ratio

    base = Path(shutil.copytree(tiny_store / "tiny-transe", tmp_path / "tiny-transe"))
    prediction_audit_task(base).run(Progress())  # one masked retrain of the tiny model: the scale for edits
    ratio = model_step_ratio(base, use=EDITS)
    analysis = ModelAnalysis(load_model(base))
    influence = analysis.influence("nurse")
    rows = []
    for kind in ("top", "bottom"):
        removed = removal_set(influence, kind=kind, k=5)
        rows.append({**_row(kind, 5, 5, 0.1, 0.2), "occupation": "nurse", "k": 5,
                     "closed_form": float(influence[removed].sum())})
    runs, out = tmp_path / "runs.csv", tmp_path / "rescored.csv"
    pd.DataFrame(rows).to_csv(runs, index=False)
    monkeypatch.setattr("sys.argv", ["whatif_accuracy.py", "--model", str(base), "--runs", str(runs),
                                     "--rescore", str(out)])
    _bench().main()
    rescored = pd.read_csv(out)
    assert ratio.temperature is not None  # the audit found the hinge's temperature: the lab predicts with it
    assert (rescored["temperature"] == ratio.temperature).all() and (rescored["scale"] == 1.0).all()
    assert (rescored["actual"] == 0.2).all()  # the retrain is kept
    for row, kind in zip(rescored.itertuples(), ("top", "bottom"), strict=True):
        indices = tuple(removal_set(influence, kind=kind, k=5).tolist())
        expected = predict_edit(analysis, make_edit(analysis, "nurse", strategy="basket", indices=indices),
                                temperature=ratio.temperature)
        assert row.scaled == pytest.approx(expected.point, rel=1e-4)
        assert (row.scaled_low, row.scaled_high) == (pytest.approx(expected.low, rel=1e-4),
                                                     pytest.approx(expected.high, rel=1e-4))
    assert (rescored["old_point"] == 0.1).all()  # no calibration: the old estimator's columns as they were
    from kgbias_core.cli import main
    from kgbias_core.influence.scale import predict

    assert main(["calibrate", "--model", str(base), "--occupations", "3"]) == 0  # 13 retrains of the old estimator
    _bench().main()
    calibrated = load_model(base)
    for row in pd.read_csv(out).itertuples():  # now beside the new one on the same sets
        old = predict(row.closed_form, scale=calibrated.influence_scale, calibration=calibrated.calibration)
        assert (row.old_point, row.old_low, row.old_high) == pytest.approx((old.point, old.low, old.high))
        assert row.in_fit == ("nurse" in calibrated.calibration.occupations)
    rows[1]["closed_form"] += 1.0  # not the set the row was made with
    pd.DataFrame(rows).to_csv(runs, index=False)
    with pytest.raises(SystemExit, match="not the same set"):
        _bench().main()
    # --other-machine: sets this model cannot rebuild keep their predictions, the old estimator read off their sums
    monkeypatch.setattr("sys.argv", ["whatif_accuracy.py", "--model", str(base), "--runs", str(runs),
                                     "--rescore", str(out), "--other-machine"])
    _bench().main()
    across, made = pd.read_csv(out), pd.read_csv(runs)
    pd.testing.assert_frame_equal(across[made.columns.drop(["old_point", "old_low", "old_high", "in_fit"])],
                                  made.drop(columns=["old_point", "old_low", "old_high", "in_fit"]))
    for row in across.itertuples():
        old = predict(row.closed_form, scale=calibrated.influence_scale, calibration=calibrated.calibration)
        assert (row.old_point, row.old_low, row.old_high) == pytest.approx((old.point, old.low, old.high))


def test_shards_with_a_shared_base_give_the_rows_of_one_run(tiny_store, tmp_path, monkeypatch) -> None:
    """``--shard I/N`` splits the chosen occupations without overlap, and ``--base`` (written once by ``--base-only``,
    read back by each shard) gives every set the change one run with its own unedited retrain gives."""
    import argparse
    import json
    import shutil
    from dataclasses import replace

    from kgbias_core.jobs import Progress
    from kgbias_core.tasks import prediction_audit_task

    bench = _bench()
    model = Path(shutil.copytree(tiny_store / "tiny-transe", tmp_path / "tiny-transe"))
    prediction_audit_task(model).run(Progress())  # before the shards, as the device script runs it
    base = tmp_path / "base.npz"
    common = ["--model", str(model), "--occupations", "3", "--kinds", "top", "--sets", "16", "--no-calibration",
              "--no-exact"]

    def run(*extra: str, runs: Path) -> pd.DataFrame:
        monkeypatch.setattr("sys.argv", ["whatif_accuracy.py", *common, "--runs", str(runs), *extra])
        bench.main()
        return pd.read_csv(runs) if runs.exists() else pd.DataFrame()

    run("--base", str(base), "--base-only", runs=tmp_path / "unused.csv")
    assert base.is_file() and not (tmp_path / "unused.csv").exists()
    shards = pd.concat([run("--base", str(base), "--shard", f"{i}/2", runs=tmp_path / f"shard{i}.csv")
                        for i in (0, 1)])
    whole = run(runs=tmp_path / "whole.csv")  # its own unedited retrain, no --base
    assert len(whole) == 3 and sorted(shards["occupation"]) == sorted(whole["occupation"])
    merged = shards.set_index("occupation").loc[whole["occupation"]]
    np.testing.assert_array_equal(merged["actual"].to_numpy(), whole["actual"].to_numpy())
    with np.load(base, allow_pickle=False) as stored:  # plain arrays, never a pickle
        assert stored["bias"].ndim == 1 and np.isfinite(stored["bias"]).any()  # NaN: an occupation of one gender
        assert json.loads(str(stored["key"]))["data_hash"] == bench.load_model(model).data_hash
    other = bench.load_model(model)
    other = replace(other, config=replace(other.config, seed=other.config.seed + 1))
    assert bench.retrain_key(other) != bench.retrain_key(bench.load_model(model))  # another seed: not read back
    stale = tmp_path / "stale.npz"
    with stale.open("wb") as handle:  # a bare array, as an older bench wrote: retrained, then rewritten
        np.save(handle, np.zeros(3, dtype=np.float32))
    analysis = bench.ModelAnalysis(bench.load_model(model))
    retrained = bench.unedited_bias(analysis.model, analysis.groups, stale)
    assert retrained.shape == (len(analysis.groups.labels),)
    with np.load(stale, allow_pickle=False) as rewritten:
        np.testing.assert_array_equal(rewritten["bias"], retrained.cpu().numpy())
    for bad in ("2/2", "one/2", "1"):
        with pytest.raises(argparse.ArgumentTypeError):
            shard(bad)


def test_a_set_is_retrained_once_across_shares_and_occupations(tiny_store, tmp_path, monkeypatch) -> None:
    """A set that is the set of two shares (k = 1 on a small occupation, FB13's 2% and 16%; here 0% and 1% of the
    tests' graph) gets one row; random sets of one k (one seed) are one retrain for every occupation; a set whose
    closed form differs is never taken for a measured one; a run whose sets another file (``--skip``) holds retrains
    none and ends with a line, not on its missing runs file."""
    import shutil

    bench = _bench()
    model = Path(shutil.copytree(tiny_store / "tiny-transe", tmp_path / "tiny-transe"))
    calls = []
    real = bench.masked_retrain_bias

    def counted(model, *, removed, groups):
        calls.append(None if removed is None else tuple(sorted(removed.tolist())))
        return real(model, removed=removed, groups=groups)

    monkeypatch.setattr(bench, "masked_retrain_bias", counted)
    runs = tmp_path / "runs.csv"
    monkeypatch.setattr("sys.argv", ["whatif_accuracy.py", "--model", str(model), "--occupations", "4", "--kinds",
                                     "top,random", "--sets", "0,1", "--no-calibration", "--no-exact", "--runs",
                                     str(runs)])
    calls.clear()
    bench.main()
    rows = pd.read_csv(runs)
    top, random = rows[rows["kind"] == "top"], rows[rows["kind"] == "random"]
    for rows_of_kind in (top, random):
        assert not rows_of_kind.duplicated(["occupation", "k"]).any()  # the same set is never a second row
        assert len(rows_of_kind) < 8  # ... and the tests' graph has such sets, so the rule was exercised
    assert random["k"].nunique() < len(random)  # occupations sharing one random set
    edited = [c for c in calls if c is not None]
    assert len(edited) == len(set(edited)) == len(top) + random["k"].nunique()
    measured = bench.measured_sets([rows])
    first = top.iloc[0]
    assert bench.already_measured(measured, first["occupation"], "top", int(first["k"]), float(first["closed_form"]))
    assert not bench.already_measured(measured, first["occupation"], "top", int(first["k"]),
                                      float(first["closed_form"]) + 0.01)
    assert not bench.already_measured(measured, first["occupation"], "bottom", int(first["k"]),
                                      float(first["closed_form"]))

    # Another file's sets (--skip) are not run again: a second run into a new file retrains nothing edited.
    calls.clear()
    again = tmp_path / "again.csv"
    monkeypatch.setattr("sys.argv", ["whatif_accuracy.py", "--model", str(model), "--occupations", "4", "--kinds",
                                     "top,random", "--sets", "0,1", "--no-calibration", "--no-exact", "--runs",
                                     str(again), "--skip", str(runs)])
    bench.main()
    assert [c for c in calls if c is not None] == []
    assert not again.exists()  # and the run ends with a line saying why, not on the missing file
