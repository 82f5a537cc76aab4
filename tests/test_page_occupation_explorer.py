"""AppTest of the Occupation explorer: switching occupation, the comparison, an occupation without women,
the measures within subpopulations."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from kgbias_app.texts import EXPLORER_TABS
from kgbias_core.embeddings.store import save_model
from tests.conftest import NO_WOMEN, metric, page, texts, use_store

DISTRIBUTION, SCATTER, PERSONS, COMPARE, WITHIN = EXPLORER_TABS


def opened(app: AppTest, tab: str) -> AppTest:
    """``app`` with the explorer's tab ``tab`` open (as a click on it does)."""
    app.session_state["view"] = tab
    return app.run()


def test_explorer_switching_occupation_changes_the_figures(app_store: Path) -> None:
    app = page("occupation_explorer").run()
    assert not app.exception
    app.selectbox(key="occupation").set_value("nurse").run()
    assert app.header[0].value == "Nurse"
    nurse = metric(app, "B_gr")
    assert len(app.get("plotly_chart")) == 1  # the open tab's chart only: the distribution
    app.selectbox(key="occupation").set_value("footballer").run()
    assert not app.exception
    assert app.header[0].value == "Footballer"
    assert metric(app, "B_gr") != nurse
    assert "small group" in texts(app.warning)  # footballer has fewer than 5 women


def test_only_the_open_tab_is_drawn(app_store: Path) -> None:
    app = page("occupation_explorer").run()
    assert [c.proto.spec for c in app.get("plotly_chart")] and len(app.get("plotly_chart")) == 1
    assert "individual_distribution:csv" in {b.key for b in app.get("download_button")}
    opened(app, COMPARE)
    assert not app.exception
    keys = {b.key for b in app.get("download_button")}
    assert "compare_distributions:csv" in keys and "individual_distribution:csv" not in keys
    assert len(app.get("plotly_chart")) == 1


def test_explorer_comparison_needs_two_occupations(app_store: Path) -> None:
    app = opened(page("occupation_explorer").run(), COMPARE)
    app.multiselect(key="compare").set_value(["nurse"]).run()
    assert not app.exception
    assert "at least two" in texts(app.info)
    assert len(app.get("plotly_chart")) == 0


def test_no_women_warns_on_the_explorer(app_store: Path) -> None:
    app = page("occupation_explorer").run()
    app.selectbox(key="occupation").set_value(NO_WOMEN).run()
    assert not app.exception
    assert "no women" in texts(app.warning)
    assert metric(app, "B_gr") == "undefined"


def test_a_sentence_whose_interval_passes_through_zero_says_no_clear_lean(app_store: Path) -> None:
    # The occupations are chosen from the model's own measures, not named: which B_gr interval reaches 0 is
    # a trained figure that another CPU need not reproduce bit for bit (issue 24).
    from kgbias_core.analysis import ModelAnalysis
    from kgbias_core.embeddings.store import load_model
    from kgbias_core.tables import measures_table

    measures = measures_table(ModelAnalysis(load_model(app_store / "tiny-transe")))
    sized = measures[(measures["n_male"] >= 5) & (measures["n_female"] >= 5)]
    through_zero = sized[(sized["group_bias_low"] < 0) & (sized["group_bias_high"] > 0)]
    male = sized[sized["group_bias_low"] > 0]
    assert len(through_zero) and len(male), "the tiny model needs both kinds of occupation"
    app = page("occupation_explorer").run()
    app.selectbox(key="occupation").set_value(through_zero["occupation"].iloc[0]).run()
    assert not app.exception
    captions = [c.value for c in app.caption]
    b_gr = next(c for c in captions if "B_gr" not in c and ("TransE error" in c or "No clear lean" in c))
    assert b_gr.startswith("No clear lean (interval includes 0)") and "male" not in b_gr
    parts = app.markdown[0].value.split(":**", 1)[1].rstrip(".").split("; ")
    assert "B_gr" in next(part for part in parts if "no clear lean" in part).split(" show")[0]
    app.selectbox(key="occupation").set_value(male["occupation"].iloc[0]).run()
    assert "the embedding leans male (95% interval" in texts(app.caption)


def test_the_persons_table_shows_display_names_with_the_id_last(app_store: Path) -> None:
    app = opened(page("occupation_explorer").run(), PERSONS)
    assert list(app.dataframe[0].value.columns) == ["name", "gender", "degree", "B_in", "B'_in", "B_in − graph mean",
                                                  "person view", "id"]


def test_every_person_as_a_point_on_request(app_store: Path) -> None:
    app = opened(page("occupation_explorer").run(), SCATTER)
    app.toggle(key="every_point").set_value(True).run()
    assert not app.exception
    assert len(app.get("plotly_chart")) == 1
    assert "sample" not in texts(app.caption)


def test_subpopulations_show_too_few_persons_in_words_beside_real_figures(app_store: Path) -> None:
    app = opened(page("occupation_explorer").run(), WITHIN)  # actor: Aland and Dunmore have 5 + 5, the others not
    assert not app.exception
    assert WITHIN == "Within subpopulations (intersectional)"
    assert app.selectbox(key="subpopulation_attribute").value == "nationality"
    shown = app.dataframe[-1].value.set_index("nationality")
    assert list(shown.columns[:3]) == ["men", "women", "B_gr"] and shown.columns[-1] == "id"
    figures = shown.columns[2:-1]
    small = shown["B_gr"].str.startswith("too few persons (n = ")
    assert small.any() and (~small).any()
    assert shown.loc["Elbonia", "B_gr"] == "too few persons (n = 14 male, 4 female; fewer than 5 of one gender)"
    assert (shown.loc[small, figures[1:]] == "").all().all()  # no number beside the note
    assert all(float(v) == float(v) for v in shown.loc[~small, figures].to_numpy().ravel())  # numbers as text
    assert len(app.get("plotly_chart")) == 1  # the bars of B_gr per defined subpopulation
    assert "Shuffling the nationality values among persons of the same gender 2,000 times gives p =" in (
        texts(app.markdown))
    app.selectbox(key="subpopulation_attribute").set_value("birthplace").run()  # 40 cities: none has 5 + 5
    assert not app.exception
    assert "No subpopulation has 5 men and 5 women" in texts(app.info)
    assert "No test of the difference: fewer than two birthplace values" in texts(app.markdown)


@pytest.fixture
def store_without_attributes(tiny_model, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The tiny model under a schema that names no attribute, as the app's only model."""
    save_model(replace(tiny_model, schema=replace(tiny_model.schema, attributes=())), tmp_path / "bare")
    return use_store(tmp_path / "bare", monkeypatch, tmp_path)


def test_subpopulations_say_so_when_the_schema_names_no_attribute(store_without_attributes: Path) -> None:
    app = opened(page("occupation_explorer").run(), WITHIN)
    assert not app.exception
    assert "names no attribute" in texts(app.info)
    assert len(app.get("plotly_chart")) == 0


def test_explorer_offers_the_report_and_each_chart_as_png_and_svg(app_store: Path) -> None:
    app = page("occupation_explorer").run()
    assert not app.exception
    buttons = {button.key: button.label for button in app.get("download_button")}
    assert buttons["report"] == "Download report"
    assert buttons["individual_distribution:png"] == "Save the chart (PNG)"
    assert buttons["individual_distribution:svg"] == "Save the chart (SVG)"
    assert all(button.proto.ignore_rerun for button in app.get("download_button"))  # a click reruns nothing
