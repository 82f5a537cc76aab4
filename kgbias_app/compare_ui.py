"""Widgets, background-job plumbing, tables and charts of the "Model comparison" page.

Heavy work (training, link-prediction evaluation, the relation audit) runs as jobs on the process-wide
registry and writes its result beside the model (:func:`kgbias_core.store.save_result`); the page reads
it from there and, while something is missing, polls the jobs with a fragment every second.
Schwertmann et al.'s fairness is cheap (one top-1 prediction per test fact, a bootstrap of counts)
and is computed on the script thread through :func:`kgbias_app.cache.fairness_report`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

from kgbias_app import cache, sidebar, ui
from kgbias_core import tasks
from kgbias_core.data.datasets import has_dataset, resolve_data_dir
from kgbias_core.embeddings.config import MODELS
from kgbias_core.embeddings.store import default_store, list_models
from kgbias_core.errors import KGBiasError
from kgbias_core.evaluation.link_prediction import load_link_prediction
from kgbias_core.jobs import FINISHED_STATES, JobState, default_registry
from kgbias_core.measures.prediction_fairness import GAPS, METRICS, OTHER, FairnessReport
from kgbias_core.measures.relation_audit import audit_from_values, audit_params, load_value_audit

MEASURES = ("DPD", "PPD", "TLB")
GAP_NAMES = tuple(GAPS.values())  # DPG, PPG, EOG
METRIC_COLUMNS = METRICS  # selection_rate, precision, recall
CLASSIFIERS = {"random_forest": "Random forest", "mlp": "MLP (multi-layer perceptron)"}
UNDEFINED = "undefined"
#: Training triples from which a graph counts as large (FB15k-237 has 272k): Schwertmann's min count 100.
LARGE_GRAPH = 100_000
#: Minimum test facts per occupation class: the paper's on large graphs, a small one on the tiny ones.
MIN_COUNT_LARGE, MIN_COUNT_SMALL = 100, 5
#: Bootstrap replicates of the fairness confidence intervals.
N_BOOTSTRAP = 1000
AUDIT_CAPTION = (
    "Keidar et al. (METHODS §7): a {classifier} predicts each person's occupation (the {k} most common + "
    "OTHER) from the entity embedding; every tail value of a relation is one-vs-rest among the persons "
    "having the relation. DPD = Σ_a |P(ŷ=a | s=1) − P(ŷ=a | s=0)|; PPD = Σ_a |P(ŷ=a | y=a, s=1) − "
    "P(ŷ=a | y=a, s=0)| as the paper writes it: it conditions on the true class, like a recall (an "
    "equal-opportunity gap), not on the prediction like a precision; TLB = mean |Fisher b_p| over the "
    "{k} professions. Each relation's number is the plain mean over its tail values (Keidar Eq. 6): no "
    "division by the number of values (+1) as in the authors' code. Values held by fewer than "
    "{min_persons} persons are skipped. All unsigned: larger = more bias; 'undefined' = no usable value."
)


@dataclass(frozen=True)
class ComparedModel:
    """A stored model of the selected graph, as the cache functions are keyed."""

    name: str
    path: str
    version: int
    kind: str  # transe | distmult | complex | rotate


# --- models and training --------------------------------------------------------------------------
def graph_models(dataset: str) -> list[ComparedModel]:
    """The store's models of ``dataset`` (what-if edits left out), TransE, DistMult, ComplEx, RotatE order."""
    store, found = default_store(), []
    for name in list_models(store):
        path = store / name
        try:
            config = cache.model_config(str(path), cache.model_version(path))
        except (OSError, KGBiasError):
            continue  # being replaced right now: it shows up on the next rerun
        if config.get("dataset") == dataset and not config.get("edit"):
            found.append(ComparedModel(name, str(path), cache.model_version(path), config.get("model", "transe")))
    order = {kind: i for i, kind in enumerate(MODELS)}
    return sorted(found, key=lambda m: (order.get(m.kind, len(order)), m.name))


def can_train(dataset: str) -> bool:
    """Only the built-in graphs can be loaded again to train another model on them."""
    return has_dataset(dataset, resolve_data_dir())


