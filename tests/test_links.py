"""Links to a view (issue 12): every page keeps its widgets in the URL, and a fresh session opened on
that URL shows the same view; unknown values in a link get a warning and the default."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from kgbias_app import reruns
from kgbias_app.escape import md
from kgbias_app.sections.influential_triples import TOP_TRIPLES
from kgbias_app.texts import EXPLORER_TABS, LINK_UNKNOWN
from tests.conftest import dashboard, texts

#: Per page: a change a person makes, and how to read the changed widget back (key, its value).
Change = Callable[[AppTest], None]
CHANGES: dict[str, tuple[Change, str, object]] = {
    "overview": (lambda app: app.number_input(key="min_group_size").set_value(3), "min_group_size", 3),
    "occupation_explorer": (lambda app: app.selectbox(key="occupation").set_value("engineer"), "occupation",
                            "engineer"),
    "influential_triples": (lambda app: app.slider(key="top_k").set_value(7), "top_k", 7),
    "attributes": (lambda app: app.selectbox(key="attribute").set_value("nationality"), "attribute", "nationality"),
    "model_comparison": (lambda app: app.slider(key="min_count").set_value(3), "min_count", 3),
    "debiasing_lab": (lambda app: app.radio(key="lab_strategy").set_value("random"), "lab_strategy", "random"),
    "validation": (lambda app: app.multiselect(key="val_kinds").set_value(["top"]), "val_kinds", ["top"]),
    "findings": (lambda app: app.selectbox(key="occupation").set_value("engineer"), "occupation", "engineer"),
}


def opened(page: str, params: dict[str, object] | None = None) -> AppTest:
    """A fresh session of the dashboard on ``page``, its URL holding ``params``."""
    app = dashboard()
    for key, value in (params or {}).items():
        app.query_params[key] = value
    app.switch_page(f"app_pages/{page}.py").run()
    assert not app.exception, page
    return app


def url(app: AppTest) -> dict[str, list[str]]:
    """The app's query parameters, each as its list of values."""
    return {k: list(v) if isinstance(v, list) else [v] for k, v in app.query_params.items()}


@pytest.mark.parametrize("page", list(CHANGES))
def test_a_pages_url_restores_its_view_in_a_fresh_session(page: str, writable_store: Path) -> None:
    change, key, value = CHANGES[page]
    app = opened(page)
    assert url(app)["graph"] == ["synthetic"] and url(app)["model"] == ["tiny-transe"]
    change(app)
    app.run()
    assert not app.exception
    link = url(app)
    expected = [str(v) for v in value] if isinstance(value, list) else [str(value)]
    assert link[key] == expected  # the change is in the URL at once

    again = opened(page, link)
    assert again.session_state[key] == value
    # The same view, the same link (plus the choices of sections that appeared since: a background
    # job of the first session, such as the relation audit, may have finished).
    assert {k: v for k, v in url(again).items() if k in link} == link
    assert not again.warning or LINK_UNKNOWN[:20] not in texts(again.warning)


def test_an_unknown_occupation_or_model_in_a_link_is_named_and_the_default_shown(app_store: Path) -> None:
    app = opened("occupation_explorer", {"occupation": "no_such_job", "model": "gone-model"})
    warnings = texts(app.warning)
    assert LINK_UNKNOWN.format(what="occupation", value=md("no_such_job")) in warnings
    assert LINK_UNKNOWN.format(what="model", value="gone-model") in warnings
    assert app.session_state["model"] == "tiny-transe"
    assert app.header[0].value == "Actor"  # the default: the occupation with the most persons
    assert url(app)["occupation"] == ["actor"]  # and the link now names what is shown


def test_what_a_link_refused_is_still_said_after_a_rerun_that_a_job_asked_for(app_store: Path) -> None:
    """A job that ends during a link's first run asks the router for a rerun (:mod:`kgbias_app.reruns`): that run
    leaves the URL to the rerun, which applies it again and names the refused value again (the CI run of
    2026-12-07 lost the warning: the first run wrote the URL, the rerun saw nothing to apply)."""
    app = dashboard()
    app.query_params["occupation"] = "no_such_job"
    app.session_state[reruns.ASKED_KEY] = True  # as the progress panel asks when a job ended before it was drawn
    app.switch_page("app_pages/occupation_explorer.py").run()
    assert not app.exception
    assert reruns.ASKED_KEY not in app.session_state  # the rerun was made
    assert LINK_UNKNOWN.format(what="occupation", value=md("no_such_job")) in texts(app.warning)
    assert url(app)["occupation"] == ["actor"]


