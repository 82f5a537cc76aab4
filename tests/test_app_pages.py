"""AppTest per dashboard page on the tiny model: loads, reacts to widgets, shows errors as text."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from kgbias_core import tasks
from tests.conftest import TINY_GRAPH, TINY_TRAINING

REPO = Path(__file__).resolve().parents[1]
TIMEOUT = 60
NO_WOMEN = "pilot"  # the tiny graph's pilots are all men (checked in test_no_women_*)


def page(name: str) -> AppTest:
    return AppTest.from_file(str(REPO / "pages" / f"{name}.py"), default_timeout=TIMEOUT)


@pytest.fixture
def store(tiny_store: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("KGBIAS_MODEL_DIR", str(tiny_store))
    monkeypatch.setenv("KGBIAS_DATA_DIR", str(tmp_path / "no-data"))  # only the synthetic graph
    return tiny_store


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


def metric(app: AppTest, label: str) -> str:
    return next(m.value for m in app.metric if m.label.startswith(label))


def test_overview_shows_the_graph_and_every_chart(store: Path) -> None:
    app = page("overview").run()
    assert not app.exception
    assert metric(app, "Persons with a gender") == "600"
    assert len(app.get("plotly_chart")) == 2
    assert len(app.get("download_button")) == 3
    assert "tiny-transe" in texts(app.caption)


def test_overview_without_any_model_trains_one_in_the_background(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, tiny_graph
) -> None:
    empty = tmp_path / "store"
    monkeypatch.setenv("KGBIAS_MODEL_DIR", str(empty))
    monkeypatch.setenv("KGBIAS_DATA_DIR", str(tmp_path / "no-data"))
    monkeypatch.setattr(tasks, "load_graph", lambda dataset, data_dir, **_: tiny_graph)
    monkeypatch.setattr(tasks, "train_config", lambda dataset: TINY_TRAINING)
    app = page("overview").run()
    assert not app.exception
    assert "Training a first model" in texts(app.info)
    deadline = time.monotonic() + 30
    while not (empty / "synthetic-transe" / "config.json").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    app.run()
    assert not app.exception
    assert metric(app, "Persons with a gender") == str(TINY_GRAPH.n_persons)


def test_explorer_switching_occupation_changes_the_figures(store: Path) -> None:
    app = page("occupation_explorer").run()
    assert not app.exception
    app.selectbox(key="occupation").set_value("nurse").run()
    assert app.header[0].value == "Nurse"
    nurse = metric(app, "B_gr")
    assert len(app.get("plotly_chart")) == 3  # distribution, B_in vs B'_in, comparison
    app.selectbox(key="occupation").set_value("footballer").run()
    assert not app.exception
    assert app.header[0].value == "Footballer"
    assert metric(app, "B_gr") != nurse
    assert "small group" in texts(app.warning)  # footballer has fewer than 5 women


def test_explorer_comparison_needs_two_occupations(store: Path) -> None:
    app = page("occupation_explorer").run()
    app.multiselect(key="compare").set_value(["nurse"]).run()
    assert not app.exception
    assert "at least two" in texts(app.info)
    assert len(app.get("plotly_chart")) == 2


def test_no_women_warns_on_the_explorer(store: Path) -> None:
    app = page("occupation_explorer").run()
    app.selectbox(key="occupation").set_value(NO_WOMEN).run()
    assert not app.exception
    assert "no women" in texts(app.warning)
    assert metric(app, "B_gr") == "undefined"


def test_influential_triples_and_the_removal_basket(store: Path) -> None:
    app = page("influential_triples").run()
    app.selectbox(key="occupation").set_value("nurse").run()
    assert not app.exception
    assert [s.value for s in app.subheader][:2] == [
        "Removing these raises B_gr (towards male-leaning)",
        "Removing these lowers B_gr (towards female-leaning)",
    ]
    assert "empty" in texts(app.info)
    table = app.dataframe[0].value
    assert len(table) == 20 and (table["influence"] > 0).all()
    app.session_state["removal_basket"] = {"tiny-transe": table["triple"].head(3).tolist()}
    app.run()
    assert not app.exception
    change = metric(app, "Predicted change of B_gr (ranking only / uncalibrated)")
    assert change.startswith("+")  # removing triples that each raise B_gr raises it
    app.multiselect(key="genders").set_value(["female"]).run()
    assert set(app.dataframe[0].value["person_gender"]) <= {"female"}


def test_no_women_warns_on_the_influence_page(store: Path) -> None:
    app = page("influential_triples").run()
    app.selectbox(key="occupation").set_value(NO_WOMEN).run()
    assert not app.exception
    assert "needs at least one man and one woman" in texts(app.warning)


def test_attributes_gender_and_one_vs_rest(store: Path) -> None:
    app = page("attributes").run()
    assert not app.exception
    assert [s.value for s in app.subheader][:2] == ["Most associated with male", "Most associated with female"]
    gender_table = app.dataframe[0].value
    app.selectbox(key="attribute").set_value("nationality").run()
    assert not app.exception
    assert app.selectbox(key="value_b:nationality").value == "__rest__"
    headings = [s.value for s in app.subheader]
    assert "Most associated with the other values" in headings or "Least associated with" in headings[1]
    assert not app.dataframe[0].value.equals(gender_table)


def test_attributes_too_high_minimum_count_warns(store: Path) -> None:
    app = page("attributes").run()
    app.slider(key="min_count").set_value(500).run()
    assert not app.exception
    assert "lower the minimum count" in texts(app.warning)


def test_broken_model_shows_an_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, store: Path) -> None:
    broken = tmp_path / "store"
    (broken / "broken").mkdir(parents=True)
    for file in (store / "tiny-transe").iterdir():
        (broken / "broken" / file.name).write_bytes(file.read_bytes())
    (broken / "broken" / "entities.tsv").write_text("id\tlabel\tname\n0\tx\n", encoding="utf-8")
    monkeypatch.setenv("KGBIAS_MODEL_DIR", str(broken))
    app = page("overview").run()
    assert not app.exception
    assert "entities.tsv" in texts(app.error)


def test_dashboard_routes_to_every_page(store: Path) -> None:
    app = AppTest.from_file(str(REPO / "dashboard.py"), default_timeout=TIMEOUT).run()
    assert not app.exception
    assert app.title[0].value == "Overview"
    app.switch_page("pages/occupation_explorer.py").run()
    assert not app.exception
    assert app.title[0].value == "Occupation explorer"