def training_panel(dataset: str, models: list[ComparedModel], pending: list[str]) -> None:
    """Which of the four models exist; train the missing ones as background jobs (appended to ``pending``)."""
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
            pending.append(status.job_id)
        else:
            rows.append((kind, name, "not trained" if state is None else f"not trained (last job {state})"))
            missing.append(kind)
    others = [m.name for m in models if m.name not in {tasks.model_name(dataset, k) for k in MODELS}]
    st.dataframe(pd.DataFrame(rows, columns=["model", "name in the store", "status"]), hide_index=True)
    if others:
        st.caption(f"Also in the store for this graph: {', '.join(others)}.")
    if not missing:
        return
    if not can_train(dataset):
        st.caption("Other models can be trained only on the built-in graphs (synthetic, FB15k-237).")
        return
    chosen = st.multiselect("Models to train", missing, default=missing, key="train_kinds")
    if st.button("Train in the background", disabled=not chosen, key="train_models",
                 help="Same graph, split and training config as the default model; only the model differs. "
                 "FB15k-237 takes minutes per model."):
        for kind in chosen:
            # again: the model is missing, so a finished training of it is out of date.
            pending.append(registry.submit(tasks.model_name(dataset, kind), trainings[kind].run,
                                           owner=sidebar.session_owner(), key=trainings[kind].key, again=True))


def model_picker(models: list[ComparedModel], *, current: str) -> list[ComparedModel]:
    """Models to compare: all of this graph's by default (the sidebar's one first if there are many)."""
    names = [m.name for m in models]
    state, seen = st.session_state, st.session_state.get("compare_seen")
    if "compare_models" in state and seen is not None:  # a model trained meanwhile joins the comparison
        kept = [n for n in state["compare_models"] if n in names]
        state["compare_models"] = kept + [n for n in names if n not in seen]
    elif "compare_models" not in state:
        state["compare_models"] = list(dict.fromkeys([current, *names]))[:6] if current in names else names[:6]
    state["compare_seen"] = names
    chosen = st.multiselect("Models to compare", names, key="compare_models")
    return [m for m in models if m.name in chosen]


# --- jobs whose result is stored beside a model ---------------------------------------------------
def stored_or_job(
    title: str, *, load: Callable[[], pd.DataFrame | None], task: tasks.Task[Any], pending: list[str]
) -> pd.DataFrame | None:
    """The stored result, or None while the task computing it runs (one job per task key; id appended to ``pending``).

    A failed or cancelled job is shown with ``st.error`` and a button to run it again.
    """
    result = load()
    if result is not None:
        return result
    registry = default_registry()
    status = registry.latest(task.key)
    if status is not None and status.state in (JobState.FAILED, JobState.CANCELLED):
        st.error(f"{title} stopped: {status.error}")
        if st.button("Run it again", key=f"retry:{task.key}"):
            registry.submit(title, task.run, owner=sidebar.session_owner(), key=task.key)
            st.rerun()
        return None
    if status is not None and status.state is JobState.DONE:
        st.error(f"{title} finished but its result is not in the model store (was the model replaced?).")
        return None
    pending.append(registry.submit(title, task.run, owner=sidebar.session_owner(), key=task.key))
    return None


def link_predictions(models: list[ComparedModel], pending: list[str]) -> dict[str, pd.DataFrame]:
    """Filtered MRR and Hits@k per model name, for the models whose evaluation is stored."""
    ready = {}
    for m in models:
        frame = stored_or_job(
            f"Link prediction of {m.name}", load=lambda m=m: load_link_prediction(m.path),
            task=tasks.link_prediction_task([m.path]), pending=pending,
        )
        if frame is not None:
            ready[m.name] = frame
    return ready


def relation_audits(models: list[ComparedModel], params: dict[str, Any], pending: list[str]) -> dict[str, pd.DataFrame]:
    """Keidar et al.'s per-value audit per model name, for the models whose audit with ``params`` is stored."""
    ready = {}
    for m in models:
        frame = stored_or_job(
            f"Relation audit of {m.name}", load=lambda m=m: load_value_audit(m.path, **params),
            task=tasks.relation_audit_task(m.path, params), pending=pending,
        )
        if frame is not None:
            ready[m.name] = frame
    return ready


