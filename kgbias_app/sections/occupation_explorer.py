"""The Occupation explorer's own UI: the headline, the comparison, the subpopulations, the persons' links. The page
(``app_pages/occupation_explorer.py``) calls these."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
import streamlit as st

from kgbias_app import cache, charts, links, texts
from kgbias_app.cache import ModelRef
from kgbias_app.escape import md, md_format
from kgbias_app.widgets import (
    csv_name,
    download,
    largest_occupations,
    occupation_titles,
    person_url,
    show_chart,
    table,
)
from kgbias_core.data.schema import Schema
from kgbias_core.subpopulations import Intersections
from kgbias_core.tables import MIN_GROUP_SIZE

# Texts of this page alone (shared sentences stay in kgbias_app/texts.py).
OTHER_GENDERS_LEFT_OUT = "{n} more with another or no gender value are left out."
ALL_BINARY = "Every person of this occupation has a binary gender value."
COMPARE_TWO = "Pick at least two occupations to compare."
COMPARE_DISTRIBUTIONS = (
    "B_in of each occupation's women and men side by side (box: quartiles; points: outliers, or every person "
    "with the switch above). Occupations whose boxes sit above 0 lean male for most of their persons."
)
NO_ATTRIBUTES = (
    "This graph's schema names no attribute (nationality, ethnicity, religion, …) to split the persons by, so "
    "there are no subpopulations to compare. A user graph names them under [[attributes]] in its schema."
)
INTERSECTIONS_TABLE = (
    "One row per value of {attribute} held by {name}'s persons: B_gr (with its bootstrap 95% interval), B_in "
    "and Fisher's b_p computed among the persons with that value only ({sign}). A person with several values "
    "counts in each; \"no value\" gathers those with none. A subpopulation with fewer than {minimum} men or "
    "{minimum} women shows \"too few persons\" instead of figures: a mean over a handful of persons is noise. "
    "b_p averages over every person of the graph with the value, not only this occupation's. Rows with figures "
    "come first, by |B_gr|: the subpopulations that drive the gap."
)
INTERSECTION_BARS = (
    "B_gr within each subpopulation with enough persons (blue, right: male-leaning; red, left: female-leaning); "
    "whiskers: bootstrap 95% interval over its persons. Bars far apart with intervals that do not overlap mark "
    "subpopulations in which the embedding leans differently."
)
NO_INTERSECTION_BARS = "No subpopulation has {minimum} men and {minimum} women: nothing to chart."
OPEN_A_PERSON = "Open a person of this chart in the person view (largest |B_in| first)"
SEED_BAND_HEADLINE = (
    "This model is one of {n} seeds of family **{family}**: B_gr of this occupation runs from {seed_min} to "
    "{seed_max} over the seeds (std {seed_std}). A lean is stated only where the bootstrap interval and this "
    "seed band both exclude 0."
)
CLICK_A_POINT = "Click a point to open that person's view, or pick a person below (the keyboard's way)."

#: The person view's page script, as the router lists it (dashboard.py): where a click on a person goes.
PERSON_PAGE_SCRIPT = "app_pages/person.py"

# --- occupation explorer: within subpopulations (intersectional) ----------------------------------
#: The figures of an intersection table, in reading order.
SUBPOPULATION_FIGURES = ["group_bias", "group_bias_low", "group_bias_high", "individual_bias_vanilla",
                         "individual_bias_weighted", "fisher_bp"]


@st.fragment
def compare_occupations(model: ModelRef, measures: pd.DataFrame, *, current: str, every_point: bool) -> None:
    """Du's Fig 2 for the occupations picked to compare. A fragment: changing the pick reruns this
    section only, not the explorer above it."""
    chosen = occupations_to_compare(measures, current=current)
    links.publish_fragment()
    if len(chosen) < 2:
        st.info(COMPARE_TWO)
        return
    several = tuple(chosen)
    show_chart(cache.persons_figure(model, several, "compare", every_point), cache.persons_of(model, several),
               caption=COMPARE_DISTRIBUTIONS, file_name=csv_name(model.name, "compare"),
               key="compare_distributions")


def occupations_to_compare(measures: pd.DataFrame, *, current: str, key: str = "compare") -> list[str]:
    """2-6 occupations; by default the current one and the largest ones (four in all)."""
    titles = occupation_titles(measures)
    default = list(dict.fromkeys([current, *largest_occupations(measures, 4)]))[:4]
    # A switch of the page's occupation starts the comparison anew from it (else it kept comparing the old ones).
    follows = f"{key}:current"
    if st.session_state.get(follows, current) != current:
        st.session_state.pop(key, None)
    st.session_state[follows] = current
    return links.multiselect("Occupations to compare (2 to 6)", list(titles), default=default, what="occupation",
                             format_func=titles.__getitem__, max_selections=6, key=key)


def headline(row: pd.Series) -> None:
    """The occupation's headline figures, each with its plain-language sentence, after one line on
    whether the measures agree in direction and why they can differ."""
    line = texts.agreement(row)
    st.markdown(line)
    if line.startswith(texts.MEASURES_DISAGREE.split("{")[0]):
        st.markdown(texts.DISAGREE_ONE_LINE)  # said where the surprise is, in one line
    st.caption(texts.WHY_THEY_DIFFER)
    seed_min, seed_max, n_seeds = texts.seed_band_of(row, "group_bias")
    if seed_min is not None:
        st.info(SEED_BAND_HEADLINE.format(n=n_seeds, family=md(str(row.get("family", ""))),  # the name escaped
                                          seed_min=texts.fmt(seed_min), seed_max=texts.fmt(seed_max),
                                          seed_std=texts.number(row["group_bias_seed_std"])))
    half_width = (row["group_bias_high"] - row["group_bias_low"]) / 2
    b_gr = texts.fmt(row["group_bias"]) + (f" ± {half_width:.3f}" if texts.is_defined(half_width) else "")
    figures = [
        ("B_gr (group bias, 95% CI)", b_gr, "group_bias"),
        ("B_wo (projection)", texts.fmt(row["projection_bias"]), "projection_bias"),
        ("Fisher b_p", texts.fmt(row["fisher_bp"], 4), "fisher_bp"),
        ("B_in vanilla", texts.fmt(row["individual_bias_vanilla"]), "individual_bias_vanilla"),
        ("B_in weighted", texts.fmt(row["individual_bias_weighted"]), "individual_bias_weighted"),
    ]
    columns = st.columns(3)
    with columns[0]:
        st.metric("Persons (men / women)", f"{row['n_male']} / {row['n_female']}")
        extra = int(row["n_other_gender"]) + int(row["n_unknown_gender"])
        st.caption(OTHER_GENDERS_LEFT_OUT.format(n=extra) if extra else ALL_BINARY)
    for i, (label, value, measure) in enumerate(figures, start=1):
        interval = (row[f"{measure}_low"], row[f"{measure}_high"]) if f"{measure}_low" in row else (None, None)
        seed_min, seed_max, n_seeds = texts.seed_band_of(row, measure)
        with columns[i % 3]:
            st.metric(label, value, help=texts.SIGN)
            st.caption(texts.sentence(measure, row[measure], *interval, seed_min=seed_min, seed_max=seed_max,
                                      n_seeds=n_seeds))


def subpopulation_attribute(schema: Schema, *, key: str = "subpopulation_attribute") -> str | None:
    """The schema's attribute whose values split the occupation's persons; None, said in words, when it has none."""
    names = [attribute.name for attribute in schema.attributes]
    if not names:
        st.info(NO_ATTRIBUTES)
        return None
    return links.selectbox("Attribute that defines the subpopulations", names, key=key, what="attribute")


def too_few_as_text(frame: pd.DataFrame) -> pd.DataFrame:
    """An intersection table's figures as text: numbers where the subpopulation has enough persons; for one
    that has too few, its note ("too few persons (n = …)") in the B_gr column and blanks beside it, so that
    no cell of it reads as a number."""
    small = (frame["note"] != "").tolist()
    shown = frame.copy()
    for column in SUBPOPULATION_FIGURES:
        digits = texts.DIGITS.get(column, 3)
        shown[column] = [(note if column == "group_bias" else "") if too_few else texts.number(value, digits)
                         for value, note, too_few in zip(frame[column], frame["note"], small, strict=True)]
    return shown


def subpopulations(found: Intersections, *, file_name: str) -> None:
    """One occupation within the subpopulations of an attribute: the table (too-small ones in words), its
    download, the chart of B_gr per value with intervals, and the permutation test in a sentence."""
    table(too_few_as_text(found.table), ["name", "n_male", "n_female", *SUBPOPULATION_FIGURES], ids=["value"],
          names={"name": found.attribute, "value": "id"})
    st.caption(md_format(INTERSECTIONS_TABLE, attribute=found.attribute, name=found.name, sign=texts.SIGN,
                                                minimum=MIN_GROUP_SIZE))
    download(found.table, file_name, key="subpopulations:csv", label="Download the table (CSV)")
    drawn = found.table[found.table["group_bias"].notna()]
    if drawn.empty:
        st.info(NO_INTERSECTION_BARS.format(minimum=MIN_GROUP_SIZE))
    else:
        show_chart(charts.subpopulation_bars(drawn, attribute=found.attribute), drawn, caption=INTERSECTION_BARS,
                   file_name=file_name.replace(".csv", "-chart.csv"), key="subpopulation_bars")
    st.markdown(texts.comparison_sentence(md(found.name), md(found.attribute), found.comparison, escape=md))


def by_magnitude(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    """``frame`` sorted by |``column``|, largest first (the persons who lean most, either way, on top)."""
    return frame.sort_values(column, key=lambda values: -values.abs(), kind="stable").reset_index(drop=True)


def clicked_person(event: object) -> str | None:
    """The person label of the point clicked in a chart of persons (its ``customdata[0]``,
    :func:`kgbias_app.charts.individual_scatter`); None when no point is selected."""
    selection = event.get("selection") if isinstance(event, Mapping) else None  # no event: the chart's element
    points = selection.get("points", []) if isinstance(selection, Mapping) else []
    labels = [point["customdata"][0] for point in points if point.get("customdata")]
    return str(labels[0]) if labels else None


def open_a_person(persons: pd.DataFrame, *, key: str, event: object = None) -> None:
    """Below a chart of persons: a click on a point (``event``, the chart's selection) opens that person's view;
    else pick one of them (largest |B_in| first) and open it with the button."""
    label = clicked_person(event)
    if label is not None and label in set(persons["person"]):  # only a person of this chart: never a stale label
        st.switch_page(PERSON_PAGE_SCRIPT, query_params={"person": label})
    st.caption(CLICK_A_POINT)
    ordered = by_magnitude(persons, "individual_bias")
    titles = dict(zip(ordered["person"], ordered["name"], strict=True))
    left, right = st.columns([3, 1])
    chosen = left.selectbox(OPEN_A_PERSON, list(titles), format_func=titles.__getitem__, key=key)
    if chosen is not None:
        right.link_button(texts.PERSON_LINK_TEXT, person_url(chosen))
