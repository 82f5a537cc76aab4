"""kgbias_core/influence/refit_prediction.py and the refit audit (issue 25): the refined what-if prediction of a
removal, where it is offered, its scale from the audit's stored retrain, against the core pieces it is made of."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from kgbias_core import tasks
from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embeddings.results import save_result
from kgbias_core.embeddings.store import load_model, save_model
from kgbias_core.errors import MeasureError
from kgbias_core.influence.local_refit import read_refit_change
from kgbias_core.influence.prediction import PREDICTION_TOLERANCE, absolute_newton_step, band_ends
from kgbias_core.influence.refit_prediction import (
    REFIT_BANDS,
    REFIT_ESTIMATOR,
    REFIT_MIN_NEGATIVES,
    refit_band_factor,
    refit_change,
    refit_refusal,
    refit_removal_prediction,
)
from kgbias_core.influence.retraining_check import removal_set
from kgbias_core.jobs import Progress
from kgbias_core.tasks import prediction_audit
from kgbias_core.whatif.step_ratio import PREDICTION_AUDIT
from tests.conftest import imported_copy


def _edit(analysis: ModelAnalysis, occupation: str = "actor", k: int = 30):
    return removal_set(analysis.influence(occupation), kind="top", k=k)


def test_the_refit_is_offered_on_models_of_eight_negatives_and_squared_l2_or_l2(tiny_model, eight_model) -> None:
    """One negative per triple (the tests' model) is refused, with the count in the reason; eight (as FB15k-237's
    default) is offered, on squared L2 and L2; L1 and pseudo-Huber models are refused for their distance, and an
    unknown occupation is an error."""
    tiny = ModelAnalysis(tiny_model)
    reason = refit_refusal(tiny, tiny.groups.labels[0])
    assert reason is not None and f"1 negative(s) per triple, fewer than {REFIT_MIN_NEGATIVES}" in reason
    eight = ModelAnalysis(eight_model)
    assert all(refit_refusal(eight, label) is None for label in eight.groups.labels)
    for distance in ("l1", "pseudo_huber"):
        other = ModelAnalysis(replace(eight_model, config=replace(eight_model.config, distance=distance)))
        assert "squared-L2 and L2" in refit_refusal(other, "actor") and distance in refit_refusal(other, "actor")
    l2 = ModelAnalysis(replace(eight_model, config=replace(eight_model.config, distance="l2")))
    assert refit_refusal(l2, "actor") is None
    with pytest.raises(MeasureError):
        refit_refusal(eight, "no such occupation")
    with pytest.raises(MeasureError, match="no refined prediction for this model: .*negative"):
        refit_removal_prediction(tiny, tiny.groups.labels[0], torch.tensor([0]))


@pytest.mark.parametrize("graph", ["fb15k237", "fb13"])
def test_the_real_graphs_defaults_are_models_the_refit_is_offered_on(graph: str, tiny_graph) -> None:
    """FB15k-237's and FB13's default objectives (eight negatives since 2026-11-27 and 2026-12-06, squared L2) are
    what the refined prediction is offered on: the tiny graph trained with the default's negatives and distance (a
    few epochs: the objective decides the offer, not convergence) passes refit_refusal. A default moved back to one
    negative, or to another distance, fails here with the refusal's reason."""
    from kgbias_core.embeddings.config import default_train_config
    from kgbias_core.embeddings.training import train_model
    from tests.conftest import TINY_TRAINING

    config = default_train_config(graph)
    model = train_model(tiny_graph, replace(TINY_TRAINING, epochs=2, negatives_per_triple=config.negatives_per_triple,
                                            distance=config.distance), name="default-objective",
                        device=torch.device("cpu"))
    analysis = ModelAnalysis(model)
    assert refit_refusal(analysis, analysis.groups.labels[0]) is None