@st.fragment(run_every=1)
def job_progress(job_ids: list[str]) -> None:
    """Poll the page's jobs: one progress bar and cancel button each; rerun the page once all have finished."""
    registry = default_registry()
    statuses = [registry.status(job_id) for job_id in dict.fromkeys(job_ids)]
    if all(s.state in FINISHED_STATES for s in statuses):
        st.rerun()
    for status in statuses:
        progress = status.progress
        if status.state is JobState.QUEUED:
            st.progress(0.0, text=f"{status.name}: queued (position {status.queue_position})")
            continue
        if status.state in FINISHED_STATES:
            st.progress(1.0, text=f"{status.name}: {status.state}")
            continue
        steps = f", {progress.step}/{progress.total}" if progress.total else ""
        left = "" if progress.seconds_left is None else f", about {progress.seconds_left:.0f} s left"
        st.progress(progress.fraction or 0.0,
                    text=f"{status.name}: {progress.stage}{steps} ({progress.message}){left}")
        if st.button("Cancel", key=f"cancel:{status.job_id}"):
            registry.cancel(status.job_id)


# --- tables shared by the sections ----------------------------------------------------------------
def styled(frame: pd.DataFrame, digits: int = 3) -> Any:
    """Numbers with ``digits`` decimals and NaN written "undefined"; sorting still uses the numbers."""
    numeric = frame.select_dtypes("number").columns
    return frame.style.format({c: f"{{:.{digits}f}}" for c in numeric if frame[c].dtype.kind == "f"},
                              na_rep=UNDEFINED)


