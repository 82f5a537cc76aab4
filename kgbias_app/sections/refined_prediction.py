"""A removal's refined prediction (issue 25), in the Debiasing lab and under the removal basket: offered under the
Newton step's, computed only when asked (seconds), shown with its estimator and interval, or the one line that says
why it is not offered; and in the lab's run view, judged against the run's retrain as the report judges it."""

from __future__ import annotations

import time

import streamlit as st

from kgbias_app import cache, texts
from kgbias_app.cache import ModelRef
from kgbias_app.escape import md
from kgbias_core import tasks
from kgbias_core.readings import prediction_sentence, verdict_sentence
from kgbias_core.report import WhatIfRun
from kgbias_core.tasks.prediction_audit import NO_REFIT_AUDIT
from kgbias_core.whatif.edits import Edit

REFINE_BUTTON = "Refine the prediction: refit the rows B_gr reads"
REFINE_HELP = (
    "After the Newton step, re-optimises the rows B_gr is read from (the occupation's persons, at most 256 of each "
    "gender, and the occupation) on the objective without the removed triples, every other row frozen, against the "
    "same rows re-optimised with them (Kelpie's post-training), and scales the change by this model's own audit. "
    "Offered on models trained with eight negatives per triple whose rows are at their optimum (refitted with "
    "nothing removed, they move by at most 40% of their length): there its interval covered all 52 retrained "
    "FB15k-237 sets of 17 occupations at a median half-width of 0.20 of the prediction (the step's band: 96% at "
    "0.56), 28 of 29 held-out FB13 sets of 8 occupations at 0.25, and 96% of a synthetic graph's 47 (a band fitted "
    "on that graph alone covered all 52 FB15k-237 sets); with "
    "one negative per triple it lost "
    "to the step. Seconds on one CPU thread: an occupation's first on FB15k-237 took 2.0-5.5 s (Actor the longest), "
    "its next ones 1.5-2.6 s. The scale's refit of the audit's set runs with the audit (an older audit: with the "
    "model's first refined prediction). On an L2 model trained here its band is L2's own: 91% of the 149 retrained "
    "sets of FB15k-237 and two synthetic graphs at a median half-width of 0.49 (89% with each occupation held out "
    "of the fit). On a model imported from another engine with L2 (its negatives re-drawn, "
    "no audit possible) it is offered at once, at a prior scale of 1.45 with a band of its own: 90% of 121 sets "
    "of FB15k-237 and two synthetic graphs trained here and predicted as imports, where the step's band held 21% "
    "(27 of 28 FB15k-237 sets held out)."
)
REFINE_REFUSED = "No refined prediction here: {why}."
REFINE_NEEDS_AUDIT = ("The refined prediction takes its scale from this model's prediction audit (below, one "
                      "masked retrain): once the audit is stored, it can be refined.")
REFINED_CHANGE = "Refined change of B_gr"
REFINED_AFTER = "Refined B_gr after"
REFINED_SECONDS = " Refined in {seconds:.1f} s."
#: The run view: the refined prediction of the run's edit, made from the base as the lab makes it, against the retrain.
RUN_REFINE_BUTTON = "Refine this run's prediction and judge it against the retrain"
RUN_REFINED = "Refined before retraining: change {point}. {sentence} {verdict}"
RUN_UNREFINED = "No refined prediction for this run: {why}."
#: The edits refined in this session, so a rerun keeps showing what was asked for.
_ASKED = "lab_refined"


def _key(model: ModelRef, edit: Edit) -> tuple:
    return _edit_key(model, edit.occupation, edit.removed)


def _edit_key(model: ModelRef, occupation: str, removed: tuple[int, ...]) -> tuple:
    """One removal of one model, however it is reached: the lab's edit or a run's record of it."""
    return model.name, occupation, tuple(removed)


def refined_prediction(model: ModelRef, edit: Edit, *, before: float, key: str = "lab_refine") -> None:
    """The refined prediction of the removal ``edit``, once asked for (the button ``key``), or why it is not
    offered."""
    analysis = cache.analysis(model)
    why = tasks.refit_not_offered(model.path, analysis, edit.occupation)
    if why is not None:
        st.caption(REFINE_NEEDS_AUDIT if why == NO_REFIT_AUDIT else REFINE_REFUSED.format(why=md(why)))
        return
    asked = st.session_state.setdefault(_ASKED, set())
    if _key(model, edit) not in asked:
        if not st.button(REFINE_BUTTON, help=REFINE_HELP, key=key):
            return
        asked.add(_key(model, edit))
    with st.spinner("Refitting the rows B_gr reads…"):
        start = time.perf_counter()
        # the stored refit audit (made once, the first time) and the occupation's unedited refit, which the
        # prediction shares: a model whose rows are not at their optimum is refused here
        scale, why = tasks.refit_offer(model.path, analysis, edit.occupation)
        if why is not None:
            st.caption(REFINE_REFUSED.format(why=md(why)))
            return
        prediction = cache.refined_prediction(model, edit, cache.occupation_spread(model, edit.occupation), scale)
        seconds = time.perf_counter() - start
    columns = st.columns(3)
    columns[1].metric(REFINED_CHANGE, texts.fmt(prediction.point), help=REFINE_HELP)
    columns[2].metric(REFINED_AFTER, texts.fmt(before + prediction.point))
    # our words and numbers: no escape; the seconds of this rerun (0 once cached)
    st.caption(prediction_sentence(prediction, before=before)
               + (REFINED_SECONDS.format(seconds=seconds) if seconds >= 0.05 else ""))


def run_refined(model: ModelRef, run: ModelRef, whatif: WhatIfRun) -> None:
    """Under the run view's step verdict, for a removal run of ``model``: its refined prediction (made from the base,
    as the lab makes it before the retrain) and whether the retrained change fell inside, over the persons the
    prediction holds (the report's words), once asked; at once where this session refined the same edit above; or
    why there is none."""
    removed = tuple(whatif.edit.get("removed") or ())
    if whatif.kind != "remove" or not removed:
        return
    occupation = str(whatif.edit["occupation"])
    why = tasks.refit_not_offered(model.path, cache.analysis(model), occupation)
    if why is not None:
        st.caption(RUN_UNREFINED.format(why=md(why)))
        return
    asked = st.session_state.setdefault(_ASKED, set())
    key = _edit_key(model, occupation, removed)
    if key not in asked:
        if not st.button(RUN_REFINE_BUTTON, help=REFINE_HELP, key="lab_run_refine"):
            return
        asked.add(key)
    with st.spinner("Refitting the rows B_gr reads…"):
        judged = cache.whatif_run(model, run, refined=True)
    refined = judged.refined
    if refined is None:
        st.caption(RUN_UNREFINED.format(why=md(judged.unrefined)))
        return
    # our words and numbers: no escape
    st.caption(RUN_REFINED.format(point=texts.fmt(refined.point), sentence=prediction_sentence(refined),
                                  verdict=verdict_sentence(refined, judged.judged, kind=judged.kind, what="refined")))