def test_a_model_whose_rows_are_not_at_their_optimum_is_refused_after_its_unedited_refit(tiny_graph, eight_model,
                                                                                       tmp_path: Path) -> None:
    """The same eight-negative graph trained 25 epochs: refitted with nothing removed, the rows B_gr reads move by
    most of their length (the refit was measured on models where they move by about 1%), so the refined
    prediction, refit_offer and the audit's refit say why, while the model trained 100 epochs passes; the drift is
    the mean row move over the mean row length, checked against the refit the analysis keeps."""
    from kgbias_core.embeddings.training import train_model
    from kgbias_core.influence.refit_prediction import REFIT_MAX_DRIFT, read_drift
    from tests.conftest import EIGHT_EPOCHS, TINY_TRAINING

    young = train_model(tiny_graph, replace(TINY_TRAINING, negatives_per_triple=8), name="young",
                        device=torch.device("cpu"))
    assert TINY_TRAINING.epochs < EIGHT_EPOCHS
    short, long = ModelAnalysis(young), ModelAnalysis(eight_model)
    rows, refitted = short.unedited_read_refit("actor")
    trained = young.entity_embeddings[rows]
    expected = float((refitted - trained).norm(dim=1).mean() / trained.norm(dim=1).mean())
    assert read_drift(short, "actor") == pytest.approx(expected) and expected > REFIT_MAX_DRIFT
    assert read_drift(long, "actor") < REFIT_MAX_DRIFT
    assert refit_refusal(short, "actor") is None  # the model-level guard passes: only the refit shows it
    with pytest.raises(MeasureError, match="not at their optimum"):
        refit_removal_prediction(short, "actor", _edit(short))
    base = save_model(young, tmp_path / "store")
    tasks.prediction_audit_task(base).run(Progress())  # the audit stands; its refit audit is refused, not stored
    assert prediction_audit.saved_refit_audit(base, tasks.saved_prediction_audit(base)) is None
    scale, why = tasks.refit_offer(base, ModelAnalysis(load_model(base)), "actor")
    assert scale is None and "not at their optimum" in why


def test_the_refined_prediction_is_the_scaled_refit_with_its_band_and_floor(eight_model) -> None:
    """The point is scale x the read-rows refit after the step (the core's read_refit_change on the same step), the
    interval [p / f, p * f] of the rarer gender's f, widened by the noise floor, and the estimator says both."""
    analysis = ModelAnalysis(eight_model)
    removed = _edit(analysis)
    got = refit_removal_prediction(analysis, "actor", removed, scale=1.3, spread=0.05)
    step = absolute_newton_step(eight_model, removed, tolerance=PREDICTION_TOLERANCE, active=analysis.active_terms,
                                hvp=analysis.absolute_hvp)
    groups = analysis.groups
    index = groups.index("actor")
    read = read_refit_change(entities=eight_model.entity_embeddings, relations=eight_model.relation_embeddings,
                             step=step, triples=eight_model.triples, negatives=eight_model.frozen_negatives,
                             removed=removed, groups=groups, occupation_index=index, margin=eight_model.config.margin,
                             l2=eight_model.config.l2)
    assert got.point == pytest.approx(1.3 * read.change, rel=1e-6)
    low, high = band_ends(got.point, refit_band_factor(int(min(groups.n_male[index], groups.n_female[index]))))
    assert (got.low, got.high) == pytest.approx((float(low) - 0.05, float(high) + 0.05))
    assert got.floor == 0.05 and got.estimator.startswith(REFIT_ESTIMATOR) and "x 1.30" in got.estimator
    assert refit_change(analysis, "actor", removed) == pytest.approx(read.change, rel=1e-6)
    # the unedited half is the analysis's memo, shared by the occupation's predictions: the same half, bit for bit
    shared = analysis.unedited_read_refit("actor")
    assert analysis.unedited_read_refit("actor") is shared
    again = read_refit_change(entities=eight_model.entity_embeddings, relations=eight_model.relation_embeddings,
                              step=step, triples=eight_model.triples, negatives=eight_model.frozen_negatives,
                              removed=removed, groups=groups, occupation_index=index,
                              margin=eight_model.config.margin, l2=eight_model.config.l2, unedited=shared)
    assert again.change == read.change
    with pytest.raises(ValueError, match="depends on the edit"):
        read_refit_change(entities=eight_model.entity_embeddings, relations=eight_model.relation_embeddings,
                          step=step, triples=eight_model.triples, negatives=eight_model.frozen_negatives,
                          removed=removed, groups=groups, occupation_index=index, margin=eight_model.config.margin,
                          l2=eight_model.config.l2, unedited=shared, touched=True)