def models_by_name(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    return pd.concat([f.assign(model=name) for name, f in frames.items()], ignore_index=True)


# --- link prediction ------------------------------------------------------------------------------
def link_prediction_table(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    frame = models_by_name(frames)
    return frame[["model", "queries", "n", "mrr", "hits@1", "hits@3", "hits@10", "mr"]]


def link_prediction_chart(table: pd.DataFrame) -> go.Figure:
    long = table.melt(id_vars=["model", "queries"], value_vars=["mrr", "hits@1", "hits@3", "hits@10"],
                      var_name="metric", value_name="value")
    fig = px.bar(long, x="metric", y="value", color="model", barmode="group", facet_col="queries",
                 labels={"metric": "metric (filtered, test split, tail queries)",
                         "value": "value (0-1; higher = better link prediction)", "model": "model"})
    fig.update_yaxes(range=[0, 1])
    return fig


# --- relation audit -------------------------------------------------------------------------------
def audit_controls(n_triples: int) -> dict[str, Any]:
    left, middle, right = st.columns(3)
    kind = left.selectbox("Occupation classifier", list(CLASSIFIERS), format_func=CLASSIFIERS.__getitem__,
                          key="audit_classifier")
    k = middle.slider("k most common professions (+ OTHER)", 2, 20, 5, key="audit_k")
    default = 10 if n_triples >= LARGE_GRAPH else 5
    min_persons = right.number_input("Skip tail values with fewer persons than", 1, 1000, default,
                                     key="audit_min_persons")
    return audit_params(k=k, kind=kind, min_persons=int(min_persons))


def audit_wide(values: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Relations × (measure · model): bias_agg per relation (one row), sortable by any column."""
    parts = [audit_from_values(frame).assign(model=name) for name, frame in values.items()]
    long = pd.concat(parts, ignore_index=True)
    long["column"] = long["measure"] + " · " + long["model"]
    order = list(dict.fromkeys(r for frame in values.values() for r in frame["relation"]))
    columns = [f"{m} · {name}" for m in MEASURES for name in values if f"{m} · {name}" in set(long["column"])]
    wide = long.pivot(index="relation", columns="column", values="bias").reindex(index=order, columns=columns)
    return wide.reset_index()


def audit_long(values: dict[str, pd.DataFrame]) -> pd.DataFrame:
    return pd.concat([audit_from_values(f).assign(model=n) for n, f in values.items()], ignore_index=True)


def classifier_table(values: dict[str, pd.DataFrame]) -> pd.DataFrame:
    rows = [frame.iloc[0][["classifier", "k", "accuracy", "balanced_accuracy", "n_classified"]].rename(name)
            for name, frame in values.items() if len(frame)]
    return pd.DataFrame(rows).rename_axis("model").reset_index()


def audit_heatmap(wide: pd.DataFrame) -> go.Figure:
    """One cell per relation and measure · model; colour relative to the largest of its measure."""
    values = wide.set_index("relation")
    measures = [c.split(" · ")[0] for c in values.columns]
    scale = pd.Series({m: values[[c for c in values.columns if c.startswith(m + " ")]].max().max() for m in measures})
    relative = values / scale[measures].to_numpy()
    text = values.map(lambda v: UNDEFINED if pd.isna(v) else f"{v:.3f}")
    fig = go.Figure(go.Heatmap(
        z=relative.to_numpy(), x=list(values.columns), y=list(values.index), text=text.to_numpy(),
        texttemplate="%{text}", colorscale="Reds", zmin=0, zmax=1,
        colorbar={"title": "share of the measure's<br>largest value"},
        hovertemplate="%{y}, %{x}: %{text}<extra></extra>",
    ))
    fig.update_layout(xaxis_title="measure · model (DPD, PPD, TLB: unsigned, larger = more bias)",
                      yaxis_title="sensitive relation", height=max(300, 45 * len(values) + 150),
                      margin={"l": 10, "r": 10, "t": 30, "b": 10})
    fig.update_yaxes(autorange="reversed")
    return fig


def value_table(values: dict[str, pd.DataFrame], relation: str) -> pd.DataFrame:
    """One relation's tail values × (measure · model), with the persons counted on each side."""
    long = models_by_name(values)
    long = long[long["relation"] == relation]
    long = long.assign(column=long["measure"] + " · " + long["model"])
    counts = long.drop_duplicates("value").set_index("value")[["value_name", "n_persons", "n_rest"]]
    wide = long.pivot_table(index="value", columns="column", values="bias", aggfunc="first", dropna=False)
    columns = [f"{m} · {name}" for m in MEASURES for name in values if f"{m} · {name}" in wide.columns]
    frame = counts.join(wide[columns]).sort_values("n_persons", ascending=False)
    return frame.reset_index()


def value_chart(values: dict[str, pd.DataFrame], relation: str) -> tuple[go.Figure, pd.DataFrame]:
    long = models_by_name(values)
    long = long[long["relation"] == relation][["model", "value", "value_name", "measure", "bias", "n_persons",
                                                "n_rest", "status"]]
    fig = px.bar(long, x="value_name", y="bias", color="model", barmode="group", facet_row="measure",
                 category_orders={"measure": list(MEASURES)}, hover_data={"n_persons": True, "status": True},
                 labels={"value_name": f"tail value of {relation} (one-vs-rest)",
                         "bias": "bias (unsigned; larger = more)", "model": "model"})
    fig.update_yaxes(matches=None)
    fig.update_layout(height=650)
    return fig, long


def top_professions(model: ComparedModel, relation: str, value: str, *, n: int = 5) -> pd.DataFrame:
    """The ``n`` professions whose plausibility the value moves most (largest |Fisher b_p|, Keidar Table 3)."""
    table = cache.fisher_table(model.path, model.version, relation, value, None, 0)
    top = table.reindex(table["bias"].abs().sort_values(ascending=False).index).head(n)
    return top[["name", "bias", "n_a", "n_b"]].rename(columns={"name": "profession", "bias": "b_p"})


# --- prediction fairness --------------------------------------------------------------------------
def default_min_count(n_triples: int) -> int:
    return MIN_COUNT_LARGE if n_triples >= LARGE_GRAPH else MIN_COUNT_SMALL


def fairness_reports(models: list[ComparedModel], min_count: int) -> dict[str, FairnessReport]:
    return {m.name: cache.fairness_report(m.path, m.version, min_count, N_BOOTSTRAP) for m in models}


def no_class_reaches(reports: dict[str, FairnessReport]) -> bool:
    """True when no occupation has min_count test facts: every class is OTHER, there is nothing to compare."""
    return all(report.classes == (OTHER,) for report in reports.values())


def _interval(estimate: float, low: float, high: float) -> str:
    if pd.isna(estimate):
        return UNDEFINED
    return f"{estimate:.3f} [{low:.3f}, {high:.3f}]" if not pd.isna(low) else f"{estimate:.3f}"


def model_gaps(reports: dict[str, FairnessReport]) -> pd.DataFrame:
    """Level (i): DPG, PPG, EOG per model with their bootstrap interval and the facts counted."""
    rows = []
    for name, report in reports.items():
        row: dict[str, Any] = {"model": name}
        for gap in GAP_NAMES:
            ci = report.confidence_intervals.loc[("model", gap)]
            row |= {gap: report.by_model[gap], f"{gap}_low": ci["low"], f"{gap}_high": ci["high"],
                    f"{gap} (95% CI)": _interval(report.by_model[gap], ci["low"], ci["high"]),
                    f"n_classes_{gap}": int(report.by_model[f"n_classes_{gap}"])}
        rows.append(row | {"n_facts": report.n_facts, "n_not_occupation": report.n_not_occupation,
                           "n_classes": len(report.classes) - 1})
    return pd.DataFrame(rows)


def gap_chart(gaps: pd.DataFrame) -> go.Figure:
    long = pd.DataFrame([
        {"model": row["model"], "gap": gap, "value": row[gap], "plus": row[f"{gap}_high"] - row[gap],
         "minus": row[gap] - row[f"{gap}_low"]}
        for _, row in gaps.iterrows() for gap in GAP_NAMES
    ])
    fig = px.bar(long, x="gap", y="value", color="model", barmode="group", error_y="plus", error_y_minus="minus",
                 labels={"gap": "gap between men and women (macro mean over occupation classes)",
                         "value": "|metric(men) − metric(women)| (0 = fair)", "model": "model"})
    return fig


def group_metrics(reports: dict[str, FairnessReport]) -> pd.DataFrame:
    """Level (ii): macro mean of each metric per model and gender, with intervals and Table 5's deviation."""
    rows = []
    for name, report in reports.items():
        for group, values in report.by_group.iterrows():
            row: dict[str, Any] = {"model": name, "group": group, "n_facts": report.n_facts_by_group[group],
                                   "n_not_occupation": report.n_not_occupation_by_group[group]}
            for metric in METRICS:
                ci = report.confidence_intervals.loc[(group, metric)]
                row |= {metric: values[metric], f"{metric} (95% CI)": _interval(values[metric], ci["low"], ci["high"])}
            row |= {"selection_deviation": values["selection_deviation"],
                    "abs_selection_deviation": values["abs_selection_deviation"]}
            rows.append(row)
    return pd.DataFrame(rows)


def class_group_metrics(models: list[ComparedModel], reports: dict[str, FairnessReport]) -> pd.DataFrame:
    """Level (iii): each metric per class and gender, the class's gaps and the selection-rate deviation."""
    parts = []
    for m in models:
        report = reports[m.name]
        names = cache.analysis(m.path, m.version).model.entity_names
        frame = report.by_class_group.reset_index().merge(report.by_class.reset_index(), on="class")
        frame.insert(0, "model", m.name)
        frame.insert(2, "class_name", ["OTHER" if c == OTHER else names[c] for c in frame["class"]])
        parts.append(frame)
    columns = ["model", "class", "class_name", "group", *METRICS, "n_true", "n_predicted", "data_share",
               "selection_deviation", *GAP_NAMES]
    return pd.concat(parts, ignore_index=True)[columns]


def deviation_chart(table: pd.DataFrame) -> go.Figure:
    fig = px.bar(table, x="class_name", y="selection_deviation", color="group", barmode="group", facet_col="model",
                 color_discrete_map=ui.GENDER_COLORS, hover_data={"n_true": True, "n_predicted": True},
                 labels={"class_name": "occupation class (test facts ≥ min count; the rest OTHER)",
                         "selection_deviation": "SelR − data share (> 0 = predicted more often than in the data)",
                         "group": "gender"})
    fig.add_hline(y=0, line_color="black", line_width=1)
    return fig


def safe_name(*parts: str) -> str:
    return "-".join(parts).replace("/", "_").replace(" ", "_") + ".csv"


def n_triples(model: ComparedModel) -> int:
    return int(cache.summary(model.path, model.version)["n_triples"])


def undefined_count(frame: pd.DataFrame, columns: list[str]) -> int:
    return int(np.isnan(frame[columns].to_numpy(dtype=float)).sum())

