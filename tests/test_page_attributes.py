"""AppTest of the Attributes page (Fisher et al.): gender and one-vs-rest, the minimum count, the chart
against its tables."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import page, texts


def values(data: list | dict) -> list:
    """A figure's array as a list (Plotly writes numpy arrays as base64 "bdata" with their dtype)."""
    if isinstance(data, dict):
        return np.frombuffer(base64.b64decode(data["bdata"]), dtype=data["dtype"]).tolist()
    return list(data)


def chart_bars(app, key: str) -> dict[str, float]:
    """The bars of a horizontal bar chart on the page: y title -> x, failing on a title drawn twice."""
    chart = next(c for c in app.get("plotly_chart") if key in c.proto.id)
    (bars,) = json.loads(chart.proto.spec)["data"]
    titles = values(bars["y"])
    assert len(titles) == len(set(titles)), "a profession drawn twice stacks into one longer bar"
    return dict(zip(titles, values(bars["x"]), strict=True))


def test_attributes_gender_and_one_vs_rest(app_store: Path) -> None:
    app = page("attributes").run()
    assert not app.exception
    assert [s.value for s in app.subheader][:2] == ["Most associated with male", "Most associated with female"]
    gender_table = app.dataframe[0].value
    app.selectbox(key="attribute").set_value("nationality").run()
    assert not app.exception
    assert app.selectbox(key="value_b").value == "__rest__"
    headings = [s.value for s in app.subheader]
    assert "Most associated with the other values" in headings or "Least associated with" in headings[1]
    assert not app.dataframe[0].value.equals(gender_table)


def test_attributes_chart_draws_exactly_the_rows_of_its_tables(app_store: Path) -> None:
    app = page("attributes").run()
    app.selectbox(key="attribute").set_value("nationality").run()
    app.slider(key="min_count").set_value(0).run()
    assert not app.exception
    left, right = (frame.value for frame in app.dataframe[:2])
    rows = {name: b_p for table in (left, right) for name, b_p in zip(table["profession"], table["b_p"], strict=True)}
    bars = chart_bars(app, "fisher_bars")
    assert len(bars) == len(left) + len(right)  # one bar per row of the two tables
    assert bars == pytest.approx(rows, abs=1e-4)  # a b_p that rounds to zero is shown as 0


def test_attributes_tables_show_display_names_with_the_id_last(app_store: Path) -> None:
    app = page("attributes").run()
    assert list(app.dataframe[0].value.columns) == ["profession", "b_p", "# male", "# female", "id"]


def test_an_empty_side_says_no_profession_is_associated_and_small_ones_are_listed_apart(app_store: Path) -> None:
    app = page("attributes").run()
    app.slider(key="min_count").set_value(64).run()  # actor and footballer are left, both with b_p > 0
    assert not app.exception
    assert "No profession is associated with female" in texts(app.info)
    (table,) = (frame.value for frame in app.dataframe if "b_p" in frame.value.columns)
    assert set(table["profession"]) == {"Actor", "Footballer"}
    assert len(chart_bars(app, "fisher_bars")) == len(table)
    (apart,) = [e for e in app.expander if e.label.startswith("Too few")]
    assert apart.label == "Too few persons to rank (fewer than 64 male- plus female-persons): 18"


def test_attributes_too_high_minimum_count_warns(app_store: Path) -> None:
    app = page("attributes").run()
    app.slider(key="min_count").set_value(500).run()
    assert not app.exception
    assert "lower the minimum count" in texts(app.warning)
