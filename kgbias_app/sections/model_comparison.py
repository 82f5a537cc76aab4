"""The Model comparison page's own UI: the models, their training, the audit, fairness, accuracy. The page
(``app_pages/model_comparison.py``) calls these."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
import streamlit as st

from kgbias_app import cache, charts, jobs_ui, links, texts
from kgbias_app.cache import ModelRef
from kgbias_app.escape import md
from kgbias_app.widgets import (
    MIN_PERSONS,
    csv_name,
    fisher_names,
    show_chart,
    table,
    too_few,
)
from kgbias_core import tasks
from kgbias_core.accuracy_disparity import DISPARITIES
from kgbias_core.data.datasets import has_dataset, resolve_data_dir
from kgbias_core.embeddings.config import MODELS
from kgbias_core.embeddings.store import default_store
from kgbias_core.evaluation.link_prediction import load_link_prediction
from kgbias_core.jobs import FINISHED_STATES, default_registry
from kgbias_core.measures.fisher import most_moved
from kgbias_core.measures.prediction_fairness import DEGENERATE_SHARE, FairnessReport, default_min_count
from kgbias_core.measures.relation_audit import (
    audit_params,
    default_min_persons,
    relation_values,
    value_table,
)
from kgbias_core.tables import (
    MIN_GROUP_SIZE,
    entity_name,
    relation_words,
    split_small,
)

# Texts of this page alone (shared sentences stay in kgbias_app/texts.py).
ALSO_IN_STORE = "Also in the store for this graph: {names}."
TRAIN_ONLY_BUILT_IN = "Other models can be trained only on the built-in graphs (synthetic, FB15k-237)."
TRAIN_MODELS_HELP = (
    "Same graph, split and training config as the default model; only the model differs. FB15k-237 takes "
    "minutes per model."
)
VALUE_TABLE = (
    "One row per tail value of {relation}, one-vs-rest: n_persons have the value, n_rest have another value "
    "of the relation only; 'undefined' = skipped (too few persons) or no class defined for both sides. The "
    "relation's number above is the mean of its defined rows."
)
VALUE_CHART = (
    "The rows of the table as bars, one panel per measure (each with its own scale): the values that drive "
    "the relation's bias stand out."
)
TOP_PROFESSIONS = (
    "The professions whose plausibility moves most when persons are nudged towards '{value}' and away from "
    "the other values (Fisher's b_p, > 0 = associated with the value; #: persons of the profession with the "
    "value / with another value of the relation). Over every profession with at least {minimum} persons "
    "holding the relation (the others are listed apart) and every person with the relation, unlike TLB, "
    "which averages over the k classified ones."
)
MIN_COUNT_DEFAULT = (
    "Default {default}: the paper's 100 scaled to this model's {n_facts:,} occupation test facts (7.6% of "
    "them, between 2 and 100; 100 on FB15k-237). Occupations below the minimum are pooled as OTHER."
)
DEGENERATE_PREDICTOR = (
    "{model} predicts one answer, {name}, for {share:.0%} of the {n:,} test facts (more than {threshold:.0%}): "
    "a degenerate predictor. Its gaps compare how often women and men get that one answer, not how fairly it "
    "tells occupations apart; read them with care, next to its link prediction above."
)
ACCURACY_DISPARITY = (
    "One point per model of this graph: base models, every what-if (debiasing) run and every debiased model. "
    "y: filtered MRR of link prediction on the test split, heads and tails pooled. x, the disparity you pick: "
    "Du's mean |B_gr| over the "
    "occupations with at least {minimum} men and {minimum} women (the embedding's distances, TransE only), or a "
    "fairness gap of the model's top-1 occupation predictions on the test split (Schwertmann et al.; any model): "
    "EOG, the gap between men and women in how often their true occupation is predicted (recall, Eq. 3), "
    "DPG (selection rate, Eq. 1) or PPG (precision, Eq. 2), each the mean over the occupations with enough test "
    "facts. Left is fairer, up is more accurate: a debiasing edit that costs accuracy moves left and down. {missing}"
)
ACCURACY_AXIS = "Disparity on the x axis"
ACCURACY_MISSING = "{n} model(s) have no link prediction yet and are not drawn: {names}."
ACCURACY_COMPUTE = "Compute the missing link predictions ({n} model(s))"

#: Professions listed per model for one tail value.
TOP_MOVED = 5


# --- model comparison ---------------------------------------------------------------------------
def models_to_compare(models: list[ModelRef], *, current: str) -> list[ModelRef]:
    """Models to compare: all of the graph's by default (the sidebar's one first if there are many).

    A model trained meanwhile joins the comparison by itself.
    """
    names = [m.name for m in models]
    state, seen = st.session_state, st.session_state.get("compare_seen")
    if "compare_models" in state and seen is not None:
        kept = [n for n in state["compare_models"] if n in names]
        state["compare_models"] = kept + [n for n in names if n not in seen]
    elif "compare_models" not in state:
        state["compare_models"] = list(dict.fromkeys([current, *names]))[:6] if current in names else names[:6]
    state["compare_seen"] = names
    chosen = links.multiselect("Models to compare", names, key="compare_models", what="model")
    return [m for m in models if m.name in chosen]


def training_panel(dataset: str, models: list[ModelRef], pending: list[tasks.Task[Any]]) -> None:
    """Which of the four model kinds the graph has; train the missing ones (their tasks appended to ``pending``)."""
    registry, store, data_dir = default_registry(), default_store(), resolve_data_dir()
    present = {m.name for m in models}
    rows, missing, trainings = [], [], {}
    for kind in MODELS:
        name = tasks.model_name(dataset, kind)
        trainings[kind] = tasks.train_task(dataset, out=store / name, data_dir=data_dir, overrides={"model": kind})
        status = registry.latest(trainings[kind].key)  # any session's: one training per model
        state = status.state if status else None
        if name in present:
            rows.append((kind, name, "cached"))
        elif state is not None and state not in FINISHED_STATES:
            rows.append((kind, name, f"training ({state})"))
            pending.append(trainings[kind])
        else:
            rows.append((kind, name, "not trained" if state is None else f"not trained (last job {state})"))
            missing.append(kind)
    others = [m.name for m in models if m.name not in {tasks.model_name(dataset, k) for k in MODELS}]
    st.dataframe(pd.DataFrame(rows, columns=["model", "name in the store", "status"]), hide_index=True)
    if others:
        st.caption(ALSO_IN_STORE.format(names=md(", ".join(others))))
    if not missing:
        return
    if not has_dataset(dataset, data_dir):  # only a built-in graph can be loaded again to train on
        st.caption(TRAIN_ONLY_BUILT_IN)
        return
    chosen = st.multiselect("Models to train", missing, default=missing, key="train_kinds")
    if st.button("Train in the background", disabled=not chosen, key="train_models", help=TRAIN_MODELS_HELP):
        for kind in chosen:
            # again: the model is missing, so a finished training of it is out of date.
            jobs_ui.submit(tasks.model_name(dataset, kind), trainings[kind], again=True,
                           estimate=tasks.training_seconds(dataset, data_dir, overrides={"model": kind}))
            pending.append(trainings[kind])


def audit_controls(n_triples: int) -> dict[str, Any]:
    """Classifier, k and minimum persons of Keidar et al.'s audit -> its cache parameters."""
    left, middle, right = st.columns(3)
    kind = links.selectbox("Occupation classifier", list(texts.CLASSIFIERS), format_func=texts.CLASSIFIERS.__getitem__,
                           key="audit_classifier", what="classifier", container=left)
    k = links.number(middle.slider, "k most common professions (+ OTHER)", 2, 20, 5, key="audit_k", what="k")
    min_persons = links.number(right.number_input, "Skip tail values with fewer persons than", 1, 1000,
                               default_min_persons(n_triples), key="audit_min_persons", what="minimum")
    return audit_params(k=k, kind=kind, min_persons=int(min_persons))


