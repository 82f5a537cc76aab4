"""Add/remove what-ifs (Du §4.3): exact edits, faithful masked retraining, IF-REMOVE vs random."""

from __future__ import annotations

import pytest
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embeddings.store import load_model, save_model
from kgbias_core.errors import MeasureError
from kgbias_core.influence.closed_form import debiasing_removal
from kgbias_core.tables import measures_table
from kgbias_core.whatif.edits import add_edit, remove_edit, retrain


def pick_occupation(model) -> str:
    table = measures_table(ModelAnalysis(model), n_resamples=50)
    table = table[(table.n_male >= 5) & (table.n_female >= 5)]
    return table.loc[table.group_bias.abs().idxmax(), "occupation"]


def test_add_edit_adds_exactly_the_dummies(tiny_model) -> None:
    occupation = pick_occupation(tiny_model)
    row = measures_table(ModelAnalysis(tiny_model), n_resamples=50).set_index("occupation").loc[occupation]
    edit = add_edit(tiny_model, occupation, c=0.5)
    expected = round(0.5 * abs(row.n_male - row.n_female))
    assert len(edit.added_entities) == expected and len(edit.added_triples) == 2 * expected
    s = tiny_model.schema
    gender = tiny_model.entity_id(s.female if row.n_male > row.n_female else s.male)
    for i, (h, r, t) in enumerate(edit.added_triples):
        assert h == tiny_model.n_entities + i // 2
        assert (r, t) == ((tiny_model.relation_id(s.gender_relation), gender) if i % 2 == 0 else
                          (tiny_model.relation_id(s.occupation_relation), tiny_model.entity_id(occupation)))
    what_if = retrain(tiny_model, edit, name="add", mode="warm", warm_epochs=2)
    assert what_if.triples.shape[0] == tiny_model.triples.shape[0] + 2 * expected
    assert torch.equal(what_if.triples[: tiny_model.triples.shape[0]], tiny_model.triples)
    assert what_if.n_entities == tiny_model.n_entities + expected
    # The dummies now count as persons of the occupation.
    after = measures_table(ModelAnalysis(what_if), n_resamples=50).set_index("occupation").loc[occupation]
    assert after.n_male + after.n_female == row.n_male + row.n_female + expected


def test_remove_edit_trains_on_exactly_the_rest_and_reloads(tiny_model, tmp_path) -> None:
    removed = torch.tensor([5, 1, 99, 5])
    edit = remove_edit(tiny_model, "nurse", removed, strategy="basket")
    assert edit.removed == (1, 5, 99)
    what_if = retrain(tiny_model, edit, name="rm", mode="warm", warm_epochs=1)
    keep = torch.ones(tiny_model.triples.shape[0], dtype=torch.bool)
    keep[[1, 5, 99]] = False
    assert torch.equal(what_if.triples, tiny_model.triples[keep])
    assert torch.equal(what_if.negatives, tiny_model.negatives[keep])
    loaded = load_model(save_model(what_if, tmp_path))
    assert loaded.edit["removed"] == [1, 5, 99] and loaded.edit["mode"] == "warm"
    assert loaded.info["base_model"] == tiny_model.name


def test_bad_edits_have_clear_messages(tiny_model) -> None:
    with pytest.raises(MeasureError, match="nothing to remove"):
        remove_edit(tiny_model, "nurse", torch.tensor([], dtype=torch.long), strategy="x")
    with pytest.raises(MeasureError, match="outside the model's"):
        remove_edit(tiny_model, "nurse", torch.tensor([10**7]), strategy="x")
    with pytest.raises(MeasureError, match="adds no dummy"):
        add_edit(tiny_model, pick_occupation(tiny_model), c=0.0)
    with pytest.raises(MeasureError, match="is not an occupation"):
        add_edit(tiny_model, "male")


@pytest.mark.slow
def test_if_remove_moves_bias_towards_zero_more_than_random(tiny_model) -> None:
    occupation = pick_occupation(tiny_model)
    analysis = ModelAnalysis(tiny_model)
    before = float(analysis.group_bias(occupation))
    k = 20
    chosen = debiasing_removal(analysis.influence(occupation), bias=before, k=k)
    random = torch.randperm(tiny_model.triples.shape[0], generator=torch.Generator().manual_seed(0))[:k]
    results = {}
    for strategy, removed in (("if-remove", chosen), ("random-remove", random)):
        what_if = retrain(tiny_model, remove_edit(tiny_model, occupation, removed, strategy=strategy),
                          name=strategy, mode="scratch")
        results[strategy] = float(ModelAnalysis(what_if).group_bias(occupation))
    assert abs(results["if-remove"]) < abs(before) - 0.02
    assert abs(results["if-remove"]) < abs(results["random-remove"])


def test_comparison_link_prediction_and_cached_noise_band(tiny_model, tmp_path) -> None:
    from kgbias_core.embeddings.store import load_result
    from kgbias_core.evaluation.link_prediction import link_prediction
    from kgbias_core.whatif.runs import bias_change, noise_band

    path = save_model(tiny_model, tmp_path)
    metrics = link_prediction(tiny_model)
    occupation_metrics = link_prediction(tiny_model, occupation_only=True)
    assert 0 < metrics["mrr"] <= 1 and 0 < occupation_metrics["hits@10"] <= 1
    assert occupation_metrics["n"] < metrics["n"]
    band = noise_band(tiny_model, model_dir=path, seeds=(11,))
    assert (band["spread"].dropna() >= 0).all() and band["spread"].max() > 0
    assert load_result(path, "noise_band", params={"seeds": [11]}) is not None
    assert load_result(path, "noise_band", params={"seeds": [12]}) is None  # other params: recompute
    analysis = ModelAnalysis(tiny_model)
    same = bias_change(analysis, analysis)
    assert (same["change"].dropna() == 0).all()


def test_lab_jobs_run_through_the_registry_are_cancellable_and_reload(tiny_store) -> None:
    import shutil

    from kgbias_core.embeddings.store import list_models
    from kgbias_core.jobs import JobRegistry, JobState
    from kgbias_core.tasks import if_remove_edit, removal_curve_job, whatif_job

    store = tiny_store.parent / "lab-store"
    shutil.copytree(tiny_store, store, dirs_exist_ok=True)
    base = load_model(store / "tiny-transe")
    occupation = pick_occupation(base)
    edit = if_remove_edit(ModelAnalysis(base), occupation, k=5)
    registry = JobRegistry()
    try:
        done = registry.submit("what-if", whatif_job(store=store, base="tiny-transe", edit=edit, mode="warm",
                                                      name="run-1"), owner="a")
        curve = registry.submit("curve", removal_curve_job(store=store, base="tiny-transe", occupation=occupation,
                                                           ks=[5]), owner="b")
        cancelled = registry.submit("what-if", whatif_job(store=store, base="tiny-transe", edit=edit,
                                                           mode="scratch", name="run-2"), owner="a")
        registry.cancel(cancelled)
        assert registry.wait(done, timeout=120).state is JobState.DONE
        assert registry.wait(curve, timeout=120).state is JobState.DONE
        assert registry.status(cancelled).state is JobState.CANCELLED
        assert [s.name for s in registry.jobs(owner="b")] == ["curve"]
        frame = registry.result(curve)
        assert set(frame.strategy) == {"IF-REMOVE", "Random-REMOVE"} and set(frame.k) == {0, 5}
        assert list_models(store) == ["run-1", "tiny-transe"]  # the cancelled run left nothing
        assert load_model(store / "run-1").edit["strategy"] == "if-remove k=5"
    finally:
        registry.shutdown()
