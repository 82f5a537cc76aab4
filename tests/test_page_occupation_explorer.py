"""AppTest of the Occupation explorer: switching occupation, the comparison, an occupation without women."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import NO_WOMEN, metric, page, texts


def test_explorer_switching_occupation_changes_the_figures(app_store: Path) -> None:
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


def test_explorer_comparison_needs_two_occupations(app_store: Path) -> None:
    app = page("occupation_explorer").run()
    app.multiselect(key="compare").set_value(["nurse"]).run()
    assert not app.exception
    assert "at least two" in texts(app.info)
    assert len(app.get("plotly_chart")) == 2


def test_no_women_warns_on_the_explorer(app_store: Path) -> None:
    app = page("occupation_explorer").run()
    app.selectbox(key="occupation").set_value(NO_WOMEN).run()
    assert not app.exception
    assert "no women" in texts(app.warning)
    assert metric(app, "B_gr") == "undefined"


def test_a_sentence_whose_interval_passes_through_zero_says_no_clear_lean(app_store: Path) -> None:
    app = page("occupation_explorer").run()
    app.selectbox(key="occupation").set_value("actor").run()  # B_gr +0.001, its interval about -0.28 to +0.30
    assert not app.exception
    captions = [c.value for c in app.caption]
    b_gr = next(c for c in captions if "B_gr" not in c and ("TransE error" in c or "No clear lean" in c))
    assert b_gr.startswith("No clear lean (interval includes 0)") and "male" not in b_gr
    assert app.markdown[0].value.startswith("**The measures disagree in direction:**")
    assert "B_gr shows no clear lean" in app.markdown[0].value
    app.selectbox(key="occupation").set_value("politician").run()  # interval +0.11 to +1.29: a direction
    assert "the embedding leans male (95% interval" in texts(app.caption)


def test_the_persons_table_shows_display_names_with_the_id_last(app_store: Path) -> None:
    app = page("occupation_explorer").run()
    assert list(app.dataframe[0].value.columns) == ["name", "gender", "degree", "B_in", "B'_in", "B_in − graph mean",
                                                  "id"]


def test_every_person_as_a_point_on_request(app_store: Path) -> None:
    app = page("occupation_explorer").run()
    app.toggle(key="every_point").set_value(True).run()
    assert not app.exception
    assert len(app.get("plotly_chart")) == 3
    assert "sample" not in texts(app.caption)