def test_a_removal_is_predicted_as_a_set_whatever_its_order_and_repeats(eight_model) -> None:
    """The basket keeps its rows sorted, the lab's table lists them by influence: the same set gave +0.165 on one
    page and +0.164 on the other (the gradient summed in another order stops CG elsewhere). Now the step and the
    refined point of a set are bit for bit those of its sorted rows, listed in any order or with a row twice."""
    analysis = ModelAnalysis(eight_model)
    removed = _edit(analysis, k=12)
    shuffled = removed[torch.randperm(removed.numel(), generator=torch.Generator().manual_seed(1))]
    twice = torch.cat([shuffled, shuffled[:3]])
    assert not torch.equal(shuffled, removed.sort().values)
    points = {refit_change(analysis, "actor", rows) for rows in (removed, shuffled, twice, removed.sort().values)}
    assert len(points) == 1
    steps = [absolute_newton_step(eight_model, rows, tolerance=PREDICTION_TOLERANCE, hvp=analysis.absolute_hvp)
             for rows in (shuffled, twice)]
    assert all(torch.equal(a, b) for a, b in zip(*steps, strict=True))


def test_the_refit_audit_reads_the_audits_retrain_once(eight_model, tmp_path: Path, monkeypatch) -> None:
    """refit_scale: none before the removal audit; the audit's task (one real masked retrain) then stores the refit
    audit, retrained / refined on the audit's own set, read back without a refit; a new audit makes it stale."""
    base = save_model(eight_model, tmp_path / "store")
    analysis = ModelAnalysis(load_model(base))
    assert tasks.refit_scale(base, analysis) is None
    tasks.prediction_audit_task(base).run(Progress())
    audit = tasks.saved_prediction_audit(base)
    assert prediction_audit.saved_refit_audit(base, audit) is not None  # made by the audit's task, after it
    row = audit.iloc[0]
    refined = refit_change(analysis, row["occupation"], removal_set(analysis.influence(row["occupation"]),
                                                                    kind="top", k=int(row["k"])))
    scale = tasks.refit_scale(base, analysis)
    assert scale == pytest.approx(min(max(float(row["retrained"]) / refined, 0.05), 2.0), rel=1e-6)
    stored = prediction_audit.saved_refit_audit(base, audit)
    assert stored is not None and stored.iloc[0]["refined"] == pytest.approx(refined, rel=1e-6)

    def no_refit(*args, **kwargs):
        raise AssertionError("refitted again")

    monkeypatch.setattr(prediction_audit, "refit_change", no_refit)
    assert tasks.refit_scale(base, analysis) == scale
    changed = audit.assign(retrained=audit["retrained"] * 2)
    save_result(base, PREDICTION_AUDIT, changed, params={})
    assert prediction_audit.saved_refit_audit(base, changed) is None
    with pytest.raises(AssertionError, match="refitted again"):
        tasks.refit_scale(base, analysis)


def test_no_refit_audit_on_a_refused_model(tiny_store, tmp_path: Path) -> None:
    """The tests' model (one negative a triple) is refused: its audit's task stores no refit audit, and asking for
    one says why (a MeasureError)."""
    base = Path(shutil.copytree(tiny_store, tmp_path / "store")) / "tiny-transe"
    analysis = ModelAnalysis(load_model(base))
    tasks.prediction_audit_task(base).run(Progress())
    assert prediction_audit.saved_refit_audit(base, tasks.saved_prediction_audit(base)) is None
    with pytest.raises(MeasureError, match="no refined prediction for this model: .*negative"):
        tasks.refit_scale(base, analysis)


