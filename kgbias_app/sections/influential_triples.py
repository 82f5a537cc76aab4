"""The Influential triples page's own UI: filters, the selection, the removal basket. The page
(``app_pages/influential_triples.py``) calls these."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from kgbias_app import cache, links, texts
from kgbias_app.cache import ModelRef
from kgbias_app.escape import md
from kgbias_app.widgets import (
    BASKET_KEY,
    PERSON_LINK,
    basket,
    csv_name,
    download,
    table,
    with_person_links,
)
from kgbias_core.tables import (
    filter_triples,
    relation_words,
    triples_in_words,
)

#: Default number of triples listed per direction.
TOP_TRIPLES = 20


GENDERS = ["male", "female", "other", "unknown", "none"]


#: The columns of a triples table, in reading order; the relation's label and the triple's index are ids.
TRIPLE_COLUMNS = ["in words", "person_name", "person_gender", "person_degree", PERSON_LINK]


TRIPLE_IDS = ["relation", "triple"]


TRIPLE_NAMES = {"relation": "relation id"}


def triple_filters(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of a triples table whose relation and person's gender are picked (none picked = all)."""
    left, right = st.columns(2)
    relations = links.multiselect("Relations (none = all)", sorted(frame["relation"].unique()), key="relations",
                                  what="relation", format_func=lambda r: f"{relation_words(r)} ({r})", container=left)
    genders = links.multiselect("Person's gender (none = all)", GENDERS, key="genders", what="gender", container=right)
    return filter_triples(frame, relations=relations, genders=genders)


def selected_triples(extremes: pd.DataFrame) -> list[int]:
    """Each direction's triples as a table with selectable rows; -> the selected triples' indices."""
    selected: list[int] = []
    for direction, title in texts.DIRECTIONS.items():
        st.subheader(title)
        part = with_person_links(extremes[extremes["direction"] == direction])
        event = table(part, ["in words", "influence", "person_name", "person_gender", "person_degree", PERSON_LINK],
                      ids=TRIPLE_IDS,
                      names=TRIPLE_NAMES, digits=4, on_select="rerun", selection_mode="multi-row",
                      key=f"triples:{direction}")
        selected += part["triple"].iloc[event.selection.rows].tolist()
    return selected


def add_to_basket(model_name: str, indices: list[int]) -> None:
    baskets = st.session_state.setdefault(BASKET_KEY, {})
    baskets[model_name] = sorted(set(baskets.get(model_name, [])) | {int(i) for i in indices})


def negatives_badge(model: ModelRef, occupation: str) -> None:
    """Where influence rests on re-drawn negatives (an imported model): the approximate label, visibly, and
    the occupation's top-1% stability across 3 negative seeds. Nothing for a model with frozen negatives."""
    negatives = cache.analysis(model).negatives
    if negatives.exact:
        return
    badge, number = st.columns([3, 1])
    badge.warning(texts.APPROXIMATE_INFLUENCE.format(label=negatives.label), icon="⚠️")
    stability = cache.redraw_stability(model, occupation)
    number.metric(texts.STABILITY_METRIC, f"ρ ≥ {texts.number(stability.spearman_min, 2)}")
    st.caption(texts.STABILITY_CAPTION.format(
        n=stability.n_union, seeds=", ".join(map(str, stability.seeds)), low=f"{stability.spearman_min:.2f}",
        mean=f"{stability.spearman_mean:.2f}", overlap=f"{stability.overlap_min:.0%}"))


def removal_basket(model: ModelRef, occupation: str, row: pd.Series) -> None:
    """The basket's triples in words, its predicted change of the occupation's B_gr, download and Empty."""
    chosen = basket(model.name)
    if not chosen:
        st.info(texts.EMPTY_BASKET_HERE)
        return
    frame = with_person_links(triples_in_words(cache.triples_frame(model, tuple(chosen))))
    table(frame, TRIPLE_COLUMNS, ids=TRIPLE_IDS, names=TRIPLE_NAMES)
    change = cache.predicted_removal(model, occupation, chosen)
    st.metric(texts.PREDICTED_CHANGE, texts.predicted_value(change),
              help="Sum of δ_z B_gr over the basket, times the calibrated scale (METHODS §4).")
    if change.calibrated:
        st.caption(texts.BASKET_CHANGE.format(n=len(chosen), name=md(row["name"]), before=texts.fmt(row["group_bias"]),
                                              change=texts.fmt(change.point), sign=texts.SIGN))
    st.caption(texts.predicted_range(change))
    negatives = cache.analysis(model).negatives
    if not negatives.exact:
        st.caption(texts.APPROXIMATE_CHANGE.format(label=negatives.label))
    download(frame, csv_name(model.name, "basket"), key="basket:csv", label="Download the basket (CSV)")
    if st.button("Empty the basket"):
        st.session_state.setdefault(BASKET_KEY, {}).pop(model.name, None)
        st.rerun()
