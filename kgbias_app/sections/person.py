"""The person view's body: search, the person's occupations with B_in, B'_in and the counterfactual, their
training triples with influence (issue 28). The page (``app_pages/person.py``) only calls :func:`person_view`."""

from __future__ import annotations

import streamlit as st

from kgbias_app import cache, links, widgets
from kgbias_app.cache import ModelRef
from kgbias_app.escape import md, md_format
from kgbias_core import persons
from kgbias_core.errors import KGBiasError

# Texts of this page alone (shared sentences stay in kgbias_app/texts.py).
PERSON_SEARCH = "Search a person by name or id"
PERSON_SEARCH_HELP = "Part of a name finds every person whose name contains it; a link may give ?person=<id or name>."
PERSON_NONE_FOUND = "No person's name or id contains “{query}”."
PERSON_PICK = "Persons found ({n}{more})"
PERSON_SUMMARY = "{gender}, {degree:,} training triples; {n} occupation(s) in the training graph."
PERSON_OCCUPATIONS = (
    "Per occupation: Du's B_in (the change of the TransE score ψ(s, r_p, o) that influence predicts when the "
    "person's gender fact flips, Corollary 4) and Fisher's B'_in (METHODS §5), both > 0 = male-leaning. ψ: the "
    "score now (lower = more plausible); ψ, gender flipped: ψ + B_in for a man made a woman, ψ − B_in for a woman "
    "made a man (an influence prediction, not a retrain). A person without a binary gender has no B_in."
)
PERSON_TRIPLES = (
    "The person's training triples in words, each with δ_z B_gr: how removing it would move {name}'s B_gr "
    "(> 0: removing it makes the occupation more male-leaning), largest first."
)
PERSON_NO_OCCUPATION = "This person holds no occupation in the training graph: no B_in, and no influence to show."

#: The persons table of the occupation's persons, in reading order.
OCCUPATION_COLUMNS = ["occupation_name", "individual_bias", "fisher_individual", "score", "score_flipped"]
OCCUPATION_NAMES = {"occupation_name": "occupation", "score": "ψ now", "score_flipped": "ψ, gender flipped"}


def chosen_person(model: ModelRef) -> str | None:
    """The person the search names: its text resolves to one person (id or unique name), else one of its matches."""
    analysis = cache.analysis(model)
    query = links.text_input(PERSON_SEARCH, key="person", what="person", help=PERSON_SEARCH_HELP)
    if not query:
        return None
    try:
        return analysis.model.entity_labels[persons.resolve_person(analysis, query)]
    except KGBiasError:
        pass  # not one person by id or name: list what the text finds
    found = cache.search_persons(model, query)
    if found.empty:
        st.info(md_format(PERSON_NONE_FOUND, query=query))
        return None
    more = f", the first {persons.SEARCH_LIMIT}" if len(found) >= persons.SEARCH_LIMIT else ""
    titles = dict(zip(found["person"], found["name"] + " · " + found["gender"] + " · degree "
                      + found["degree"].astype(str), strict=True))
    return st.selectbox(PERSON_PICK.format(n=len(found), more=more), list(titles),
                        format_func=titles.__getitem__, key="person_pick")


def person_view(model: ModelRef) -> None:
    """The person chosen in the search, one level below an occupation."""
    label = chosen_person(model)
    if label is None:
        return
    view = cache.person(model, label)
    st.header(md(view.name))
    st.caption(md_format(PERSON_SUMMARY, gender=view.gender, degree=view.degree, n=len(view.occupations))
               + f" Id: {md(view.label)}.")
    if view.occupations.empty:
        st.info(PERSON_NO_OCCUPATION)
    else:
        st.subheader("B_in, B'_in and the counterfactual, per occupation")
        widgets.table(view.occupations, OCCUPATION_COLUMNS, ids=["occupation"], names=OCCUPATION_NAMES, digits=4)
        st.caption(PERSON_OCCUPATIONS)
    st.subheader("Training triples")
    occupation = None
    if not view.occupations.empty:
        names = dict(zip(view.occupations["occupation"], view.occupations["occupation_name"], strict=True))
        occupation = st.selectbox("Influence on the B_gr of", list(names), format_func=names.__getitem__,
                                  key="person_occupation")
    triples = cache.person_triples(model, view.entity, occupation)
    widgets.table(widgets.with_person_links(triples), ["in words", "influence", "person_name", widgets.PERSON_LINK],
                  ids=["relation", "triple"], digits=5, key="person_triples")
    if occupation is not None:
        st.caption(md_format(PERSON_TRIPLES, name=names[occupation]))
    widgets.download(triples, widgets.csv_name(model.name, view.label, "triples"), key="person_triples:csv",
                     label="Download the person's triples (CSV)")