@pytest.mark.parametrize("distance", ["squared_l2", "l2"])
def test_the_refined_prediction_covers_masked_retrains_of_an_eight_negative_model(distance, request,
                                                                                   tmp_path) -> None:
    """Against real masked retrains: on the tests' graph trained with eight negatives (squared L2, and L2 with its
    own band), the refined prediction of the top and bottom 16% sets of three occupations held out of every fit
    (scaled by the model's own refit audit, one more retrain) covers at least 5 of the 6 retrained changes and has
    every sign right (the benches: squared L2 94% of 47 sets; L2 91% of 149 on two FB15k-237 models and two
    synthetic graphs; docs/results/whatif.md).
    On L2 the estimator names the distance and the band is L2's; its occupations are three the L2 band's fit did not
    see (the fit read this graph's eight largest, writer, politician and film director among them), of 27, 28 and 2
    women."""
    from kgbias_core.influence.retraining_check import masked_retrain_bias

    model = request.getfixturevalue("eight_model" if distance == "squared_l2" else "eight_l2_model")
    assert model.config.distance == distance
    base = save_model(model, tmp_path / "store")
    analysis = ModelAnalysis(load_model(base))
    tasks.prediction_audit_task(base).run(Progress())
    scale = tasks.refit_scale(base, analysis)
    groups = analysis.groups
    unedited = masked_retrain_bias(analysis.model, removed=None, groups=groups)
    inside, signs = 0, 0
    held_out = ("writer", "politician", "film_director") if distance == "squared_l2" else ("singer", "nurse", "soldier")
    for occupation in held_out:
        influence = analysis.influence(occupation)
        k = int((influence != 0).sum()) * 16 // 100
        for kind in ("top", "bottom"):
            removed = removal_set(influence, kind=kind, k=k)
            predicted = refit_removal_prediction(analysis, occupation, removed, scale=scale)
            index = groups.index(occupation)
            f = refit_band_factor(int(min(groups.n_male[index], groups.n_female[index])), distance)
            assert (predicted.low, predicted.high) == pytest.approx(tuple(map(float, band_ends(predicted.point, f))))
            assert ("L2 distance" in predicted.estimator) == (distance == "l2")
            retrained = float(masked_retrain_bias(analysis.model, removed=removed, groups=groups)[index]
                              - unedited[index])
            inside += predicted.low <= retrained <= predicted.high
            signs += (predicted.point > 0) == (retrained > 0)
    assert signs == 6 and inside >= 5


def _imported(model):
    """``model`` as kgbias import stores one from another engine (IMPORT_NEGATIVES re-drawn a triple)."""
    return imported_copy(model, f"{model.name}-imported")


def test_the_refit_is_offered_on_imports_of_l2_with_eight_redrawn_negatives(eight_model, eight_l2_model,
                                                                            tmp_path) -> None:
    """An import re-draws its negatives: its refit is offered on L2 (its own band, unscaled: no audit to wait for,
    so ``refit_offer`` gives the scale 1 at once), refused on squared L2 with the reason, and refused where it
    re-draws fewer than eight a triple (an import made before kgbias import re-drew eight)."""
    stored = save_model(_imported(eight_l2_model), tmp_path / "store")
    imported = ModelAnalysis(load_model(stored))
    assert not imported.negatives.exact
    assert not torch.equal(imported.negatives.negatives, eight_l2_model.frozen_negatives)  # truly re-drawn
    assert refit_refusal(imported, "nurse") is None
    assert tasks.saved_prediction_audit(stored) is None
    assert tasks.refit_not_offered(stored, imported, "nurse") is None
    assert tasks.refit_offer(stored, imported, "nurse") == (1.0, None)
    squared = ModelAnalysis(_imported(eight_model))
    assert "L2 only" in refit_refusal(squared, "nurse") and "squared_l2" in refit_refusal(squared, "nurse")
    with pytest.raises(MeasureError, match="no refined prediction for this model: .*L2 only"):
        refit_removal_prediction(squared, "nurse", _edit(squared, "nurse"))
    one = _imported(eight_l2_model)
    one = ModelAnalysis(replace(one, config=replace(one.config, negatives_per_triple=1)))
    assert f"re-draws 1 negative(s) per triple, fewer than {REFIT_MIN_NEGATIVES}" in refit_refusal(one, "nurse")


