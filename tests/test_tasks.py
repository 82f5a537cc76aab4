"""Long jobs as tasks: run directly or through a registry, cancellable, their results saved and keyed."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from kgbias_core import tasks
from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embeddings.results import save_result
from kgbias_core.embeddings.store import list_models, load_model, read_config, save_model
from kgbias_core.embeddings.training import train_model
from kgbias_core.errors import LAB_K_TOO_LARGE, LAB_NO_KS, MeasureError
from kgbias_core.evaluation.link_prediction import load_link_prediction
from kgbias_core.influence.scale import Calibration
from kgbias_core.jobs import JobRegistry, JobState, Progress
from kgbias_core.whatif.edits import make_edit, predict_edit
from kgbias_core.whatif.step_ratio import model_edit_calibration

from .conftest import TINY_TRAINING
from .test_edits import pick_occupation


@pytest.fixture
def store(tiny_store: Path, tmp_path: Path) -> Path:
    """A writable copy of the tiny store."""
    copy = tmp_path / "store"
    shutil.copytree(tiny_store, copy)
    return copy


def test_whatif_and_curve_run_through_the_registry_are_cancellable_and_reload(store: Path) -> None:
    base = store / "tiny-transe"
    occupation = pick_occupation(load_model(base))
    edit = make_edit(ModelAnalysis(load_model(base)), occupation, strategy="if", k=5)
    registry = JobRegistry()
    try:
        run = tasks.whatif_task(base=base, edit=edit, out=store / "run-1", evaluate=True)
        done = registry.submit("what-if", run.run, owner="a", key=run.key)
        curve_task = tasks.removal_curve_task(base, occupation=occupation, ks=[5])
        curve = registry.submit("curve", curve_task.run, owner="b", key=curve_task.key)
        cancelled = registry.submit("what-if", tasks.whatif_task(base=base, edit=edit,
                                                                 out=store / "run-2").run, owner="a")
        registry.cancel(cancelled)
        assert registry.wait(done, timeout=120).state is JobState.DONE
        assert registry.wait(curve, timeout=120).state is JobState.DONE
        assert registry.status(cancelled).state is JobState.CANCELLED
        assert [s.name for s in registry.jobs(owner="b")] == ["curve"]
        frame = registry.result(curve)
        assert set(frame.strategy) == {"IF-REMOVE", "Random-REMOVE"} and set(frame.k) == {0, 5}
        assert tasks.saved_curve(base, occupation).equals(frame)
        # The curve predicts as the lab does: this one-negative model, not audited, at the prior temperature.
        calibration = model_edit_calibration(base, "remove")
        scale, temperature, prior = calibration
        lab = predict_edit(ModelAnalysis(load_model(base)), edit, scale=scale, temperature=temperature, prior=prior)
        row = frame[(frame.strategy == "IF-REMOVE") & (frame.k == 5)].iloc[0]
        before = float(frame.loc[frame.k == 0, "group_bias"].iloc[0])
        assert prior and row.estimator == lab.estimator and "prior T" in row.estimator
        assert (row.predicted - before, row.predicted_low - before) == pytest.approx((lab.point, lab.low), rel=1e-5)
        assert list_models(store) == ["run-1", "tiny-transe"]  # the cancelled run left nothing
        assert load_model(store / "run-1").edit["strategy"] == "if-remove k=5"
        assert load_link_prediction(store / "run-1") is not None  # evaluated after the retrain
        assert load_link_prediction(base) is not None
    finally:
        registry.shutdown()

def test_a_stored_curve_is_predicted_again_when_the_audit_or_the_noise_band_lands(store: Path) -> None:
    """A curve retrained before the model's audit keeps its retrains and is predicted as the lab predicts after it:
    at the audit's temperature, then with the noise band's floor; a curve whose sets do not rebuild keeps what it
    had, named by the estimator that made it."""
    base = store / "tiny-transe"
    occupation = pick_occupation(load_model(base))
    before = tasks.removal_curve_task(base, occupation=occupation, ks=[5, 10]).run(Progress())
    assert bool(before["prior"].iloc[0]) and before["floor"].isna().all()
    assert tasks.repredict_curves(base) == []  # nothing changed: nothing predicted, the model not even loaded

    unaudited = tasks.repredict_seconds(base, occupation)
    tasks.prediction_audit_task(base).run(Progress())
    scale, temperature, prior = model_edit_calibration(base, "remove")
    assert not prior and temperature is not None
    from kgbias_core.whatif.step_ratio import saved_hinge_temperature

    searched = saved_hinge_temperature(base, tasks.saved_prediction_audit(base)).iloc[0]
    # the estimate of predicting it again: 4 points, each timed by the model's own search once it has one
    assert unaudited is not None and unaudited > 0
    assert tasks.repredict_seconds(base, occupation) == pytest.approx(4 * searched.seconds / searched.solves)
    after = tasks.saved_curve(base, occupation)
    kept = ["strategy", "k", "predicted_raw", "group_bias"]
    assert after[kept].equals(before[kept])  # the retrains and the sets, as they were
    analysis = ModelAnalysis(load_model(base))
    point = after[(after.strategy == "IF-REMOVE") & (after.k == 10)].iloc[0]
    edit = make_edit(analysis, occupation, strategy="if", k=10)
    lab = predict_edit(analysis, edit, scale=scale, temperature=temperature, prior=prior)
    base_bias = float(after.loc[after.k == 0, "group_bias"].iloc[0])
    assert point.estimator == lab.estimator and "prior" not in point.estimator
    assert (point.predicted - base_bias, point.predicted_high - base_bias) == pytest.approx((lab.point, lab.high),
                                                                                           rel=1e-5)
    assert after["temperature"].iloc[0] == pytest.approx(temperature)

    tasks.noise_band_task(base).run(Progress())
    floored = tasks.saved_curve(base, occupation)
    spread = floored["floor"].iloc[0]
    assert spread > 0
    moved = floored[floored.k > 0]
    assert ((moved.predicted_high - moved.predicted_low) > (after[after.k > 0].predicted_high
                                                            - after[after.k > 0].predicted_low) + spread).all()

    # a curve stored before the "scaled" column scaled the step: current on this squared-L2 model
    assert floored["scaled"].iloc[0] == "step" and tasks.curve_is_current(base, occupation,
                                                                          floored.drop(columns="scaled"))

    # A curve whose set no longer rebuilds (its closed form differs): kept as made, with its own estimator's name.
    tampered = floored.copy()
    tampered.loc[tampered.k > 0, "predicted_raw"] += 1.0
    tampered["floor"] = float("nan")
    save_result(base, tasks.curve_key(occupation), tampered, params={"occupation": occupation})
    assert tasks.repredict_curves(base) == []
    assert tasks.saved_curve(base, occupation).equals(tampered)


def test_an_l2_models_scaled_curve_from_before_the_change_rule_is_predicted_again(tmp_path: Path,
                                                                                   tiny_graph) -> None:
    """On L2 the scale multiplies the step's change (CHANGE_SCALED_DISTANCES): a scaled curve stored before the
    ``scaled`` column (so made scaling the step) is stale and is predicted again as the lab predicts now."""
    model = train_model(tiny_graph, replace(TINY_TRAINING, distance="l2", epochs=10), name="l2-transe",
                        device=torch.device("cpu"))
    save_model(model, tmp_path)
    base = tmp_path / "l2-transe"
    tasks.prediction_audit_task(base).run(Progress())
    scale, temperature, prior = model_edit_calibration(base, "remove")
    assert scale != 1.0 and temperature is None and not prior
    occupation = pick_occupation(model)
    curve = tasks.removal_curve_task(base, occupation=occupation, ks=[5]).run(Progress())
    assert curve["scaled"].iloc[0] == "change" and tasks.curve_is_current(base, occupation)
    point = curve[(curve.strategy == "IF-REMOVE") & (curve.k == 5)].iloc[0]
    analysis = ModelAnalysis(load_model(base))
    lab = predict_edit(analysis, make_edit(analysis, occupation, strategy="if", k=5), scale=scale)
    before = float(curve.loc[curve.k == 0, "group_bias"].iloc[0])
    assert point.predicted - before == pytest.approx(lab.point, rel=1e-5) and "step's change" in point.estimator

    old = curve.drop(columns="scaled")
    old.loc[old.k > 0, "predicted"] += 0.5  # as made before: another point
    save_result(base, tasks.curve_key(occupation), old, params={"occupation": occupation})
    assert not tasks.curve_is_current(base, occupation)
    assert tasks.repredict_curves(base) == [occupation]
    again = tasks.saved_curve(base, occupation)
    assert again["scaled"].iloc[0] == "change"
    assert again["predicted"].to_numpy() == pytest.approx(curve["predicted"].to_numpy(), rel=1e-6)


def test_an_l2_audit_made_with_the_old_step_is_predicted_again_and_its_retrain_kept(tmp_path: Path,
                                                                                    tiny_graph) -> None:
    """L2's step changed (its negatives' curvature, 2026-12-07): an audit whose estimator lacks today's L2 note is
    no audit for the ratio (the lab offers it again, estimated at a prediction's cost), and the audit task predicts its
    set again without retraining: the stored retrain (marked here) stands, the point is the lab's today."""
    from kgbias_core.influence.prediction import DISTANCE_NOTES, predict_removal
    from kgbias_core.tasks.prediction_audit import audit_set
    from kgbias_core.whatif.step_ratio import (
        EDITS,
        PREDICTION_AUDIT,
        model_step_ratio,
        outdated_prediction_audit,
        saved_prediction_audit,
    )

    model = train_model(tiny_graph, replace(TINY_TRAINING, distance="l2", epochs=10), name="l2-transe",
                        device=torch.device("cpu"))
    save_model(model, tmp_path)
    base = tmp_path / "l2-transe"
    full = tasks.prediction_audit_seconds(base)
    audit = tasks.prediction_audit_task(base).run(Progress())
    assert DISTANCE_NOTES["l2"] in audit["estimator"].iloc[0] and saved_prediction_audit(base) is not None
    assert outdated_prediction_audit(base) is None and model_step_ratio(base, use=EDITS) is not None

    old = audit.copy()
    old["estimator"] = "Newton step, |H|, L2 distance"  # as the lab named L2's step before
    old["predicted"] *= 4.0
    old["retrained"] += 0.0123  # a mark: a new retrain would not reproduce it
    save_result(base, PREDICTION_AUDIT, old, params={})
    assert saved_prediction_audit(base) is None and model_step_ratio(base, use=EDITS) is None
    assert outdated_prediction_audit(base).equals(old)
    assert 0 < tasks.prediction_audit_seconds(base) < full / 2

    again = tasks.prediction_audit_task(base).run(Progress())
    assert again["retrained"].iloc[0] == old["retrained"].iloc[0]
    analysis = ModelAnalysis(load_model(base))
    occupation = again["occupation"].iloc[0]
    point = predict_removal(analysis, occupation, audit_set(analysis, occupation)[2]).point
    assert again["predicted"].iloc[0] == pytest.approx(point, rel=1e-6)
    assert again["predicted"].iloc[0] == pytest.approx(audit["predicted"].iloc[0], rel=1e-6)
    assert saved_prediction_audit(base) is not None and outdated_prediction_audit(base) is None


CALIBRATION = Calibration(scale=0.25, low=0.2, high=0.3, occupations=("a", "b", "c"), per_occupation=(0.2, 0.25, 0.3))


def test_keys_name_the_work_and_the_model_version(store: Path) -> None:
    base = store / "tiny-transe"
    key = tasks.removal_curve_task(base, occupation="nurse", ks=[5]).key
    assert tasks.removal_curve_task(base, occupation="nurse", ks=[5]).key == key
    assert tasks.removal_curve_task(base, occupation="nurse", ks=[5, 10]).key != key
    assert tasks.noise_band_task(base).key != key
    tasks.store_calibration(base, CALIBRATION)  # the model changes: its earlier work does not count
    assert tasks.removal_curve_task(base, occupation="nurse", ks=[5]).key != key
    assert tasks.train_task("synthetic", out=store / "a").key == tasks.train_task("synthetic", out=store / "a").key


def test_train_task_saves_the_model_and_calibrates_it(
    tmp_path: Path, tiny_graph, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tasks.training, "load_graph", lambda dataset, data_dir, **_: tiny_graph)
    monkeypatch.setattr(tasks.training, "train_config", lambda dataset: replace(TINY_TRAINING, epochs=30))
    progress = Progress()
    path = tasks.train_task("synthetic", out=tmp_path / "m", overrides={"epochs": 8}, calibrate=True).run(progress)
    config = read_config(path)
    assert Path(path) == tmp_path / "m" and config["name"] == "m"
    assert config["epochs"] == 8 and config["dim"] == TINY_TRAINING.dim  # overrides on top of the default
    calibration = load_model(path).calibration
    assert config["influence_scale"] == calibration.scale > 0
    assert calibration.low <= calibration.scale <= calibration.high and len(calibration.occupations) >= 3
    runs = tasks.saved_calibration_runs(path)  # the runs it was fitted on, kept for the leave-one-out check
    assert runs is not None and set(runs["occupation"]) == set(calibration.occupations)
    assert progress.stage == "calibrating" and "range" in progress.message


def test_influence_accuracy_is_kept_beside_the_model_only_when_asked(store: Path) -> None:
    base = store / "tiny-transe"
    runs = tasks.influence_accuracy_task(base, occupation="nurse", ks=[3], kinds=["top"], keep=False).run(Progress())
    assert list(runs.columns) == ["kind", "k", "predicted", "actual"] and len(runs) == 1
    assert tasks.saved_accuracy(base, "nurse") is None
    kept = tasks.influence_accuracy_task(base, occupation="nurse", ks=[3], kinds=["top"]).run(Progress())
    assert tasks.saved_accuracy(base, "nurse").equals(kept)
    assert kept.equals(runs)  # masked retraining is deterministic


def test_impossible_ks_are_refused_before_any_retraining(store: Path) -> None:
    base = store / "tiny-transe"
    with pytest.raises(MeasureError) as info:
        tasks.removal_curve_task(base, occupation="nurse", ks=[]).run(Progress())
    assert str(info.value) == LAB_NO_KS
    n = load_model(base).triples.shape[0]
    with pytest.raises(MeasureError) as info:
        tasks.influence_accuracy_task(base, occupation="nurse", ks=[n + 1]).run(Progress())
    assert str(info.value) == LAB_K_TOO_LARGE.format(k=n + 1, n=n, model="tiny-transe")


def test_a_calibration_of_too_large_a_k_is_refused_before_any_retrain_and_keys_name_its_settings(
    store: Path,
) -> None:
    base = store / "tiny-transe"
    n = load_model(base).triples.shape[0]
    progress = Progress()
    with pytest.raises(MeasureError) as info:
        tasks.calibration_task(base, k=n + 1).run(progress)
    assert str(info.value) == LAB_K_TOO_LARGE.format(k=n + 1, n=n, model="tiny-transe")
    assert progress.stage != "calibrating"  # refused before the first masked retrain
    assert load_model(base).calibration is None
    default = tasks.calibration_task(base).key
    assert default == tasks.calibration_task(base, n_occupations=6, k=None).key
    assert len({default, tasks.calibration_task(base, n_occupations=2).key, tasks.calibration_task(base, k=3).key}) == 3


def test_storing_a_calibration_keeps_the_cached_results(store: Path) -> None:
    base = store / "tiny-transe"
    tasks.link_prediction_task([base]).run(Progress())
    before = load_link_prediction(base)
    tasks.store_calibration(base, CALIBRATION)
    assert load_model(base).influence_scale == 0.25 and load_model(base).calibration == CALIBRATION
    assert load_link_prediction(base).equals(before)
    assert tasks.saved_calibration_runs(base) is None  # stored without runs: none to show


def test_a_train_task_on_a_graph_too_small_to_calibrate_still_saves_the_model(
    tmp_path: Path, tiny_graph, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tasks.training, "load_graph", lambda dataset, data_dir, **_: tiny_graph)
    monkeypatch.setattr(tasks.training, "train_config", lambda dataset: replace(TINY_TRAINING, epochs=2))

    def refuse(*args, **kwargs):
        raise MeasureError("calibration needs at least 3 occupations with persons of both genders; this model has 2")

    monkeypatch.setattr(tasks.calibration, "calibrate", refuse)
    progress = Progress()
    path = tasks.train_task("synthetic", out=tmp_path / "m", calibrate=True).run(progress)
    assert load_model(path).calibration is None and "not calibrated: calibration needs" in progress.message


def test_whatif_names_are_stable_per_edit(tiny_model, tmp_path: Path) -> None:
    path = save_model(tiny_model, tmp_path)
    analysis = ModelAnalysis(load_model(path))
    edit = make_edit(analysis, "nurse", strategy="basket", indices=[1, 2])
    name = tasks.whatif_name("tiny-transe", edit, occupation_name="Nurse (RN)")
    assert name.startswith("tiny-transe--basket-nurse-rn-")
    assert tasks.whatif_name("tiny-transe", edit, occupation_name="Nurse (RN)") == name
    other = make_edit(analysis, "nurse", strategy="basket", indices=[1, 3])
    assert tasks.whatif_name("tiny-transe", other, occupation_name="Nurse (RN)") != name


def test_a_cancelled_calibration_says_how_far_it_got_and_that_the_model_stays(store: Path) -> None:
    from kgbias_core.errors import CALIBRATION_CANCELLED, CALIBRATION_KEPT, CancelledError
    from kgbias_core.influence.calibration import CALIBRATION_OCCUPATIONS

    base = store / "tiny-transe"
    before = read_config(base)
    task = tasks.calibration_task(base)
    progress = Progress()
    progress.cancel()  # noticed after the first retrain (the unmasked base), before the masked ones
    with pytest.raises(CancelledError) as info:
        task.run(progress)
    assert str(info.value) == CALIBRATION_CANCELLED.format(done=1, total=1 + 2 * CALIBRATION_OCCUPATIONS)
    assert str(info.value) == "calibration was cancelled after run 1 of 13"
    assert task.kept == CALIBRATION_KEPT.format(name="tiny-transe") and "stays in use" in task.kept
    assert read_config(base) == before and load_model(base).calibration is None  # the model is as it was
    assert tasks.train_task("synthetic", out=store / "x").kept.startswith("Nothing was saved")


def test_estimates_grow_with_the_work_and_training_no_longer_calibrates_by_default(
    store: Path, tmp_path: Path, tiny_graph, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kgbias_core.embeddings.training_cost import SECONDS_PER_STEP, SHOWN_SECONDS_PER_UPDATE

    base = store / "tiny-transe"
    one = tasks.model_retrain_seconds(base)
    config, model = read_config(base), load_model(base)
    steps = -(-int(config["n_train"]) // int(config["batch_size"])) * int(config["epochs"])
    parameters = (len(model.entity_to_id) + len(model.relation_to_id)) * int(config["dim"])
    assert one == pytest.approx(steps * (SECONDS_PER_STEP + SHOWN_SECONDS_PER_UPDATE * parameters))  # by hand
    assert tasks.calibration_seconds(base) == pytest.approx(13 * one)
    assert tasks.model_retrain_seconds(tmp_path / "nothing") is None
    monkeypatch.setattr(tasks.training, "load_graph", lambda dataset, data_dir, **_: tiny_graph)
    monkeypatch.setattr(tasks.training, "train_config", lambda dataset: replace(TINY_TRAINING, epochs=2))
    assert tasks.training_seconds("synthetic", None) < tasks.training_seconds("synthetic", None,
                                                                               overrides={"epochs": 20})
    # K negatives score K - 1 more rows per triple each step: the estimate grows by exactly that term
    from kgbias_core.embeddings.training_cost import SECONDS_PER_NEGATIVE_SCORE

    one_negative = tasks.training_seconds("synthetic", None)
    eight = tasks.training_seconds("synthetic", None, overrides={"negatives_per_triple": 8})
    n_train, batch = tiny_graph.training.num_triples, TINY_TRAINING.batch_size
    steps = -(-n_train // batch) * 2
    assert eight - one_negative == pytest.approx(steps * SECONDS_PER_NEGATIVE_SCORE * 7 * min(batch, n_train)
                                                 * TINY_TRAINING.dim)
    k8 = tmp_path / "tiny-k8"  # a stored model's estimate reads K from its config.json
    shutil.copytree(base, k8)
    (k8 / "config.json").write_text(json.dumps({**config, "negatives_per_triple": 8}))
    assert tasks.model_retrain_seconds(k8) == pytest.approx(
        one + -(-int(config["n_train"]) // int(config["batch_size"])) * int(config["epochs"])
        * SECONDS_PER_NEGATIVE_SCORE * 7 * min(int(config["batch_size"]), int(config["n_train"])) * int(config["dim"]))
    # and its distance from there: pseudo-Huber's square root per coordinate costs a third more a step (bench)
    from kgbias_core.embeddings.training_cost import DISTANCE_FACTORS

    huber = tmp_path / "tiny-huber"
    shutil.copytree(base, huber)
    (huber / "config.json").write_text(json.dumps({**config, "distance": "pseudo_huber"}))
    assert DISTANCE_FACTORS["pseudo_huber"] > 1.2
    assert tasks.model_retrain_seconds(huber) == pytest.approx(DISTANCE_FACTORS["pseudo_huber"] * one)
    assert tasks.training_seconds("synthetic", None, overrides={"distance": "pseudo_huber"}) == pytest.approx(
        DISTANCE_FACTORS["pseudo_huber"] * one_negative)
    path = tasks.train_task("synthetic", out=tmp_path / "m").run(Progress())
    assert load_model(path).calibration is None  # the train job ends when the model is saved


def test_the_prediction_audit_is_one_masked_retrain_stored_with_the_model(store: Path) -> None:
    """Issue 25: the model's own check of the Newton step, one retrain, stored in its results; estimated as one
    retrain (so it starts unasked only where that is a few minutes)."""
    import torch

    from kgbias_core.influence.prediction import ESTIMATOR, predict_removal
    from kgbias_core.influence.retraining_check import masked_retrain_bias, removal_set
    from kgbias_core.tasks.prediction_audit import AUDIT_COLUMNS, AUDIT_SHARE, audit_set

    base = store / "tiny-transe"
    assert tasks.saved_prediction_audit(base) is None
    # one retrain, and the hinge's temperature search after it, estimated as one more (squared L2)
    assert tasks.prediction_audit_seconds(base) == tasks.model_retrain_seconds(base, retrains=2)
    assert tasks.add_audit_seconds(base) == tasks.model_retrain_seconds(base, retrains=1)
    frame = tasks.prediction_audit_task(base).run(Progress())
    assert list(frame.columns) == list(AUDIT_COLUMNS) and len(frame) == 1
    row = frame.iloc[0]
    analysis = ModelAnalysis(load_model(base))
    groups = analysis.groups
    index = groups.index(row["occupation"])
    # the occupation with the largest rarer gender, ties to the larger one: by brute force over the groups
    counts = [(min(m, f), m + f) for m, f in zip(groups.n_male.tolist(), groups.n_female.tolist(), strict=True)]
    assert counts[index] == max(counts) and min(counts[index]) >= 5
    influence = analysis.influence(row["occupation"])
    assert row["moving"] == int((influence != 0).sum()) and row["k"] == round(AUDIT_SHARE * row["moving"])
    removed = removal_set(influence, kind="top", k=int(row["k"]))
    # audit_set, the set's one home (the studies call it too): the k largest influences, by a sort here
    moving, k, audit_removed = audit_set(analysis, row["occupation"])
    assert (moving, k) == (row["moving"], row["k"])
    assert set(audit_removed.tolist()) == set(torch.argsort(influence, descending=True)[:k].tolist())
    assert torch.equal(audit_removed, removed)
    expected = predict_removal(analysis, row["occupation"], removed)
    assert row["predicted"] == pytest.approx(expected.point) and row["estimator"] == ESTIMATOR
    after = masked_retrain_bias(analysis.model, removed=removed, groups=groups)
    assert row["retrained"] == pytest.approx(float(after[index]) - float(analysis.group_bias(row["occupation"])),
                                             abs=1e-6)
    assert bool(row["inside"]) == bool(row["low"] <= row["retrained"] <= row["high"])
    saved = tasks.saved_prediction_audit(base)
    assert saved is not None and saved.iloc[0]["predicted"] == pytest.approx(row["predicted"])
    # The step scale every removal's prediction is multiplied by: this one retrain's ratio (clipped).
    from kgbias_core.whatif.edits import make_edit, predict_edit
    from kgbias_core.whatif.step_ratio import EDITS, STEP_SCALE_RANGE

    ratio = tasks.model_step_ratio(base, use=EDITS)
    assert ratio is not None and ratio.n == 1
    assert ratio.value == pytest.approx(min(max(row["retrained"] / row["predicted"], STEP_SCALE_RANGE[0]),
                                            STEP_SCALE_RANGE[1]))
    removal = make_edit(analysis, row["occupation"], strategy="basket", indices=tuple(removed.tolist()))
    scaled = predict_edit(analysis, removal, scale=ratio.value)
    assert scaled.point == pytest.approx(predict_removal(analysis, row["occupation"], removed,
                                                         scale=ratio.value).point)
    assert f"x {ratio.value:.2f}" in scaled.estimator
    # An addition never borrows the removal audit's ratio: it has a record of its own (the Add audit), none yet.
    from kgbias_core.whatif.step_ratio import ADDITIONS

    assert tasks.model_step_ratio(base, use=ADDITIONS) is None


def test_the_audit_sets_the_hinge_temperature_from_its_own_retrain(store: Path, tiny_graph) -> None:
    """Issue 25: after its retrain the audit task searches the hinge's temperature on the audit's set (no retrain) and
    stores it beside the model; the audit set's step at that temperature, made here independently, meets the
    retrained change; the model's ratio for edits carries it and a removal is then predicted with it, unscaled. A
    record of another audit is not read; an L1 model has none (the curvature is written for squared L2)."""
    from kgbias_core.embeddings.results import save_result
    from kgbias_core.influence.hinge_curvature import hinge_curvature_hvp
    from kgbias_core.influence.prediction import newton_change, predict_removal
    from kgbias_core.influence.retraining_check import removal_set
    from kgbias_core.tasks.prediction_audit import HINGE_TEMPERATURE_COLUMNS
    from kgbias_core.whatif.step_ratio import (
        EDITS,
        PREDICTION_AUDIT,
        edit_calibration,
        saved_hinge_temperature,
    )

    base = store / "tiny-transe"
    frame = tasks.prediction_audit_task(base).run(Progress())
    stored = saved_hinge_temperature(base, frame)
    assert stored is not None and list(stored.columns) == list(HINGE_TEMPERATURE_COLUMNS)
    row, audit = stored.iloc[0], frame.iloc[0]
    assert (row["occupation"], row["k"], row["retrained"]) == (audit["occupation"], audit["k"], audit["retrained"])
    temperature = float(row["temperature"])
    analysis = ModelAnalysis(load_model(base))
    removed = removal_set(analysis.influence(row["occupation"]), kind="top", k=int(row["k"]))
    step = newton_change(analysis.model, removed, groups=analysis.groups,
                         occupation_index=analysis.groups.index(row["occupation"]), damping=0.0,
                         hvp=hinge_curvature_hvp(analysis.model, temperature))
    assert step == pytest.approx(audit["retrained"], rel=0.02)  # the T found makes the step meet the retrain
    assert step != pytest.approx(audit["predicted"], rel=0.05)  # and it is not the |H| step the audit predicted
    ratio = tasks.model_step_ratio(base, use=EDITS)
    assert ratio.temperature == pytest.approx(temperature)
    assert edit_calibration(ratio) == (1.0, ratio.temperature, False)  # unscaled, not the prior
    prediction = predict_removal(analysis, row["occupation"], removed, temperature=temperature)
    assert prediction.point == pytest.approx(step, rel=0.02) and "hinge's curvature" in prediction.estimator
    from kgbias_core.influence.prediction import HINGE_BAND_BASE, HINGE_BAND_SMALL, band_ends, band_factor

    index = analysis.groups.index(row["occupation"])
    m = int(min(analysis.groups.n_male[index], analysis.groups.n_female[index]))
    low, high = band_ends(prediction.point, band_factor(m, base=HINGE_BAND_BASE, small=HINGE_BAND_SMALL))
    assert (prediction.low, prediction.high) == pytest.approx((low, high))  # the hinge step's own band
    with pytest.raises(ValueError, match="not scaled"):
        predict_removal(analysis, row["occupation"], removed, temperature=temperature, scale=0.5)
    assert tasks.hinge_temperature(base, analysis) == pytest.approx(temperature)  # read back, not searched again

    save_result(base, PREDICTION_AUDIT, frame.assign(retrained=audit["retrained"] * 0.8), params={})  # another audit
    assert saved_hinge_temperature(base, tasks.saved_prediction_audit(base)) is None
    assert tasks.model_step_ratio(base, use=EDITS).temperature is None  # the stale record is not read
    again = tasks.hinge_temperature(base, analysis)  # searched again for the new audit: a smaller retrain, a lower T
    assert again is not None and again < temperature

    from kgbias_core.embeddings.training import train_model

    l1 = save_model(train_model(tiny_graph, replace(TINY_TRAINING, distance="l1"), name="tiny-l1"), store)
    tasks.prediction_audit_task(l1).run(Progress())
    assert saved_hinge_temperature(l1, tasks.saved_prediction_audit(l1)) is None
    assert tasks.model_step_ratio(l1, use=EDITS).temperature is None


def test_before_its_audit_a_one_negative_model_is_predicted_at_the_prior_temperature(store: Path, tiny_graph) -> None:
    """Issue 25: before any retrain, a removal on a squared-L2 model with one negative a triple takes the hinge's
    curvature at the prior temperature, with the prior's band and name; an eight-negative model, another distance or
    an imported model keeps the |H| step as computed; an addition never takes the prior; once the audit has run, its
    own temperature replaces the prior."""
    from kgbias_core.embeddings.training import train_model
    from kgbias_core.influence.hinge_curvature import PRIOR_TEMPERATURE
    from kgbias_core.influence.prediction import (
        PRIOR_BAND_BASE,
        PRIOR_BAND_SMALL,
        PRIOR_ESTIMATOR,
        band_ends,
        band_factor,
        predict_removal,
    )
    from kgbias_core.whatif.step_ratio import model_edit_calibration

    base = store / "tiny-transe"
    assert model_edit_calibration(base) == (1.0, PRIOR_TEMPERATURE, True)
    assert model_edit_calibration(base, "add") == (1.0, None, False)
    analysis = ModelAnalysis(load_model(base))
    removed = analysis.influence("nurse").argsort(descending=True)[:10]
    got = predict_removal(analysis, "nurse", removed, temperature=PRIOR_TEMPERATURE, prior=True)
    assert got.estimator == PRIOR_ESTIMATOR.format(temperature=PRIOR_TEMPERATURE)
    index = analysis.groups.index("nurse")
    m = int(min(analysis.groups.n_male[index], analysis.groups.n_female[index]))
    assert (got.low, got.high) == pytest.approx(band_ends(got.point, band_factor(m, base=PRIOR_BAND_BASE,
                                                                                 small=PRIOR_BAND_SMALL)))
    audited = predict_removal(analysis, "nurse", removed, temperature=PRIOR_TEMPERATURE)  # the same T, audited
    assert audited.point == got.point and audited.estimator != got.estimator and audited.low != got.low

    for name, config in (("tiny-k8", replace(TINY_TRAINING, negatives_per_triple=8)),
                         ("tiny-l1", replace(TINY_TRAINING, distance="l1"))):
        other = save_model(train_model(tiny_graph, config, name=name), store)
        assert model_edit_calibration(other) == (1.0, None, False)
    imported = base.parent / "tiny-imported"
    shutil.copytree(base, imported)
    config = json.loads((imported / "config.json").read_text())
    (imported / "config.json").write_text(json.dumps({**config, "imported_from": "pykeen"}))
    assert model_edit_calibration(imported) == (1.0, None, False)

    tasks.prediction_audit_task(base).run(Progress())
    scale, temperature, prior = model_edit_calibration(base)
    assert scale == 1.0 and not prior and temperature == tasks.model_step_ratio(base, use="edits").temperature
    # Audited, its temperature not searched yet (the minute before the search ends): still the prior, not the scale.
    from kgbias_core.whatif.step_ratio import (
        HINGE_TEMPERATURE,
        hinge_temperature_params,
        saved_hinge_temperature,
        saved_prediction_audit,
    )

    audit = saved_prediction_audit(base)
    searched = saved_hinge_temperature(base, audit)
    for record in (base / "results").glob("hinge_temperature.*"):
        record.unlink()
    assert model_edit_calibration(base) == (1.0, PRIOR_TEMPERATURE, True)
    save_result(base, HINGE_TEMPERATURE, searched.assign(temperature=float("nan")),
                params=hinge_temperature_params(audit))  # searched, and none met the retrain: the audit's scale
    ratio = tasks.model_step_ratio(base, use="edits")
    assert model_edit_calibration(base) == (ratio.value, None, False)


def test_the_audit_takes_the_occupation_with_the_largest_rarer_gender() -> None:
    """FB13's case: a large occupation with few women (Politician, 4,235 men and 136 women) loses to a smaller one
    with more (Writer, 2,974 and 673); ties go to the larger occupation; no occupation with both genders: -1."""
    import torch

    from kgbias_core.tasks.prediction_audit import audit_index

    men, women = torch.tensor([4235, 2974, 40, 3000]), torch.tensor([136, 673, 2, 673])
    assert audit_index(men[:3], women[:3]) == 1
    assert audit_index(men, women) == 3  # 673 women each: the larger occupation
    assert audit_index(torch.tensor([5, 0]), torch.tensor([0, 3])) == -1


def test_the_add_audit_is_one_retrain_whose_ratio_scales_the_additions(store: Path) -> None:
    """Issue 25: Du's Add on the audit's occupation, predicted (as computed) and retrained once, stored in the
    model's results; its retrained/predicted ratio multiplies the model's Add predictions, not its removals."""
    from kgbias_core.influence.prediction import ADD_ESTIMATOR
    from kgbias_core.measures.group_bias import group_bias
    from kgbias_core.measures.groups import occupation_groups
    from kgbias_core.tasks.prediction_audit import ADD_AUDIT_COLUMNS, add_audit_occupation
    from kgbias_core.whatif.edits import add_edit, predict_edit, retrain
    from kgbias_core.whatif.step_ratio import ADDITIONS, EDITS, STEP_SCALE_RANGE

    base = store / "tiny-transe"
    assert tasks.saved_add_audit(base) is None and tasks.model_step_ratio(base, use=ADDITIONS) is None
    frame = tasks.add_audit_task(base).run(Progress())
    assert list(frame.columns) == list(ADD_AUDIT_COLUMNS) and len(frame) == 1
    row = frame.iloc[0]
    analysis = ModelAnalysis(load_model(base))
    assert row["occupation"] == add_audit_occupation(analysis)
    edit = add_edit(analysis.model, row["occupation"], c=0.5)
    assert row["dummies"] == len(edit.added_entities) >= 1
    expected = predict_edit(analysis, edit)
    assert row["predicted"] == pytest.approx(expected.point) and row["estimator"] == ADD_ESTIMATOR
    run = retrain(analysis.model, edit, name="check")  # the same retrain, independently: deterministic on one machine
    groups = occupation_groups(run)
    after = group_bias(entity_embeddings=run.entity_embeddings, relation_embeddings=run.relation_embeddings,
                       groups=groups)[groups.index(row["occupation"])]
    assert row["retrained"] == pytest.approx(float(after) - float(analysis.group_bias(row["occupation"])), abs=1e-6)
    assert bool(row["inside"]) == bool(row["low"] <= row["retrained"] <= row["high"])
    ratio = tasks.model_step_ratio(base, use=ADDITIONS)
    assert ratio is not None and ratio.n == 1 and not ratio.borrowed and "Add audit" in ratio.describe()
    assert ratio.value == pytest.approx(min(max(row["retrained"] / row["predicted"], STEP_SCALE_RANGE[0]),
                                            STEP_SCALE_RANGE[1]))
    scaled = predict_edit(analysis, edit, scale=ratio.value)
    assert scaled.point == pytest.approx(ratio.value * expected.point, rel=1e-6)
    assert f"x {ratio.value:.2f}" in scaled.estimator
    assert tasks.model_step_ratio(base, use=EDITS) is None  # removals do not borrow the additions' ratio
