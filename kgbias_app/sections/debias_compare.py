"""The Debiasing lab's "Compare" section (issue 29 part 3): the original, Du's what-ifs (IF-REMOVE, Random-REMOVE,
Add) and the embedding-level methods side by side, in the comparison table of
:func:`kgbias_core.whatif.compare.comparison_table` and a chart of the target's B_gr and mean |B_gr| beside MRR.

The table is one job (:func:`kgbias_core.tasks.compare_debiasing_task`: it computes, or reads from the store, each
model's link prediction and top-1 predictions); its result is read from the job registry under the task's key,
which names the models at their current versions, so a retrained or new model asks for a new comparison. The page
(``app_pages/debiasing_lab.py``) calls :func:`compare`.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from kgbias_app import cache, charts, jobs_ui
from kgbias_app.cache import ModelRef
from kgbias_app.escape import md_format
from kgbias_app.widgets import csv_name, errors_shown, occupation_name, show_chart, table
from kgbias_core import tasks
from kgbias_core.jobs import JobState, default_registry
from kgbias_core.whatif.compare import SUMMARY_COLUMNS

# Texts of this section alone (shared sentences stay in kgbias_app/texts.py).
COMPARE_HEADING = "Compare: data edits and embedding-level debiasing"
COMPARE_MODELS = "Models to compare (the original, its what-ifs and its debiased models)"
COMPARE_PICK = "Pick at least one model to compare."
COMPARE_BUTTON = "Compare the {n} model(s) on {name}"
COMPARE_JOB = "Debiasing compared: {n} model(s), {name}"
COMPARE_RUNNING = "The comparison is being computed: its progress is below."
COMPARE_TABLE = (
    "One row per model. B_gr of {name} and mean |B_gr| over every occupation with men and women (Du §3.1, "
    "METHODS §1); b_p of {name} and mean |b_p| (Fisher §3.2, METHODS §6); TLB (gender): Keidar's translational "
    "likelihood bias of the gender relation over every occupation (METHODS §7); DPG, PPG, EOG: Schwertmann's gaps "
    "of the top-1 occupation predictions on the test split, means over the classes (METHODS §8); MRR and Hits@10: "
    "filtered tail prediction on the test split. Cost: training triples removed or added (0 for an embedding-level "
    "method) and the seconds it took to make the model. B_gr and b_p: > 0 = male-leaning; gaps: 0 = equal."
)
COMPARE_CHART = (
    "Left: B_gr of {name} and the mean |B_gr| over every occupation, per model (closer to 0 = less disparity). "
    "Right: MRR, the side effect on link prediction. Hover a bar for the method and its cost."
)
#: Models ticked by default: beyond this many the chart's bars get too thin to read.
DEFAULT_MODELS = 8


def method_of_config(config: dict) -> str:
    """How a model was made, from its config.json (:func:`kgbias_core.whatif.compare.method_of` reads the loaded
    model; the picker must not load every model of the store to title it)."""
    debias = config.get("debias")
    if isinstance(debias, dict):
        return f"{debias.get('method')} w={debias['weight']:g}" if "weight" in debias else str(debias.get("method"))
    edit = config.get("edit")
    return str(edit.get("strategy") or edit.get("kind")) if isinstance(edit, dict) else "original"


def base_of(model: ModelRef) -> ModelRef:
    """The original a what-if or a debiased model was made from (the model itself for an original)."""
    found = cache.catalog()
    debias = cache.config(model).get("debias")
    made_from = model.base or (debias.get("base_model") if isinstance(debias, dict) else None)
    return found.get(str(made_from), model) if made_from else model


def comparable_models(model: ModelRef) -> list[ModelRef]:
    """The original of ``model``, its current what-if runs and its debiased models, in that order."""
    base = base_of(model)
    runs, _ = cache.whatif_runs(base)
    debiased = []
    for other in cache.catalog().values():
        record = cache.config(other).get("debias")
        if isinstance(record, dict) and record.get("base_model") == base.name and other.dataset == base.dataset:
            debiased.append(other)
    return [base, *sorted(runs, key=lambda m: m.name), *sorted(debiased, key=lambda m: m.name)]


def comparison_names(*, target: str, target_name: str) -> dict[str, str]:
    """Display names of the comparison table's columns."""
    return {f"group_bias:{target}": f"B_gr of {target_name}", f"fisher_bp:{target}": f"b_p of {target_name}",
            "mean_abs_group_bias": "mean |B_gr|", "mean_abs_fisher_bp": "mean |b_p|", "tlb_gender": "TLB (gender)",
            "dpg": "DPG", "ppg": "PPG", "eog": "EOG", "mrr": "MRR", "hits@10": "Hits@10",
            "triples_edited": "triples edited", "seconds": "seconds"}


def _finished_table(task: tasks.Task) -> pd.DataFrame | None:
    """The comparison of ``task``'s key if a job computed it and its result is still held; else None."""
    registry = default_registry()
    status = registry.latest(task.key)
    if status is None or status.state is not JobState.DONE or not status.has_result:
        return None
    return registry.result(status.job_id)


def compare(model: ModelRef, occupation: str) -> None:
    """The models to compare (all of them by default), the button that computes the table as a job, the table, its
    CSV and the chart; ``occupation``: the lab's target occupation (its label). A problem is said in one line."""
    st.subheader(COMPARE_HEADING)
    with errors_shown():
        _compare(model, occupation)


def _compare(model: ModelRef, occupation: str) -> None:
    candidates = comparable_models(model)
    titles = {m.name: f"{m.name} · {method_of_config(cache.config(m))}" for m in candidates}
    # The key names the candidates: a new what-if or debiased model starts the pick anew, with it ticked.
    chosen = st.multiselect(COMPARE_MODELS, list(titles), default=list(titles)[:DEFAULT_MODELS],
                            format_func=titles.__getitem__, key=f"compare_models:{'|'.join(titles)}")
    if not chosen:
        st.info(COMPARE_PICK)
        return
    name = occupation_name(model, occupation)
    by_name = {m.name: m for m in candidates}
    task = tasks.compare_debiasing_task([by_name[n].path for n in chosen], occupations=[occupation])
    frame = _finished_table(task)
    if frame is None:
        if jobs_ui.is_running(task):
            st.caption(COMPARE_RUNNING)
        elif st.button(COMPARE_BUTTON.format(n=len(chosen), name=name), key="compare_button"):
            status = default_registry().latest(task.key)
            jobs_ui.submit(COMPARE_JOB.format(n=len(chosen), name=name), task, group="compare",
                           again=status is not None and status.state is JobState.DONE)  # its result was evicted
            st.rerun()
        jobs_ui.progress_panel(jobs_ui.session_tasks("compare"), key="compare")
        return
    # The table's per-target columns carry the occupation's label, as the lab's occupation is given.
    columns = ["model", "method", f"group_bias:{occupation}", "mean_abs_group_bias", f"fisher_bp:{occupation}",
               *[c for c in SUMMARY_COLUMNS if c != "mean_abs_group_bias"]]
    table(frame, columns, names=comparison_names(target=occupation, target_name=name), digits=4, key="compare_table")
    st.caption(md_format(COMPARE_TABLE, name=name))
    show_chart(charts.debiasing_comparison_chart(frame, target=occupation, target_name=name), frame,
               caption=md_format(COMPARE_CHART, name=name), key="debias_compare",
               file_name=csv_name(model.name, "debiasing-compared"))