def test_the_refined_prediction_of_an_l2_import_covers_masked_retrains(eight_l2_model) -> None:
    """The tests' graph trained with L2 and eight negatives, predicted as an import (negatives re-drawn, no audit,
    no scale) and retrained masked with its own: the refined prediction of the top and bottom 16% sets of three
    occupations its band never saw (the fit read this graph's eight largest; these have 27, 5 and 2 women; the sets
    chosen by the import's own closed form, as its user would) covers at least 5 of the 6 retrained changes, every
    sign right, in the import's band, named with its re-drawn negatives (the benches: 90% of 121 sets of
    FB15k-237 and two synthetic graphs; docs/results/whatif.md)."""
    from kgbias_core.influence.retraining_check import masked_retrain_bias

    analysis = ModelAnalysis(_imported(eight_l2_model))
    groups = analysis.groups
    unedited = masked_retrain_bias(eight_l2_model, removed=None, groups=groups)
    inside, signs = 0, 0
    for occupation in ("singer", "nurse", "soldier"):
        influence = analysis.influence(occupation)
        k = int((influence != 0).sum()) * 16 // 100
        index = groups.index(occupation)
        f = refit_band_factor(int(min(groups.n_male[index], groups.n_female[index])), "l2", redrawn=True)
        assert f != refit_band_factor(int(min(groups.n_male[index], groups.n_female[index])), "l2")
        for kind in ("top", "bottom"):
            removed = removal_set(influence, kind=kind, k=k)
            predicted = refit_removal_prediction(analysis, occupation, removed)
            assert (predicted.low, predicted.high) == pytest.approx(tuple(map(float, band_ends(predicted.point, f))))
            assert "negatives re-drawn" in predicted.estimator and "L2 distance" in predicted.estimator
            retrained = float(masked_retrain_bias(eight_l2_model, removed=removed, groups=groups)[index]
                              - unedited[index])
            inside += predicted.low <= retrained <= predicted.high
            signs += (predicted.point > 0) == (retrained > 0)
    assert signs == 6 and inside >= 5


def test_the_l2_band_is_the_pooled_fit_of_every_measured_set() -> None:
    """REFIT_BANDS['l2'] is the pair the committed band fit found (experiments/whatif_accuracy/results/
    local_refit_bands_l2_pooled.csv: the narrowest covering 90% of the 149 targeted sets L2's refit is measured on),
    and that file judges the lab's band, so read back, at 90% or more of them; the first band (1.0 + 1.65/sqrt(m))
    held fewer of FB15k-237's held-out sets than it does (local_refit_bands_l2_amd.csv)."""
    import pandas as pd

    results = Path(__file__).resolve().parents[1] / "experiments" / "whatif_accuracy" / "results"
    pooled = pd.read_csv(results / "local_refit_bands_l2_pooled.csv")
    refined = pooled[pooled["estimator"] == "newton_refit_read"].set_index("evaluation")
    fit = refined.loc["in-sample all"]
    assert (float(fit["a"]), float(fit["b"])) == pytest.approx(REFIT_BANDS["l2"])
    shown = refined.loc["lab band -> all"]
    assert (float(shown["a"]), float(shown["b"])) == pytest.approx(REFIT_BANDS["l2"])
    assert shown["sets"] == 149 and shown["coverage"] >= 0.9
    first = pd.read_csv(results / "local_refit_bands_l2_amd.csv").query("estimator == 'newton_refit_read'")
    before = first.set_index("evaluation").loc["lab band -> fb"]
    assert (float(before["a"]), float(before["b"])) == (1.0, 1.65)
    assert before["coverage"] < refined.loc["lab band -> fb", "coverage"]
