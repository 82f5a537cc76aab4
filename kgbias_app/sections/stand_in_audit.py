"""An imported model's stand-in audit in the Debiasing lab (issue 25): offered with its estimate where the import's
distance has a band for it, never started unasked; once stored, one sentence saying what it measured and what it
scales (:mod:`kgbias_core.tasks.stand_in_audit`)."""

from __future__ import annotations

import streamlit as st

from kgbias_app import cache, jobs_ui, texts
from kgbias_app.cache import ModelRef
from kgbias_app.escape import md_format
from kgbias_core import tasks
from kgbias_core.analysis import ModelAnalysis
from kgbias_core.influence.prediction import STAND_IN_BANDS

STAND_IN_BUTTON = "Audit this import through a stand-in (a model trained here on its graph, one retrain)"
STAND_IN_HELP = (
    "No retrain here can audit a model trained by another engine, and how far a retrain moves B_gr beside this "
    "import's Newton step depends on the graph. A stand-in measures it: kgbias's default training of this graph with "
    "the import's distance (seed 1), predicted as this import is predicted (its negatives re-drawn), the top 16% of "
    "the audit occupation's moving triples removed and retrained once. Its ratio retrained / step then scales this "
    "import's removals, with a band fitted for it. On FB15k-237 and two synthetic graphs trained here and predicted "
    "as imports, that band held 101 of 112 retrained sets at a median half-width of 1.08 of the point (FB15k-237 15 "
    "of 16 with its band fitted on the other graphs); the prior scale it replaces (0.44) held as many there: the "
    "stand-in is for a graph unlike those (FB13's stand-in gave 0.34). The stand-in is not kept; its training and "
    "retrain are the estimate."
)
STAND_IN_SENTENCE = (
    "Stand-in audit: a model trained here on this graph (seed {seed}), predicted as this import is, removing the "
    "top {k} of the {moving} triples that move {name}'s B_gr: step {predicted}, retrained {retrained}, ratio {ratio}. "
    "This import's removals are scaled by {scale}."
)
STAND_IN_JOB = "{name}: stand-in audit"


def stand_in_audit(model: ModelRef, analysis: ModelAnalysis, background: list) -> None:
    """The stand-in audit of an imported TransE whose distance has a stand-in band (``background``: the lab's panel
    of jobs running): its sentence once stored, else the offer. Nothing on any other model."""
    info, config = analysis.model.info, analysis.model.config
    if (not info.get("imported_from") or info.get("untrained") or config.model != "transe"
            or config.distance not in STAND_IN_BANDS):
        return
    audit = tasks.saved_stand_in_audit(model.path)
    if audit is not None and len(audit):
        row = audit.iloc[0]
        ratio = cache.step_ratio(model)
        st.caption(md_format(
            STAND_IN_SENTENCE, seed=int(row["seed"]), k=int(row["k"]), moving=int(row["moving"]),
            name=str(row["name"]), predicted=texts.fmt(row["predicted"]), retrained=texts.fmt(row["retrained"]),
            ratio=texts.fmt(row["ratio"]), scale="1 (no ratio)" if ratio is None else f"{ratio.value:.2f}"))
        return
    jobs_ui.offer_job(tasks.stand_in_audit_task(model.path), background, label=STAND_IN_BUTTON, help=STAND_IN_HELP,
                      seconds=tasks.stand_in_audit_seconds(model.path),
                      job=STAND_IN_JOB.format(name=model.name))
