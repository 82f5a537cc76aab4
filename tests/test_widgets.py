"""The widgets' helpers that compute something: occupation titles, file names, attribute options, and
the removal basket and occupation section on a small script (AppTest)."""

from __future__ import annotations

import pandas as pd
from streamlit.testing.v1 import AppTest

from kgbias_app import widgets
from kgbias_app.sections import attributes as attributes_section
from kgbias_app.sections import influential_triples as triples_section
from kgbias_core.data.schema import AttributeRelation, Schema
from tests.conftest import PAGE_TIMEOUT


def test_occupation_titles_are_ordered_by_name_and_show_the_label_only_where_the_name_is_shared() -> None:
    measures = pd.DataFrame({"occupation": ["/m/2", "nurse", "/m/1", "/m/3"],
                             "name": ["actor", "nurse", "Baker", "Actor"]})
    assert widgets.occupation_titles(measures) == {"/m/2": "actor (/m/2)", "/m/3": "Actor (/m/3)", "/m/1": "Baker",
                                                   "nurse": "nurse"}  # issue 28: no Freebase id for a unique name


def test_csv_name_never_holds_a_path_separator_or_a_space() -> None:
    assert widgets.csv_name("fb15k237-transe", "/m/02hrh1q", "persons") == "fb15k237-transe-_m_02hrh1q-persons.csv"
    assert widgets.csv_name("model", "film actor") == "model-film_actor.csv"


def test_attribute_options_offer_gender_the_schema_attributes_then_every_other_relation() -> None:
    schema = Schema(gender_relation="gender", male="m", female="f", occupation_relation="job",
                    attributes=(AttributeRelation(name="citizenship", relation="P27"),))
    options = attributes_section.attribute_options(schema, ("gender", "job", "P27", "born_in"))
    assert options == {"gender": "gender (gender)", "citizenship": "citizenship (P27)", "born_in": "relation born_in"}


def basket_script() -> None:
    import pandas as pd
    import streamlit as st

    from kgbias_app import widgets

    measures = pd.DataFrame({"occupation": ["nurse", "pilot"], "name": ["Nurse", "Pilot"], "n_male": [3, 12],
                             "n_female": [7, 0], "note": ["small group", "no women"]})
    occupation, row, defined = widgets.occupation_section(measures)
    st.write(f"{occupation} {defined}")
    if st.button("Add"):
        triples_section.add_to_basket("m", [5, 2])
        triples_section.add_to_basket("m", [2, 9])
    st.write(f"basket {widgets.basket('m')} {widgets.basket('other')}")


def test_occupation_section_and_basket() -> None:
    app = AppTest.from_function(basket_script, default_timeout=PAGE_TIMEOUT).run()
    assert not app.exception
    assert app.header[0].value == "Pilot"  # the largest occupation first
    assert "Pilot: no women (12 men, 0 women)." in app.warning[0].value
    assert app.markdown[0].value == "pilot False"
    app.selectbox(key="occupation").set_value("nurse").run()
    assert app.markdown[0].value == "nurse True"
    app.button[0].click().run()
    assert app.markdown[1].value == "basket [2, 5, 9] []"


def _title_script() -> None:
    import streamlit as st

    from kgbias_app import widgets
    from kgbias_app.cache import ModelRef

    st.session_state["chart_model"] = ModelRef(name="fb15k237-transe", path="/nowhere", version=1,
                                               dataset="fb15k237", kind="transe", base=None)
    st.text(widgets.chart_title("removal_curve", "ignored. caption", occupation="Screenwriter"))
    st.text(widgets.chart_title("not_listed", "**What it shows.** More words", occupation=None))
    st.text(widgets.readable_name("fb15k237-transe", "Screenwriter", "curve", suffix=".png"))


def test_exported_titles_name_graph_model_and_occupation_and_file_names_are_readable() -> None:
    from streamlit.testing.v1 import AppTest

    from tests.conftest import PAGE_TIMEOUT

    app = AppTest.from_function(_title_script, default_timeout=PAGE_TIMEOUT).run()
    assert not app.exception
    curve, other, name = (t.value for t in app.text)
    assert curve == "B_gr after removing k triples — FB15k-237 · fb15k237-transe — Screenwriter"
    assert other == "What it shows — FB15k-237 · fb15k237-transe"
    assert name == "fb15k237-transe-screenwriter-curve.png"
