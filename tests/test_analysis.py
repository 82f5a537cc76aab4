"""The per-model memo (kgbias_core.analysis): each tensor once under racing threads, B_gr without the table."""

from __future__ import annotations

import threading

import pytest
import torch

import kgbias_core.analysis as analysis_module
from kgbias_core.analysis import ModelAnalysis
from kgbias_core.influence.closed_form import influence_context, triple_influence

from .conftest import naive_group_bias


def counting(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """Count the calls of ``kgbias_core.analysis.<name>`` (still calling the real function)."""
    calls: list[int] = []
    real = getattr(analysis_module, name)

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(analysis_module, name, counted)
    return calls


def test_warm_up_computes_the_influence_context_once(tiny_model, monkeypatch) -> None:
    calls = counting(monkeypatch, "influence_context")
    analysis = ModelAnalysis(tiny_model)
    thread = analysis.warm_up()
    context = analysis.context  # waits for the warm-up thread rather than computing again
    thread.join()
    assert analysis.context is context and len(calls) == 1
    assert context.groups is analysis.groups  # the context shares the analysis's groups


def test_warm_up_builds_the_whatif_curvature_once_and_the_prediction_uses_it(tiny_model, monkeypatch) -> None:
    from kgbias_core.influence.prediction import predict_removal

    calls = counting(monkeypatch, "absolute_curvature_hvp")
    analysis = ModelAnalysis(tiny_model)
    analysis.warm_up().join()
    assert len(calls) == 1
    groups = analysis.groups
    index = int(torch.argmax(torch.minimum(groups.n_male, groups.n_female)))
    removed = torch.topk(analysis.influence(groups.labels[index]).abs(), 5).indices
    prediction = predict_removal(analysis, groups.labels[index], removed)
    assert len(calls) == 1 and prediction.point != 0.0  # the lab's step read the warmed |H|


def test_warm_up_leaves_the_curvature_of_a_large_graph_or_a_dense_one_unbuilt(tiny_model, monkeypatch) -> None:
    from dataclasses import replace

    calls = counting(monkeypatch, "absolute_curvature_hvp")
    monkeypatch.setattr(analysis_module, "WARM_CURVATURE_PAIRS", tiny_model.triples.shape[0] - 1)
    analysis = ModelAnalysis(tiny_model)
    analysis.warm_up().join()
    assert calls == [] and "context" in analysis._memo._values
    monkeypatch.undo()
    calls = counting(monkeypatch, "absolute_curvature_hvp")
    l1 = ModelAnalysis(replace(tiny_model, config=replace(tiny_model.config, distance="l1")))
    l1.warm_up().join()  # a curvature per term and coordinate: not held unasked
    assert calls == [] and "context" in l1._memo._values


def test_racing_threads_compute_each_tensor_once(tiny_model, monkeypatch) -> None:
    calls = {name: counting(monkeypatch, name) for name in ("occupation_groups", "influence_context",
                                                             "triple_influence", "fisher_person_changes")}
    analysis = ModelAnalysis(tiny_model)
    label = analysis_module.occupation_groups(tiny_model).labels[0]
    calls["occupation_groups"].clear()
    start = threading.Barrier(6)
    results: list[tuple] = []

    def ask() -> None:
        start.wait()
        results.append((analysis.groups, analysis.context, analysis.group_bias(), analysis.pair_biases,
                        analysis.fisher_bp, analysis.fisher_changes,
                        analysis.influence(label) if _both(analysis, label) else None))

    threads = [threading.Thread(target=ask) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 6
    for column in zip(*results, strict=True):
        assert all(value is column[0] for value in column)
    once = ("occupation_groups", "influence_context", "fisher_person_changes")
    assert [len(calls[name]) for name in once] == [1, 1, 1]
    assert len(calls["triple_influence"]) == (1 if _both(analysis, label) else 0)


def _both(analysis: ModelAnalysis, label: str) -> bool:
    index = analysis.groups.index(label)
    return bool(analysis.groups.n_male[index] > 0 and analysis.groups.n_female[index] > 0)


def test_a_slow_influence_context_does_not_hold_up_group_bias(tiny_model, monkeypatch) -> None:
    release = threading.Event()
    real = analysis_module.influence_context

    def slow(*args, **kwargs):
        release.wait(timeout=30)
        return real(*args, **kwargs)

    monkeypatch.setattr(analysis_module, "influence_context", slow)
    analysis = ModelAnalysis(tiny_model)
    warm_up = analysis.warm_up()
    answered = threading.Event()
    reader = threading.Thread(target=lambda: (analysis.group_bias(), answered.set()))
    reader.start()
    assert answered.wait(timeout=10), "group_bias waited for the influence context"
    assert warm_up.is_alive()
    release.set()
    warm_up.join()
    reader.join()


def test_group_bias_equals_a_naive_loop_without_bootstrap_or_fisher(tiny_model, monkeypatch) -> None:
    def forbidden(*args, **kwargs):
        raise AssertionError("B_gr alone must not compute Fisher's b_p or the per-pair biases")

    monkeypatch.setattr(analysis_module, "fisher_person_changes", forbidden)
    monkeypatch.setattr(analysis_module, "individual_bias", forbidden)
    analysis = ModelAnalysis(tiny_model)
    every = analysis.group_bias()
    for position, label in enumerate(analysis.groups.labels):
        one = float(analysis.group_bias(label))
        assert one == pytest.approx(float(every[position]), nan_ok=True)
        assert one == pytest.approx(naive_group_bias(tiny_model, label), rel=1e-4, abs=1e-5, nan_ok=True)


def test_influence_and_predicted_removal_follow_the_closed_form(tiny_model) -> None:
    analysis = ModelAnalysis(tiny_model)
    groups = analysis.groups
    index = int(torch.argmax(torch.minimum(groups.n_male, groups.n_female)))
    label = groups.labels[index]
    expected = triple_influence(influence_context(tiny_model), index)
    assert torch.allclose(analysis.influence(label), expected)
    assert analysis.influence(label) is analysis.influence(label)
    removed = torch.topk(expected.abs(), 7).indices
    change = analysis.predicted_removal(label, removed)
    assert change.raw == pytest.approx(float(expected[removed].sum()))
    assert change.calibrated == (tiny_model.influence_scale is not None)


def test_a_debiased_model_is_not_warmed_up_as_its_influence_is_refused(tiny_model) -> None:
    """A thread computing a projected model's influence context would die on DEBIASED_NO_RETRAIN, unseen."""
    from kgbias_core.whatif.projection import projected_model

    assert ModelAnalysis(projected_model(tiny_model, name="tiny-projected")).warm_up() is None
