"""The Debiasing lab's "Debias the embedding" panel (issue 29 part 2): Bourli & Pitoura's projection and the
fairness-regularised retrain, each saved as an ordinary model of the store beside Du's data edits.

Both go through the job queue (:func:`kgbias_core.tasks.debias_embedding_task`): the regulariser is a full retrain
(progress and Cancel in the panel), the projection takes a second, and one path for both keeps a model from being
written twice by two sessions. The page (``app_pages/debiasing_lab.py``) calls :func:`debias_the_embedding`.
"""

from __future__ import annotations

import hashlib
import json

import streamlit as st

from kgbias_app import cache, jobs_ui, texts
from kgbias_app.cache import ModelRef
from kgbias_app.escape import md_format
from kgbias_app.widgets import errors_shown, occupation_name, occupation_titles
from kgbias_core import tasks
from kgbias_core.whatif.projection import DIRECTIONS

# Texts of this section alone (shared sentences stay in kgbias_app/texts.py).
DEBIAS_HEADING = "Debias the embedding"
DEBIAS_INTRO = (
    "Instead of editing the training triples, change the embedding itself: the result is a new model of the "
    "store, measured like any other and compared below with the data edits."
)
METHODS = {
    "project": "Project the gender direction out (Bourli & Pitoura 2020; instant, no training)",
    "regularise": "Retrain with a fairness term (w/2)·Σ B_gr² in the objective (a full retrain)",
}
DIRECTION_TITLES = {
    "values": "m − f: the male value minus the female value (sets B_wo to 0)",
    "persons": "mean man − mean woman over the graph's persons",
}
OCCUPATIONS_LABEL = "Occupations to debias (none picked: all of them)"
PERSONS_LABEL = "Project the persons too"
WEIGHT_LABEL = "Weight w of the fairness term (summed-loss units, as the L2 coefficient)"
WEIGHT_HELP = "0 would be plain TransE; on the synthetic graph w = 10 cut mean |B_gr| about fourfold, w = 100 more."
BUTTONS = {"project": "Project and save the model", "regularise": "Retrain with the fairness term"}
DEBIAS_JOB = "{name}: {method}"
DEBIAS_IN_STORE = "This debiased model is already in the store as `{name}`: pick it in the sidebar, or compare below."
DEBIAS_RUNNING = "`{name}` is being made: its progress is below."
NO_RETRAIN_WHY = (
    "A debiased model is an ordinary model for every measure and for link prediction, but influence, what-ifs, "
    "noise bands and calibration refuse it: they linearise or retrain TransE's plain objective (METHODS §2), and "
    "this model does not minimise it (the projection moved it off the optimum; the regulariser minimised another "
    "objective). Plan and verify data edits on its base model."
)
ALREADY_DEBIASED = "`{model}` is itself debiased at the embedding level ({method}, from `{base}`)."
TRANSE_ONLY = "Embedding-level debiasing acts on TransE's B_gr: pick a TransE model in the sidebar."


def debiased_name(base: str, *, method: str, weight: float, direction: str, persons: bool,
                  occupations: list[str], scope: str) -> str:
    """``<base>--<method>-<scope>-<hash>``, as a what-if's name: the same request always gets the same name.
    ``scope``: the readable occupations ("all-occupations", one name, or "3-occupations")."""
    params = {"method": method, "occupations": sorted(occupations)}
    params |= {"weight": weight} if method == "regularise" else {"direction": direction, "persons": persons}
    digest = hashlib.sha1(json.dumps(params, sort_keys=True).encode("utf-8")).hexdigest()[:8]
    what = f"regularise-w{weight:g}" if method == "regularise" else "project"
    return f"{base}--{tasks.slug(what)}-{tasks.slug(scope)[:40].rstrip('-')}-{digest}"


def _scope(model: ModelRef, occupations: list[str]) -> str:
    if not occupations:
        return "all-occupations"
    return occupation_name(model, occupations[0]) if len(occupations) == 1 else f"{len(occupations)}-occupations"


def debias_the_embedding(model: ModelRef) -> None:
    """Method, occupations and its settings; a button that submits the job; the panel of this session's debiasing
    jobs; why influence and what-ifs refuse the result. A problem is said in one line, the page goes on."""
    st.subheader(DEBIAS_HEADING)
    with errors_shown():
        _panel(model)


def _panel(model: ModelRef) -> None:
    record = cache.config(model).get("debias")
    if isinstance(record, dict):
        st.info(md_format(ALREADY_DEBIASED, model=model.name, method=str(record.get("method")),
                          base=str(record.get("base_model"))))
        st.caption(NO_RETRAIN_WHY)
        return
    if model.kind != "transe":
        st.info(TRANSE_ONLY)
        return
    st.caption(DEBIAS_INTRO)
    method = st.radio("Method", list(METHODS), format_func=METHODS.__getitem__, key="debias_method")
    titles = occupation_titles(cache.measures(model))
    occupations = st.multiselect(OCCUPATIONS_LABEL, list(titles), format_func=titles.__getitem__,
                                 key="debias_occupations")
    weight, direction, persons = 10.0, "values", False
    if method == "project":
        direction = st.radio("Gender direction", list(DIRECTIONS), format_func=DIRECTION_TITLES.__getitem__,
                             key="debias_direction", horizontal=True)
        persons = st.checkbox(PERSONS_LABEL, key="debias_persons")
    else:
        weight = st.number_input(WEIGHT_LABEL, min_value=0.001, value=10.0, step=1.0, format="%g",
                                 key="debias_weight", help=WEIGHT_HELP)
    name = debiased_name(model.name, method=method, weight=weight, direction=direction, persons=persons,
                         occupations=occupations, scope=_scope(model, occupations))
    task = tasks.debias_embedding_task(base=model.path, method=method, out=model.beside(name),
                                       occupations=occupations or None, weight=weight, persons=persons,
                                       direction=direction)
    if name in cache.catalog():
        st.info(md_format(DEBIAS_IN_STORE, name=name))
    elif jobs_ui.is_running(task):
        st.caption(md_format(DEBIAS_RUNNING, name=name))
    else:
        seconds = tasks.model_retrain_seconds(model.path) if method == "regularise" else None
        if st.button(texts.with_estimate(BUTTONS[method], seconds), key="debias_button"):
            jobs_ui.submit(DEBIAS_JOB.format(name=name, method=method), task, group="debias", estimate=seconds)
            st.rerun()
    jobs_ui.progress_panel(jobs_ui.session_tasks("debias"), key="debias")
    st.caption(NO_RETRAIN_WHY)

