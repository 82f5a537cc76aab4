"""AppTest of the Debiasing lab's Plan section on a copy of the tiny store: build, read, verify, plot."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest

from kgbias_app import texts as ui_texts
from kgbias_app.sections import plan as section
from kgbias_core import tasks
from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embeddings.store import list_models, load_model
from kgbias_core.jobs import Progress
from kgbias_core.whatif.plan import (
    PlanConfig,
    plan_headline,
    plan_removal,
    resolve_targets,
)
from kgbias_core.whatif.step_ratio import PLANS, observed_step_ratio, saved_verifications
from tests.conftest import button, metric, page, settled, texts


def _values(array) -> list[float]:
    """A Plotly JSON array: a list, or the typed array Plotly 6 writes ({"dtype": "f8", "bdata": base64})."""
    if isinstance(array, dict):
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=np.dtype(array["dtype"])).tolist()
    return list(array)


def test_the_plan_section_builds_a_plan_verifies_it_and_plots_predicted_against_actual(writable_store: Path) -> None:
    base = writable_store / "tiny-transe"
    # The noise band first: the lab starts it on opening, and a band arriving mid-test would change the targets.
    noise = tasks.noise_band_task(base).run(Progress())
    app = page("debiasing_lab").run()
    app.selectbox(key="lab_occupation").set_value("nurse").run()
    # the lab's occupation is the default target
    assert app.multiselect(key=section.target_key("nurse")).value == ["nurse"]
    assert section.NO_VERIFIED in texts(app.caption) and section.NO_SCALE in texts(app.caption)
    button(app, section.BUILD_BUTTON).click().run()
    assert not app.exception
    analysis = ModelAnalysis(load_model(base))
    config = PlanConfig()
    expected = plan_removal(analysis, resolve_targets(analysis, ["nurse"], noise=noise, config=config), noise=noise,
                            config=config)
    (outcome,) = expected.targets
    assert "noise band" in outcome.target.source and expected.removed
    said = texts(app.success) if expected.feasible else texts(app.warning)
    assert (section.FEASIBLE if expected.feasible else section.INFEASIBLE).format(what=plan_headline(expected)) in said
    assert metric(app, "Predicted B_gr of Nurse after") == ui_texts.fmt(outcome.after)
    assert metric(app, "B_gr of Nurse now") == ui_texts.fmt(outcome.before)
    table = next(t.value for t in app.dataframe if "in words" in t.value.columns)
    assert table["row"].tolist() == list(expected.removed)
    collateral = next(c for c in app.get("plotly_chart") if "plan_collateral" in c.proto.id)
    bars = json.loads(collateral.proto.spec)["data"][0]
    assert len(_values(bars["x"])) == int((expected.collateral["bounded"] | expected.collateral["target"]).sum())

    button(app, section.VERIFY_BUTTON).click().run()
    settled(app)
    assert not app.exception
    record = saved_verifications(base)
    assert len(record) == 1 and record["run"].iloc[0] in list_models(writable_store)
    assert section.NO_VERIFIED not in texts(app.caption)
    scatter = next(c for c in app.get("plotly_chart") if "plan_verified" in c.proto.id)
    points = json.loads(scatter.proto.spec)["data"][0]
    assert _values(points["x"]) == pytest.approx([record["predicted"].iloc[0]])
    assert _values(points["y"]) == pytest.approx([record["actual"].iloc[0]])

    # The verified retrain gives the ratio: the next plan offers to scale its step by it, on by default, and the
    # plan built before is no longer shown as current (its step scale was 1).
    ratio = observed_step_ratio(record, use=PLANS)
    box = app.checkbox(key="plan_step_scale")
    assert box.value and box.label == section.SCALE_LABEL.format(value=ratio.value)
    assert section.CHANGED in texts(app.caption)
    button(app, section.BUILD_BUTTON).click().run()
    config = PlanConfig(step_scale=ratio.value)
    scaled = plan_removal(analysis, resolve_targets(analysis, ["nurse"], noise=noise, config=config), noise=noise,
                          config=config)
    table = next(t.value for t in app.dataframe if "in words" in t.value.columns)
    assert table["row"].tolist() == list(scaled.removed)
    assert metric(app, "Predicted B_gr of Nurse after") == ui_texts.fmt(scaled.targets[0].after)
    again = section.VERIFY_AGAIN.split(" (")[0]
    assert again not in texts(app.caption)  # other triples: a retrain of its own
    app.checkbox(key="plan_step_scale").uncheck().run()  # the step as computed: the scaled plan is not current
    assert section.CHANGED in texts(app.caption)
    button(app, section.BUILD_BUTTON).click().run()
    assert section.CHANGED not in texts(app.caption)
    table = next(t.value for t in app.dataframe if "in words" in t.value.columns)
    assert table["row"].tolist() == list(expected.removed)
    # the first plan again: its run is there, and verifying it will read that run back, as the page says
    assert again in texts(app.caption)
