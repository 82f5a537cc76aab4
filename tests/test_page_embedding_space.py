"""AppTest of the embedding space page (issue 28): every point drawn with WebGL, axis titles, hover names, the
shown points downloadable, a selection mapped back to its rows."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from kgbias_app.sections import embedding_space as section
from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embedding_space import embedding_space
from kgbias_core.embeddings.store import load_model
from tests.conftest import page, texts


def test_every_person_and_occupation_is_drawn_with_axis_titles_and_names(app_store: Path) -> None:
    app = page("embedding_space").run()
    assert not app.exception
    points, _ = embedding_space(ModelAnalysis(load_model(app_store / "tiny-transe")))
    chart = json.loads(app.get("plotly_chart")[0].proto.spec)
    traces = chart["data"]
    assert {t["type"] for t in traces} == {"scattergl"}
    assert sum(len(t["text"]) for t in traces) == len(points)  # all points, none sampled
    assert set().union(*(t["text"] for t in traces)) == set(points["name"])
    assert "gender direction" in chart["layout"]["xaxis"]["title"]["text"]
    assert "principal component" in chart["layout"]["yaxis"]["title"]["text"]
    assert "Every point is drawn" in texts(app.caption)
    labels = [b.label for b in app.get("download_button")]
    assert f"Download the {len(points):,} shown points (CSV)" in labels
    # A click saves the file and reruns nothing: a rerun drops the deferred file the browser is asking for.
    assert all(b.proto.ignore_rerun and b.proto.deferred_file_id for b in app.get("download_button"))


def test_a_selection_maps_back_to_its_points_and_a_large_space_is_sampled_and_says_so() -> None:
    points = pd.DataFrame({"kind": ["male", "female", "occupation", "male"], "name": list("abcd"),
                           "gender_axis": [1.0, -1.0, 0.0, 2.0], "second_axis": [0.0, 0.0, 1.0, 1.0]},
                          index=[10, 11, 12, 13])
    rows = [points.index[points["kind"] == kind] for kind in ("male", "female", "occupation")]

    class Event:
        selection = {"points": [{"curve_number": 0, "point_index": 1}, {"curve_number": 2, "point_index": 0}]}

    assert section.selected(Event(), rows) == [13, 12]
    big = pd.DataFrame({"kind": ["male"] * (section.MAX_POINTS + 10) + ["occupation"] * 3})
    shown, sampled = section.shown_points(big)
    assert sampled and len(shown) == section.MAX_POINTS and (shown["kind"] == "occupation").sum() == 3
