"""AppTest of the "Debiasing lab" and "Validation" pages on a copy of the tiny store."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

from kgbias_app import lab_ui
from kgbias_core import tasks
from kgbias_core.embeddings.store import list_models, load_model, save_model
from kgbias_core.embeddings.training import train_model
from kgbias_core.jobs import JobState, default_registry
from tests.conftest import TINY_TRAINING

REPO = Path(__file__).resolve().parents[1]
TIMEOUT = 60
NO_WOMEN = "pilot"  # the tiny graph's pilots are all men
#: Fewer epochs than the session's tiny model: the validation page retrains it several times.
QUICK_TRAINING = replace(TINY_TRAINING, epochs=6)


def page(name: str) -> AppTest:
    return AppTest.from_file(str(REPO / "pages" / f"{name}.py"), default_timeout=TIMEOUT)


@pytest.fixture
def store(tiny_store: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A writable copy of the tiny store (what-ifs are written into it)."""
    copy = tmp_path / "store"
    shutil.copytree(tiny_store, copy)
    monkeypatch.setenv("KGBIAS_MODEL_DIR", str(copy))
    monkeypatch.setenv("KGBIAS_DATA_DIR", str(tmp_path / "no-data"))
    return copy


@pytest.fixture(scope="module")
def quick_model(tiny_graph):
    return train_model(tiny_graph, QUICK_TRAINING, name="quick-transe", device=torch.device("cpu"))


