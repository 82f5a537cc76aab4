"""AppTest of the Debiasing lab's embedding-level sections (issue 29 parts 2-3): "Debias the embedding" makes a
projected or a fairness-regularised model through the job queue, and "Compare" shows the comparison table, whose
every number is checked against its measure computed on its own."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from kgbias_app.sections import debias_embedding
from kgbias_core import tasks
from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embeddings.store import list_models, load_model, read_config, save_model
from kgbias_core.evaluation.link_prediction import link_prediction
from kgbias_core.jobs import Progress
from kgbias_core.measures.prediction_fairness import model_fairness
from kgbias_core.whatif.edits import Edit, make_edit
from kgbias_core.whatif.projection import projected_model
from tests.conftest import button, naive_group_bias, naive_groups, page, settled, texts

BASE = "quick-transe"


def _made(store: Path, prefix: str) -> list[str]:
    return [name for name in list_models(store) if name.startswith(prefix)]


def test_project_the_gender_direction_out_into_a_new_model_of_the_store(quick_store: Path) -> None:
    app = page("debiasing_lab").run()
    assert not app.exception
    assert app.radio(key="debias_method").value == "project"
    assert "refuse it" in texts(app.caption)  # DEBIASED_NO_RETRAIN said, with why, before anything is made
    button(app, "Project and save the model").click().run()
    settled(app)
    assert not app.exception
    made = _made(quick_store, f"{BASE}--project-all-occupations-")
    assert len(made) == 1
    assert "already in the store" in texts(app.info)
    model = load_model(quick_store / made[0])
    assert read_config(quick_store / made[0])["debias"]["method"] == "project"
    # Bourli & Pitoura's criterion, computed here from the saved weights: B_wo(o) = o . (m - f) = 0 everywhere.
    groups = ModelAnalysis(model).groups
    E = model.entity_embeddings.double()
    g = E[groups.male] - E[groups.female]
    b_wo = E[groups.occupations] @ g
    assert float(b_wo.abs().max()) < 1e-5 * float(g.norm() * E[groups.occupations].norm(dim=1).max())
    base = load_model(quick_store / BASE)
    assert float((base.entity_embeddings[groups.occupations].double() @ g).abs().max()) > 1e-3  # it did move


def test_regularise_retrains_through_the_job_queue_and_lowers_the_disparity(quick_store: Path) -> None:
    app = page("debiasing_lab").run()
    app.radio(key="debias_method").set_value("regularise").run()
    app.number_input(key="debias_weight").set_value(10.0).run()
    assert not app.exception
    button(app, "Retrain with the fairness term").click().run()
    assert "is being made" in texts(app.caption) or _made(quick_store, f"{BASE}--regularise-w10-")
    settled(app)
    assert not app.exception
    made = _made(quick_store, f"{BASE}--regularise-w10-all-occupations-")
    assert len(made) == 1
    config = read_config(quick_store / made[0])
    assert config["fairness_weight"] == 10.0 and config["debias"]["method"] == "regularise"
    before = ModelAnalysis(load_model(quick_store / BASE)).group_bias()
    after = ModelAnalysis(load_model(quick_store / made[0])).group_bias()
    defined = ~torch.isnan(before) & ~torch.isnan(after)
    assert float(after[defined].abs().mean()) < float(before[defined].abs().mean())

    # The debiased model picked in the sidebar: the lab says what it is, and that what-ifs refuse it.
    app.selectbox(key="model").set_value(made[0]).run()
    assert not app.exception
    assert "is itself debiased at the embedding level (regularise" in texts(app.info)
    assert "does not minimise" in texts(app.error)  # the edit's prediction: DEBIASED_NO_RETRAIN, in one line


def test_the_name_of_a_debiased_model_says_what_was_done_and_differs_per_request() -> None:
    one = debias_embedding.debiased_name("m", method="project", weight=10.0, direction="values", persons=False,
                                         occupations=[], scope="all-occupations")
    assert one.startswith("m--project-all-occupations-")
    assert one != debias_embedding.debiased_name("m", method="project", weight=10.0, direction="persons",
                                                 persons=False, occupations=[], scope="all-occupations")
    assert debias_embedding.debiased_name("m", method="regularise", weight=2.5, direction="values", persons=False,
                                          occupations=["/m/x"], scope="Actor").startswith("m--regularise-w2-5-actor-")


@pytest.fixture
def store_to_compare(quick_store: Path) -> tuple[Path, list[str], Edit]:
    """The quick store with an IF-REMOVE what-if and a projected model of ``quick-transe`` (and the what-if's edit)."""
    base = quick_store / BASE
    analysis = ModelAnalysis(load_model(base))
    edit = make_edit(analysis, "nurse", strategy="if", k=5)
    run = tasks.whatif_name(BASE, edit, occupation_name="Nurse")
    tasks.whatif_task(base=base, edit=edit, out=quick_store / run).run(Progress())
    projected = save_model(projected_model(analysis.model, name=f"{BASE}--project-test"), quick_store).name
    return quick_store, [BASE, run, projected], edit


def test_compare_shows_the_table_whose_numbers_are_the_individual_measures(
    store_to_compare: tuple[Path, list[str], Edit],
) -> None:
    store, names, edit = store_to_compare
    app = page("debiasing_lab").run()
    app.selectbox(key="lab_occupation").set_value("nurse").run()
    assert not app.exception
    picker = next(m for m in app.multiselect if m.key.startswith("compare_models:"))
    assert picker.value == names  # the original first, then its what-if and its debiased model, all ticked
    button(app, "Compare the 3 model(s) on Nurse").click().run()
    settled(app)
    assert not app.exception
    shown = next(d.value for d in app.dataframe if "B_gr of Nurse" in d.value.columns).set_index("model")
    assert list(shown.index) == names
    assert list(shown["method"]) == ["original", edit.strategy, "project"]
    for name in names:
        model = load_model(store / name)
        row = shown.loc[name]
        groups, _ = naive_groups(model)
        both = [o for o, (men, women) in groups.items() if men and women]
        assert row["B_gr of Nurse"] == pytest.approx(naive_group_bias(model, "nurse"), abs=1e-4)
        assert row["mean |B_gr|"] == pytest.approx(
            sum(abs(naive_group_bias(model, o)) for o in both) / len(both), abs=1e-4)
        analysis = ModelAnalysis(model)
        assert row["b_p of Nurse"] == pytest.approx(float(analysis.fisher_bp[analysis.groups.index("nurse")]),
                                                     abs=1e-4)
        fairness = model_fairness(model, n_bootstrap=0).by_model
        for gap in ("DPG", "PPG", "EOG"):
            both_undefined = math.isnan(row[gap]) and math.isnan(fairness[gap])
            assert both_undefined or row[gap] == pytest.approx(float(fairness[gap]), abs=1e-4)
        links = link_prediction(model, side="both")  # the comparison quotes both sides pooled
        assert row["MRR"] == pytest.approx(links["mrr"], abs=1e-4)
        assert row["Hits@10"] == pytest.approx(links["hits@10"], abs=1e-4)
        assert row["triples edited"] == (len(edit.removed) if name == names[1] else 0)
    chart = next(json.loads(c.proto.spec) for c in app.get("plotly_chart") if "Accuracy: link-prediction MRR"
                 in json.dumps(json.loads(c.proto.spec)["layout"]))
    assert {trace["name"] for trace in chart["data"]} == {"B_gr of Nurse", "mean |B_gr| over every occupation",
                                                          "MRR (filtered, test split)"}
    assert all(list(trace["x"]) == names for trace in chart["data"])
    assert any(b.proto.id.endswith("-debias_compare:csv") for b in app.get("download_button"))  # the table as CSV