def test_a_link_may_name_an_option_by_its_title_and_numbers_out_of_range_are_refused(app_store: Path) -> None:
    app = opened("influential_triples", {"occupation": "Engineer (engineer)", "top_k": "1000"})
    assert app.session_state["occupation"] == "engineer"
    assert LINK_UNKNOWN.format(what="k", value="1000") in texts(app.warning)
    assert app.slider(key="top_k").value == TOP_TRIPLES


def test_back_restores_the_previous_view(app_store: Path) -> None:
    """Back: the browser puts the previous URL back and reruns; the page takes its values from it."""
    app = opened("occupation_explorer")
    before = url(app)
    app.selectbox(key="occupation").set_value("engineer").run()
    assert url(app)["occupation"] == ["engineer"]
    app.query_params.clear()
    for key, value in before.items():  # what the browser does on Back
        app.query_params[key] = value
    app.run()
    assert app.session_state["occupation"] == before["occupation"][0]
    assert app.header[0].value == "Actor"


def test_the_sidebar_shows_the_link_to_the_view(app_store: Path) -> None:
    app = opened("influential_triples")
    app.slider(key="top_k").set_value(7).run()
    link = next(c.value for c in app.code if "top_k=7" in c.value)
    assert link.startswith("/influential_triples?") and "occupation=actor" in link


def test_the_open_tab_is_part_of_the_link(app_store: Path) -> None:
    app = opened("occupation_explorer", {"view": EXPLORER_TABS[3]})
    assert "compare_distributions:csv" in {b.key for b in app.get("download_button")}
    assert url(app)["view"] == [EXPLORER_TABS[3]]
    unknown = opened("occupation_explorer", {"view": "Nope"})
    assert LINK_UNKNOWN.format(what="tab", value="Nope") in texts(unknown.warning)


def test_a_link_with_more_values_than_a_picker_allows_is_refused(app_store: Path) -> None:
    seven = ["actor", "dancer", "engineer", "footballer", "nurse", "singer", "politician"]
    app = opened("occupation_explorer", {"view": EXPLORER_TABS[3], "compare": seven})
    assert LINK_UNKNOWN.format(what="occupation", value=md(", ".join(seven))) in texts(app.warning)
    assert len(app.multiselect(key="compare").value) == 4  # the default comparison


# --- issue 28: plain names, the lab's own state, the comparison that follows the occupation -----------
def test_a_link_may_name_an_occupation_by_its_plain_name_in_any_case(app_store: Path) -> None:
    app = opened("occupation_explorer", {"occupation": "film director"})
    assert app.session_state["occupation"] == "film_director"
    assert not app.warning or LINK_UNKNOWN[:20] not in texts(app.warning)
    assert app.header[0].value == "Film director"


def test_picker_titles_carry_no_label_where_the_name_is_unique(app_store: Path) -> None:
    app = opened("occupation_explorer")
    titles = app.selectbox(key="occupation").options
    assert "Film director" in titles and not any("(" in title for title in titles)


def test_the_lab_keeps_its_edit_and_its_own_occupation_across_pages(writable_store: Path) -> None:
    app = opened("debiasing_lab")
    app.radio(key="lab_strategy").set_value("random").run()
    app.number_input(key="lab_k").set_value(200).run()
    lab_occupation = app.session_state["lab_occupation"]
    app.switch_page("app_pages/occupation_explorer.py").run()
    app.selectbox(key="occupation").set_value("engineer").run()
    assert lab_occupation != "engineer"
    app.switch_page("app_pages/debiasing_lab.py").run()
    assert not app.exception
    assert app.radio(key="lab_strategy").value == "random"
    assert app.number_input(key="lab_k").value == 200
    assert app.session_state["lab_occupation"] == lab_occupation  # not the explorer's


def test_the_comparison_follows_a_switch_of_occupation(app_store: Path) -> None:
    app = opened("occupation_explorer", {"view": EXPLORER_TABS[3], "occupation": "nurse"})
    assert app.multiselect(key="compare").value[0] == "nurse"
    app.selectbox(key="occupation").set_value("engineer").run()
    assert not app.exception
    assert app.multiselect(key="compare").value[0] == "engineer"