@pytest.fixture
def quick_store(quick_model, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    save_model(quick_model, tmp_path / "quick")
    monkeypatch.setenv("KGBIAS_MODEL_DIR", str(tmp_path / "quick"))
    monkeypatch.setenv("KGBIAS_DATA_DIR", str(tmp_path / "no-data"))
    return tmp_path / "quick"


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


def metric(app: AppTest, label: str) -> str:
    return next(m.value for m in app.metric if m.label.startswith(label))


def button(app: AppTest, label: str):
    return next(b for b in app.button if b.label.startswith(label))


def wait_for_jobs(app: AppTest) -> None:
    """Block on this session's jobs, then rerun twice (the job panel reruns the app when one ends)."""
    for job_id in app.session_state[lab_ui.JOBS_KEY]:
        assert default_registry().wait(job_id, timeout=TIMEOUT).state is JobState.DONE
    app.run()
    app.run()


def test_lab_predicted_change_is_instant_and_follows_k(store: Path) -> None:
    app = page("debiasing_lab").run()
    assert not app.exception
    app.selectbox(key="occupation").set_value("nurse").run()
    app.radio(key="lab_strategy").set_value("if").run()
    app.number_input(key="lab_k").set_value(2).run()
    small = metric(app, "Predicted change of B_gr")
    app.number_input(key="lab_k").set_value(10).run()
    large = metric(app, "Predicted change of B_gr")
    assert not app.exception
    assert small != large and float(small) < 0 and float(large) < float(small)  # nurse leans male: IF-REMOVE lowers
    assert "uncalibrated" in texts(app.caption).lower()
    assert "ranking only" in app.metric[1].label


def test_lab_warnings_for_c_zero_no_women_and_large_k(store: Path) -> None:
    app = page("debiasing_lab").run()
    app.selectbox(key="occupation").set_value("nurse").run()
    app.radio(key="lab_strategy").set_value("add").run()
    assert "influence predicts the effect of removing triples only" in texts(app.info).lower()
    app.slider(key="lab_c").set_value(0.0).run()
    assert "adds no dummy" in texts(app.error)
    app.radio(key="lab_strategy").set_value("if").run()
    app.number_input(key="lab_k").set_value(100_000).run()
    assert "IF-REMOVE removes those" in texts(app.warning)
    app.radio(key="lab_strategy").set_value("random").run()
    assert "Random-REMOVE removes all" in texts(app.warning)
    app.selectbox(key="occupation").set_value(NO_WOMEN).run()
    assert not app.exception
    assert "no women" in texts(app.warning)
    assert "0 female persons" in texts(app.error)
    app.radio(key="lab_strategy").set_value("basket").run()
    assert "basket of tiny-transe is empty" in texts(app.info)


def test_lab_retrains_a_whatif_into_the_store_and_compares(store: Path) -> None:
    app = page("debiasing_lab").run()
    app.selectbox(key="occupation").set_value("nurse").run()
    app.radio(key="lab_strategy").set_value("if").run()
    app.number_input(key="lab_k").set_value(5).run()
    app.radio(key="lab_mode").set_value("warm").run()
    button(app, "Retrain").click().run()
    assert not app.exception
    wait_for_jobs(app)
    runs = [name for name in list_models(store) if name.startswith("tiny-transe--if-remove-nurse-")]
    assert len(runs) == 1
    assert load_model(store / "tiny-transe").edit is None  # the base is untouched
    assert not app.exception
    assert "already in the store" in texts(app.info)
    assert metric(app, "B_gr of Nurse before") == metric(app, "B_gr now")
    assert float(metric(app, "change")) < 0
    assert len(app.dataframe) == 1  # link prediction before/after, computed by the job
    assert "MRR" not in texts(app.error)


def test_lab_noise_band_and_curve_jobs(quick_store: Path) -> None:
    app = page("debiasing_lab").run()
    app.selectbox(key="occupation").set_value("nurse").run()
    assert lab_ui.NO_NOISE_BAND in texts(app.info)
    button(app, "Compute the noise band").click().run()
    app.multiselect(key="lab_curve_ks").set_value([5]).run()
    button(app, "Compute the curve").click().run()
    wait_for_jobs(app)
    assert not app.exception
    assert tasks.saved_noise_band(quick_store / "quick-transe") is not None
    assert "spread" in texts(app.caption)
    curve = tasks.saved_curve(quick_store / "quick-transe", "nurse")
    assert set(curve["strategy"]) == {"IF-REMOVE", "Random-REMOVE"} and set(curve["k"]) == {0, 5}
    assert len(app.get("plotly_chart")) == 1
    # a run next to the noise band and the Random-REMOVE baseline
    app.radio(key="lab_strategy").set_value("if").run()
    app.number_input(key="lab_k").set_value(5).run()
    app.radio(key="lab_mode").set_value("warm").run()
    button(app, "Retrain").click().run()
    wait_for_jobs(app)
    assert not app.exception
    captions = texts(app.caption)
    assert "Random-REMOVE baseline: removing 5 random triples" in captions
    assert "that noise" in captions
    assert len(app.get("plotly_chart")) == 2  # change of every occupation, and the curve with the run


def test_dashboard_routes_to_the_lab_and_validation(store: Path) -> None:
    app = AppTest.from_file(str(REPO / "dashboard.py"), default_timeout=TIMEOUT).run()
    for script, title in (("pages/debiasing_lab.py", "Debiasing lab"), ("pages/validation.py", "Validation")):
        app.switch_page(script).run()
        assert not app.exception
        assert app.title[0].value == title


def test_lab_sessions_see_only_their_own_jobs(store: Path) -> None:
    mine = page("debiasing_lab").run()
    mine.selectbox(key="occupation").set_value("nurse").run()
    mine.radio(key="lab_strategy").set_value("random").run()
    mine.radio(key="lab_mode").set_value("warm").run()
    button(mine, "Retrain").click().run()
    theirs = page("debiasing_lab").run()
    assert "Jobs of this session" not in texts(theirs.subheader)
    wait_for_jobs(mine)
    assert "Jobs of this session" in texts(mine.subheader)


def test_validation_influence_check_and_storing_the_scale(quick_store: Path) -> None:
    app = page("validation").run()
    assert not app.exception
    app.selectbox(key="occupation").set_value("nurse").run()
    app.text_input(key="val_ks:nurse").set_value("3, 6").run()
    app.multiselect(key="val_kinds").set_value(["top", "random"]).run()
    button(app, "Run the check").click().run()
    wait_for_jobs(app)
    assert not app.exception
    assert float(metric(app, "Pearson r")) > 0.5  # 6 epochs: a page check, not an accuracy check
    scale = float(metric(app, "Scale actual/predicted"))
    assert scale > 0
    button(app, "Store the scale").click().run()
    assert load_model(quick_store / "quick-transe").influence_scale == pytest.approx(scale, rel=1e-2)
    assert tasks.saved_accuracy(quick_store / "quick-transe", "nurse") is not None  # results kept
    assert "Stored scale: " + f"{scale:.3g}" in texts(app.caption)


def test_validation_no_women_and_census_without_pairing(store: Path) -> None:
    app = page("validation").run()
    app.selectbox(key="occupation").set_value(NO_WOMEN).run()
    assert not app.exception
    assert "needs at least one man and one woman" in texts(app.warning)
    assert "No census pairing exists for the synthetic graph" in texts(app.info)
