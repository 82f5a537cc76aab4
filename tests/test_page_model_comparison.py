"""AppTest of the Model comparison page on the tiny store: audit, fairness, drill-down, jobs, training."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
import torch
from streamlit.testing.v1 import AppTest

from kgbias_core import tasks
from kgbias_core.data.graph import KnowledgeGraph
from kgbias_core.embeddings.config import TrainConfig
from kgbias_core.embeddings.store import StoredModel, list_models, save_model
from kgbias_core.embeddings.training import train_model
from tests.conftest import button, page, settled, texts, use_store
from tests.test_page_attributes import values

DISTMULT = TrainConfig(model="distmult", dim=16, epochs=3, batch_size=256, lr=1e-2)
#: A column that tells each of the page's tables apart (AppTest does not expose a dataframe's key).
TABLES = {"audit": "relation id", "values": "persons with the value", "gaps": "DPG (95% CI)",
          "classes": "occupation class"}


@pytest.fixture(scope="module")
def tiny_distmult(tiny_graph: KnowledgeGraph) -> StoredModel:
    return train_model(tiny_graph, DISTMULT, name="tiny-distmult")


@pytest.fixture
def two_models(writable_store: Path, tiny_distmult: StoredModel) -> Path:
    save_model(tiny_distmult, writable_store)
    return writable_store


def comparison() -> AppTest:
    app = page("model_comparison")
    app.session_state["audit_min_persons"] = 5
    return app


def frame(app: AppTest, table: str) -> pd.DataFrame:
    return next(d.value for d in app.dataframe if TABLES[table] in d.value.columns)


def has_table(app: AppTest, table: str) -> bool:
    return any(TABLES[table] in d.value.columns for d in app.dataframe)


def test_two_models_audit_fairness_and_drill_down(two_models: Path) -> None:
    app = settled(comparison())
    assert not app.exception, app.exception
    audit = frame(app, "audit")
    assert list(audit["relation"]) == ["gender", "nationality", "birthplace"]  # in words, the label as an id
    assert list(audit.columns)[-1] == "relation id"
    assert {f"{m} · {n}" for m in ("DPD", "PPD", "TLB") for n in ("tiny-transe", "tiny-distmult")} <= set(audit)
    assert (audit.drop(columns=["relation", "relation id"]) >= 0).all().all()
    assert "no division by the number of values" in texts(app.caption)
    assert "like a recall" in texts(app.caption)
    gaps = frame(app, "gaps")
    assert list(gaps["model"]) == ["tiny-transe", "tiny-distmult"]
    assert {"DPG (95% CI)", "PPG (95% CI)", "EOG (95% CI)", "predictions that are no occupation"} <= set(gaps)
    assert "SelR − data share" in frame(app, "classes") and list(frame(app, "classes").columns)[-1] == "id"
    assert "degenerate" not in texts(app.warning)
    charts = {c.key for c in app.get("plotly_chart")}
    assert {"link_prediction", "audit_heatmap", "value_chart", "gap_chart", "deviation_chart"} <= charts
    assert (two_models / "tiny-distmult" / "results" / "relation_audit.csv").is_file()  # cached beside the model

    gender = frame(app, "values")
    assert set(gender["id"]) == {"male", "female", "nonbinary"}
    app.selectbox(key="audit_relation").set_value("nationality").run()
    assert not app.exception
    assert len(frame(app, "values")) == 8  # the tiny graph's eight nationalities

    before = frame(app, "classes")
    app.slider(key="min_count").set_value(3).run()
    assert not app.exception
    assert frame(app, "classes")["id"].nunique() > before["id"].nunique()


def test_changing_the_classifier_runs_a_new_audit(writable_store: Path) -> None:
    app = settled(comparison())
    forest = frame(app, "audit")
    app.selectbox(key="audit_classifier").set_value("mlp")
    settled(app)
    assert not app.exception
    mlp = frame(app, "audit")
    assert list(mlp.columns) == list(forest.columns) == ["relation", "DPD · tiny-transe", "PPD · tiny-transe",
                                                          "TLB · tiny-transe", "relation id"]
    assert not mlp["DPD · tiny-transe"].equals(forest["DPD · tiny-transe"])


def test_single_model_and_a_minimum_count_no_class_reaches(writable_store: Path) -> None:
    app = settled(comparison())
    assert not app.exception
    app.slider(key="min_count").set_value(500).run()
    assert not app.exception
    assert "No occupation has 500 or more test facts" in texts(app.warning)
    assert not has_table(app, "gaps")
    assert frame(app, "audit").shape == (3, 5)  # the rest of the page still works


def test_training_a_missing_model_from_the_page(
    writable_store: Path, monkeypatch: pytest.MonkeyPatch, tiny_graph: KnowledgeGraph
) -> None:
    monkeypatch.setattr(tasks.training, "load_graph", lambda dataset, data_dir, **_: tiny_graph)
    monkeypatch.setattr(tasks.training, "train_config", lambda dataset: DISTMULT)
    app = comparison().run()
    app.multiselect(key="train_kinds").set_value(["distmult"])
    app.button(key="train_models").click()
    settled(app)
    assert not app.exception
    assert "synthetic-distmult" in list_models(writable_store)
    assert "DPD · synthetic-distmult" in frame(app, "audit")


@pytest.fixture
def degenerate_store(tiny_model: StoredModel, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The tiny model with one occupation, nurse, pulled far along the occupation relation: the top-1
    occupation of every person is then nurse (||s + r_p − t|| is ~1000 for every other tail)."""
    weights = {key: value.clone() for key, value in tiny_model.weights.items()}
    far = torch.zeros(tiny_model.config.dim)
    far[0] = 1000.0
    weights["entity_embeddings"][tiny_model.entity_id("nurse")] += far
    weights["relation_embeddings"][tiny_model.relation_id(tiny_model.schema.occupation_relation)] += far
    save_model(replace(tiny_model, weights=weights), tmp_path / "store")
    return use_store(tmp_path / "store", monkeypatch, tmp_path)


