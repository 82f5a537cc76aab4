"""The Influential triples page's own UI: filters, the selection, the removal basket. The page
(``app_pages/influential_triples.py``) calls these."""

from __future__ import annotations

import pandas as pd
import streamlit as st
import torch

from kgbias_app import cache, links, texts
from kgbias_app.cache import ModelRef
from kgbias_app.escape import md
from kgbias_app.sections.refined_prediction import refined_prediction
from kgbias_app.widgets import (
    BASKET_KEY,
    PERSON_LINK,
    basket,
    csv_name,
    download,
    offered_prediction,
    table,
    unaudited_caption,
    with_person_links,
)
from kgbias_core.embeddings.objective import negatives_count
from kgbias_core.errors import MeasureError
from kgbias_core.readings import old_estimate_sentence, prediction_sentence
from kgbias_core.tables import (
    filter_triples,
    relation_words,
    triples_in_words,
)
from kgbias_core.whatif.edits import remove_edit

# Texts of this page alone (shared sentences stay in kgbias_app/texts.py).
#: The badge beside influence computed from re-drawn negatives (a model kgbias did not train).
APPROXIMATE_INFLUENCE = (
    "Influence {label}: this model has no frozen negatives (it was trained elsewhere and imported), so {k} "
    "negative(s) per training triple were re-drawn, as kgbias's training draws them. Which triples lead, and their "
    "δ_z, depend on that draw; the stability beside this says how much. Checked on a FB15k-237 model whose true "
    "negatives are known, re-drawn ones found about 6% of its true top 1% (README): read these triples as "
    "examples of what can move B_gr, not as the ones that do."
)
STABILITY_METRIC = "Top-1% stability across 3 negative seeds"
STABILITY_CAPTION = (
    "Spearman's ρ of δ_z over the union of each seed's top 1% moving triples ({n} triples), for each pair of "
    "the negative seeds {seeds}: lowest {low}, mean {mean}; the seeds' top sets overlap (Jaccard) at least "
    "{overlap}. Near 1: the re-draw barely changes which triples lead and in what order."
)
#: Under the basket's predicted change when influence is approximate.
APPROXIMATE_CHANGE = "Predicted from influence {label}."
#: A TransE trained or imported with an unsquared distance: δ_z takes that distance's gradient but keeps the squared-L2
#: curvature (influence/closed_form.py), so it is first order in more than the edit (docs/results/default_models.md).
APPROXIMATE_DISTANCE = (
    "Influence is approximate for this model's {distance} distance: Du's closed form is exact for squared L2, the "
    "distance kgbias trains by default. For {distance} it uses the distance's gradient with the squared-L2 "
    "curvature. Against masked retrains on three FB15k-237 occupations its r was 0.988-0.997 under L1 and "
    "0.995-0.999 under pseudo-Huber, against 0.998-1.000 under squared L2 (docs/results/default_models.md)."
)
DIRECTIONS = {
    "raises": "Removing these raises B_gr (towards male-leaning)",
    "lowers": "Removing these lowers B_gr (towards female-leaning)",
}
BASKET_HELP = (
    "One Newton step of the objective without the basket's triples (every term's curvature counted positive, |H|), "
    "B_gr computed exactly at the moved embedding (issue 25)."
)
EMPTY_BASKET_HERE = "The basket is empty: select triples in the tables above and add them."
BASKET_CHANGE = (
    "Removing these {n} triple(s) and retraining would move {name}'s B_gr from {before} by about {change} "
    "({sign})."
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
    for direction, title in DIRECTIONS.items():
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
    """Where influence is approximate, visibly: for an unsquared distance (L1, L2), and where it rests on re-drawn
    negatives (an imported model), with the occupation's top-1% stability across 3 negative seeds. Nothing for a
    squared-L2 model with frozen negatives."""
    analysis = cache.analysis(model)
    distance = analysis.model.config.distance
    if distance in texts.DISTANCE_NAMES:
        st.warning(APPROXIMATE_DISTANCE.format(distance=texts.DISTANCE_NAMES[distance]), icon="⚠️")
    negatives = analysis.negatives
    if negatives.exact:
        return
    badge, number = st.columns([3, 1])
    k = negatives_count(negatives.negatives, analysis.model.triples.shape[0])  # the import's count (8 since 12-06)
    badge.warning(APPROXIMATE_INFLUENCE.format(label=negatives.label, k=k), icon="⚠️")
    stability = cache.redraw_stability(model, occupation)
    number.metric(STABILITY_METRIC, f"ρ ≥ {texts.number(stability.spearman_min, 2)}")
    st.caption(STABILITY_CAPTION.format(
        n=stability.n_union, seeds=", ".join(map(str, stability.seeds)), low=f"{stability.spearman_min:.2f}",
        mean=f"{stability.spearman_mean:.2f}", overlap=f"{stability.overlap_min:.0%}"))


def removal_basket(model: ModelRef, occupation: str, row: pd.Series) -> None:
    """The basket's triples in words, its predicted change of the occupation's B_gr, download and Empty."""
    chosen = basket(model.name)
    if not chosen:
        st.info(EMPTY_BASKET_HERE)
        return
    frame = with_person_links(triples_in_words(cache.triples_frame(model, tuple(chosen))))
    table(frame, TRIPLE_COLUMNS, ids=TRIPLE_IDS, names=TRIPLE_NAMES)
    edit = remove_edit(cache.analysis(model).model, occupation, torch.tensor(chosen, dtype=torch.long),
                       strategy=f"basket k={len(chosen)}")
    try:
        prediction = offered_prediction(model, edit, key="basket_predict")
    except MeasureError as exc:  # a prediction this model cannot have (an Add on an L1/L2 import): its line says why
        prediction = None
        st.info(md(str(exc)))
    if prediction is not None:
        st.metric(texts.PREDICTED_CHANGE, texts.fmt(prediction.point), help=BASKET_HELP)
        st.caption(BASKET_CHANGE.format(n=len(chosen), name=md(row["name"]), before=texts.fmt(row["group_bias"]),
                                        change=texts.fmt(prediction.point), sign=texts.SIGN))
        st.caption(prediction_sentence(prediction))  # our words and numbers: no escape
        unaudited_caption(model)
    st.caption(old_estimate_sentence(cache.predicted_removal(model, occupation, chosen)))
    if prediction is not None:
        refined_prediction(model, edit, before=float(row["group_bias"]), key="basket_refine")
    negatives = cache.analysis(model).negatives
    if not negatives.exact:
        st.caption(APPROXIMATE_CHANGE.format(label=negatives.label))
    download(frame, csv_name(model.name, "basket"), key="basket:csv", label="Download the basket (CSV)")
    if st.button("Empty the basket"):
        st.session_state.setdefault(BASKET_KEY, {}).pop(model.name, None)
        st.rerun()
