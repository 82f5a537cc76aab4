"""AppTest of the person view (issue 28): search, a person's B_in with the counterfactual, their triples with
influence, and the links to it from the persons and the triples tables."""

from __future__ import annotations

from pathlib import Path

from kgbias_app.texts import EXPLORER_TABS
from kgbias_app.widgets import PERSON_LINK, person_url
from kgbias_core import persons as person_views
from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embeddings.store import load_model
from tests.conftest import dashboard, page, texts


def _a_woman(store: Path) -> tuple[ModelAnalysis, int]:
    analysis = ModelAnalysis(load_model(store / "tiny-transe"))
    groups = analysis.groups
    return analysis, int(groups.pair_person[groups.pair_female][0])


def test_search_a_person_and_read_their_b_in_and_triples(app_store: Path) -> None:
    analysis, woman = _a_woman(app_store)
    name = analysis.model.entity_names[woman]
    app = page("person").run()
    assert not app.exception
    app.text_input(key="person").set_value(name.split()[0]).run()  # a first name: several persons
    picker = app.selectbox(key="person_pick")
    assert len(picker.options) > 1
    app.text_input(key="person").set_value(name).run()  # the whole name: that one person
    assert not app.exception
    assert app.header[0].value == name
    expected = person_views.person(analysis, name).occupations
    shown = app.dataframe[0].value
    assert list(shown["occupation"]) == list(expected["occupation_name"])
    assert (shown["B_in"] - expected["individual_bias"]).abs().max() < 1e-4
    assert "ψ, gender flipped" in shown.columns
    triples = app.dataframe[1].value
    degree = int(((analysis.model.triples[:, 0] == woman) | (analysis.model.triples[:, 2] == woman)).sum())
    assert len(triples) == degree and "δ_z B_gr" in triples.columns
    assert "Download the person's triples (CSV)" in [b.label for b in app.get("download_button")]
    assert all(b.proto.ignore_rerun for b in app.get("download_button"))  # a click reruns nothing


def test_a_link_opens_the_person_and_tables_link_to_it(app_store: Path) -> None:
    analysis, woman = _a_woman(app_store)
    label = analysis.model.entity_labels[woman]
    app = dashboard()
    app.query_params["person"] = label
    app.switch_page("app_pages/person.py").run()
    assert not app.exception
    assert app.header[0].value == analysis.model.entity_names[woman]
    unknown = page("person").run()
    unknown.text_input(key="person").set_value("zzz-nobody").run()
    assert "No person" in texts(unknown.info)

    explorer = dashboard()
    explorer.query_params["view"] = EXPLORER_TABS[2]
    explorer.query_params["occupation"] = "nurse"
    explorer.switch_page("app_pages/occupation_explorer.py").run()
    assert not explorer.exception
    persons = explorer.dataframe[0].value
    assert persons[PERSON_LINK].iloc[0] == person_url(persons["id"].iloc[0])
    assert persons["B_in"].abs().is_monotonic_decreasing  # the persons who lean most first

    triples = page("influential_triples").run()
    triples.selectbox(key="occupation").set_value("nurse").run()
    table = triples.dataframe[0].value
    linked = table[table["person"] != "none"]
    assert len(linked) and linked[PERSON_LINK].str.startswith("person?person=").all()


def _click(app, chart_key: str, point: dict) -> None:
    """Run ``app`` as the browser does after a click on ``point`` of the chart ``chart_key``: the chart's selection
    travels with the other widgets' states (AppTest offers no setter for a chart's selection, and Streamlit
    refuses it through the session state, so the state the frontend sends, a JSON string, is built here)."""
    import json

    from streamlit.proto.WidgetStates_pb2 import WidgetState

    chart = next(c for c in app.get("plotly_chart") if c.proto.id.endswith(f"-{chart_key}"))
    states = app._tree.get_widget_states()
    selection = {"points": [point], "point_indices": [point["point_index"]], "box": [], "lasso": []}
    states.widgets.append(WidgetState(id=chart.proto.id, string_value=json.dumps({"selection": selection})))
    app._run(states)


def test_a_click_on_a_point_of_the_explorer_scatter_opens_that_persons_view(app_store: Path) -> None:
    """Issue 28: the B_in against B'_in scatter links to the person view by a click, the picker stays."""
    import json

    from streamlit.proto.PlotlyChart_pb2 import PlotlyChart as PlotlyChartProto

    analysis = ModelAnalysis(load_model(app_store / "tiny-transe"))
    app = dashboard()
    app.query_params["view"] = EXPLORER_TABS[1]
    app.query_params["occupation"] = "nurse"
    app.switch_page("app_pages/occupation_explorer.py").run()
    assert not app.exception
    assert app.selectbox(key="scatter_person") is not None  # the keyboard's way is still there
    assert "Click a point to open that person's view" in texts(app.caption)
    chart = next(c for c in app.get("plotly_chart") if c.proto.id.endswith("-individual_scatter"))
    spec = json.loads(chart.proto.spec)
    assert list(chart.proto.selection_mode) == [PlotlyChartProto.SelectionMode.POINTS]  # a click selects a point
    trace = spec["data"][-1]
    label = trace["customdata"][0][0]  # each point carries its person's label
    nurses = {analysis.model.entity_labels[int(p)] for p in analysis.groups.pair_person[
        analysis.groups.pair_occupation == analysis.groups.index("nurse")]}
    assert {row[0] for t in spec["data"] for row in t["customdata"]} <= nurses
    _click(app, "individual_scatter", {"curve_number": len(spec["data"]) - 1, "point_number": 0, "point_index": 0,
                                       "customdata": [label]})
    assert not app.exception
    assert app.header[0].value == analysis.model.entity_names[analysis.model.entity_id(label)]
    assert label in str(app.query_params.get("person"))  # the URL names the person: Back and links work