def test_a_degenerate_predictor_is_named_with_a_warning(degenerate_store: Path) -> None:
    app = settled(comparison())
    assert not app.exception, app.exception
    warning = texts(app.warning)
    assert "tiny-transe predicts one answer, Nurse, for 100% of the 49 test facts" in warning
    assert "degenerate predictor" in warning


def test_accuracy_against_disparity_draws_every_model_of_the_graph_including_what_ifs(
    store_with_a_run_first: Path,
) -> None:
    """Issue 28: one point per model with an MRR, what-if runs included; the missing ones named, then computed."""
    from kgbias_core.accuracy_disparity import mean_abs_group_bias
    from kgbias_core.analysis import ModelAnalysis
    from kgbias_core.embeddings.store import load_model
    from kgbias_core.evaluation.link_prediction import cached_link_prediction

    cached_link_prediction(store_with_a_run_first / "tiny-transe")
    app = page("model_comparison").run()
    assert not app.exception
    assert "have no link prediction yet" in texts(app.caption) and "a-run" in texts(app.caption)
    button(app, "Compute the missing link predictions").click().run()
    settled(app)
    assert not app.exception
    chart = next(json.loads(c.proto.spec) for c in app.get("plotly_chart")
                 if "mean |B_gr|" in json.dumps(json.loads(c.proto.spec)["layout"]))
    drawn = {name for trace in chart["data"] for name in trace["hovertext"]}
    assert drawn == {"tiny-transe", "a-run"}
    xs = sorted(x for trace in chart["data"] for x in values(trace["x"]))
    expected = sorted(mean_abs_group_bias(ModelAnalysis(load_model(store_with_a_run_first / n)))[0]
                      for n in ("tiny-transe", "a-run"))
    assert xs == pytest.approx(expected, rel=1e-5)


def test_link_prediction_table_shows_head_tail_and_both_sides(store_with_a_run_first: Path) -> None:
    """Issue 24: the Model comparison page's link-prediction table is the cached one, each side a row."""
    from kgbias_core.evaluation.link_prediction import cached_link_prediction

    cached = cached_link_prediction(store_with_a_run_first / "tiny-transe")
    app = page("model_comparison").run()
    assert not app.exception
    shown = next(d.value for d in app.dataframe if "side" in d.value.columns and "MRR" in d.value.columns)
    assert list(shown["side"]) == list(cached["side"]) == ["head", "tail", "both"] * 2
    assert list(shown["MRR"]) == pytest.approx(list(cached["mrr"]))
    # the floor beside every row: the popularity count and the same-top-1 share (kgbias_core.evaluation.baseline)
    assert list(shown["popularity MRR"]) == pytest.approx(list(cached["baseline_mrr"]))
    assert list(shown["same top-1 share"]) == pytest.approx(list(cached["same_top1"]))


def test_the_disparity_axis_switches_to_schwertmanns_equal_opportunity_gap(store_with_a_run_first: Path) -> None:
    """Issue 28's fairness gap: the same chart with EOG on the x axis, each model's point at its model-level EOG."""
    from kgbias_core.embeddings.store import load_model
    from kgbias_core.evaluation.link_prediction import cached_link_prediction
    from kgbias_core.measures.prediction_fairness import model_fairness

    for name in ("tiny-transe", "a-run"):
        cached_link_prediction(store_with_a_run_first / name)
    app = page("model_comparison").run()
    assert not app.exception
    app.radio(key="disparity").set_value("eog").run()
    assert not app.exception
    assert "EOG, the gap between men and women" in texts(app.caption)
    chart = next(json.loads(c.proto.spec) for c in app.get("plotly_chart")
                 if "equal-opportunity gap" in json.dumps(json.loads(c.proto.spec)["layout"]))
    drawn = {name: x for trace in chart["data"] for name, x in zip(trace["hovertext"], values(trace["x"]),
                                                                   strict=True)}
    expected = {n: float(model_fairness(load_model(store_with_a_run_first / n), n_bootstrap=0).by_model["EOG"])
                for n in ("tiny-transe", "a-run")}
    assert drawn == pytest.approx(expected, rel=1e-9)