def relation_drill_down(audits: dict[str, pd.DataFrame], models: list[ModelRef], *, relations: list[str],
                        dataset: str) -> None:
    """One relation's tail values in each model's audit (table and chart), and the professions that
    one value moves most in each model (Keidar Table 3)."""
    relation = links.selectbox("Relation", relations, key="audit_relation", format_func=relation_words, what="relation")
    values = value_table(audits, relation)
    table(values, list(values.columns), ids=["value"])
    st.caption(VALUE_TABLE.format(relation=md(relation)))
    rows = relation_values(audits, relation)
    show_chart(charts.value_chart(rows, relation), rows, caption=VALUE_CHART,
               file_name=csv_name(dataset, relation, "values"), key="value_chart")
    labels = dict(zip(values["value"], values["value_name"], strict=True))
    value = links.selectbox("Most biased professions for the value (TLB, Keidar Table 3)", list(labels),
                            format_func=labels.__getitem__, key="audit_value", what="value")
    small = pd.DataFrame()
    for column, model in zip(st.columns(len(models)), models, strict=True):
        every = cache.fisher_table(model, relation, value, None, 0)
        kept, small = split_small(every, size=every["n_a"] + every["n_b"], minimum=MIN_PERSONS)
        with column:
            st.markdown(f"**{md(model.name)}**")
            table(most_moved(kept, k=TOP_MOVED), ["name", "bias", "n_a", "n_b"], ids=["label"], digits=4,
                  names=fisher_names(labels[value], texts.REST_NAME))
    st.caption(TOP_PROFESSIONS.format(value=md(labels[value]), minimum=MIN_PERSONS))
    # The counts are the graph's, the same under every model: one list of the small professions.
    too_few(small, ["name", "n_a", "n_b"], ids=["label"], names=fisher_names(labels[value], texts.REST_NAME),
            rule=texts.TOO_FEW_PROFESSIONS.format(minimum=MIN_PERSONS, a=labels[value], b=texts.REST_NAME))


