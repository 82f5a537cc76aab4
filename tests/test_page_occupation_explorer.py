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