def audit_table(wide: pd.DataFrame) -> None:
    """The relation audit, one row per relation in words, its label in the last column."""
    shown = wide.assign(relation_words=wide["relation"].map(relation_words))
    table(shown, ["relation_words", *wide.columns.drop("relation")], ids=["relation"],
          names={"relation": "relation id"})


def degenerate_warnings(reports: Mapping[str, FairnessReport], models: list[ModelRef]) -> None:
    """A warning per model whose top-1 predictions are one answer for most facts (``FairnessReport.degenerate``)."""
    for model in models:
        report = reports[model.name]
        if report.degenerate:
            st.warning(DEGENERATE_PREDICTOR.format(
                model=model.name, name=entity_name(cache.analysis(model), report.top_prediction),
                share=report.top_prediction_share, n=report.n_facts, threshold=DEGENERATE_SHARE))


def fairness_min_count(n_facts: int) -> int:
    """Test facts an occupation needs to be a class of its own (the default scales with the test set)."""
    default = default_min_count(n_facts)
    min_count = links.number(st.slider, "Minimum test facts for an occupation to be a class of its own", 1, 500,
                             default, key="min_count", what="minimum count")
    st.caption(MIN_COUNT_DEFAULT.format(default=default, n_facts=n_facts))
    return min_count


def accuracy_disparity(model: ModelRef, pending: list) -> None:
    """MRR against mean |B_gr| or a fairness gap (the reader picks) for every model of the graph (base, what-if
    runs, debiased models); a button computes the missing link predictions as jobs."""

    everyone = cache.graph_models(model.dataset)
    minimum = MIN_GROUP_SIZE
    missing = [m for m in everyone if load_link_prediction(m.path) is None]
    frame = cache.accuracy_disparity(tuple(everyone), minimum, tuple(m.name for m in everyone if m not in missing))
    note = ACCURACY_MISSING.format(n=len(missing), names=", ".join(m.name for m in missing)) if missing else ""
    disparity = links.radio(ACCURACY_AXIS, list(DISPARITIES), key="disparity", what="disparity measure",
                            format_func=lambda c: DISPARITIES[c].split(":")[0].split(" over")[0], horizontal=True)
    show_chart(charts.accuracy_disparity_scatter(frame, disparity=disparity), frame, key="accuracy_disparity",
               caption=ACCURACY_DISPARITY.format(minimum=minimum, missing=note),
               file_name=csv_name(model.dataset, "accuracy-disparity"))
    if missing:
        jobs = [tasks.link_prediction_task([m.path]) for m in missing]
        running = [job for job in jobs if jobs_ui.is_running(job)]
        # The page's own link-prediction section may list the same job: one progress row (and Cancel key) each.
        listed = {job.key for job in pending}
        pending.extend(job for job in running if job.key not in listed)
        if not running and st.button(ACCURACY_COMPUTE.format(n=len(missing))):
            for m, job in zip(missing, jobs, strict=True):
                jobs_ui.submit(f"Link prediction of {m.name}", job)
            st.rerun()
