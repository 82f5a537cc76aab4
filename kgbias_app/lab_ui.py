"""Widgets, job panels and charts of the "Debiasing lab" and "Validation" pages.

Jobs run on the process-wide registry (:func:`kgbias_core.jobs.default_registry`), owned by the
browser session (:func:`kgbias_app.sidebar.session_owner`); this session's job ids and what they are
for live in ``st.session_state[JOBS_KEY]``, so a rerun or a page switch finds them again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

from kgbias_app import cache, sidebar, ui
from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embeddings.store import list_models
from kgbias_core.jobs import JobState, JobStatus, default_registry
from kgbias_core.tasks import Task
from kgbias_core.whatif.edits import Edit, make_edit

JOBS_KEY = "lab_jobs"
MODES = {
    "scratch": "from scratch (faithful: same seed and initialisation)",
    "warm": "warm start (fast: a few epochs from the base model)",
}
STRATEGIES = {
    "if": "Remove k triples by influence (IF-REMOVE)",
    "random": "Remove k random triples (Random-REMOVE)",
    "basket": "Remove the removal basket",
    "add": "Add dummies of the under-represented gender (Add)",
}
ADD_NOT_PREDICTED = (
    "Influence predicts the effect of removing triples only: for Add, retrain to see the change."
)
IF_REMOVE_FEWER = "Only {n} training triples move B_gr of {name} towards 0: IF-REMOVE removes those {n}, not {k}."
RANDOM_CAPPED = "k = {k} exceeds the {n} training triples: Random-REMOVE removes all {n}."
EMPTY_BASKET = "The removal basket of {model} is empty: add triples on the Influential triples page."
NO_NOISE_BAND = "No noise band yet: it takes 3 retrains of the unedited graph, once per model."
NO_CENSUS = (
    "No census file at `{path}`. Get it with `python -m kgbias_core download --data-dir {data_dir}` "
    "(or copy data/occupation_percentages_gender_occ1950.csv of github.com/nikhgarg/EmbeddingDynamicStereotypes "
    "there), then reload."
)
CENSUS_TOO_FEW = (
    "Only {n} paired occupations have census shares in {year}: a correlation needs at least 3. Pick another year."
)
NO_PAIRING = (
    "No census pairing exists for the {dataset} graph: the pairing covers FB15k-237 professions (Freebase "
    "MIDs) only. Pick an FB15k-237 model in the sidebar."
)


# --- jobs of this session -----------------------------------------------------------------------
def session_jobs() -> dict[str, dict[str, Any]]:
    """Job id -> what it is for (kind, model, occupation, ...), for this browser session."""
    return st.session_state.setdefault(JOBS_KEY, {})


def submit(kind: str, title: str, task: Task[Any], **meta: Any) -> str:
    """Submit ``task`` for this session; the same task already queued or running elsewhere is shared."""
    job_id = default_registry().submit(title, task.run, owner=sidebar.session_owner(), key=task.key)
    session_jobs()[job_id] = {"kind": kind, "title": title, **meta}
    return job_id


def active_job(kind: str, **meta: Any) -> JobStatus | None:
    """This session's latest queued or running job of ``kind`` whose meta matches (no double submits)."""
    registry = default_registry()
    for job_id, info in reversed(list(session_jobs().items())):
        if info["kind"] == kind and all(info.get(k) == v for k, v in meta.items()):
            status = registry.status(job_id)
            if status.state in (JobState.QUEUED, JobState.RUNNING):
                return status
    return None


@st.fragment(run_every=1)
def job_panel(kinds: tuple[str, ...]) -> None:
    """This session's jobs of ``kinds``: progress, queue position, Cancel; reruns the app when one ends."""
    infos = session_jobs()
    owned = [s for s in default_registry().jobs(owner=sidebar.session_owner())
             if s.job_id in infos and infos[s.job_id]["kind"] in kinds]
    if not owned:
        return
    st.subheader("Jobs of this session")
    finished_now = False
    for status in reversed(owned):
        info = infos[status.job_id]
        progress = status.progress
        if status.state is JobState.QUEUED:
            st.progress(0.0, text=f"{status.name}: queued (position {status.queue_position})")
        elif status.state is JobState.RUNNING:
            loss = "" if progress.loss is None else f", loss {progress.loss:.4f}"
            left = "estimating…" if progress.seconds_left is None else f"about {progress.seconds_left:.0f} s left"
            st.progress(progress.fraction or 0.0, text=f"{status.name}: {progress.stage}, {progress.message or ''}"
                        f" (step {progress.step}/{progress.total or '?'}{loss}; {left})")
        elif status.state is JobState.DONE:
            st.success(f"{status.name}: done.")
        else:
            st.error(f"{status.name} {status.state.value}: {status.error}. The base model and earlier runs are "
                     "unchanged.")
        if status.state in (JobState.QUEUED, JobState.RUNNING):
            if st.button("Cancel", key=f"cancel:{status.job_id}", disabled=progress.cancel_requested):
                default_registry().cancel(status.job_id)
        elif not info.get("seen"):
            info["seen"] = True
            finished_now = True
    if finished_now:
        st.rerun()  # the whole app: the sidebar lists new runs, the pages show new results


# --- edits --------------------------------------------------------------------------------------
def build_edit(analysis: ModelAnalysis, *, model_name: str, occupation: str, strategy: str,
               k: int, c: float, cap: int) -> Edit | None:
    """The chosen edit (warnings for capped k or an empty basket); MeasureError for impossible ones."""
    n = analysis.model.triples.shape[0]
    chosen = ui.basket(model_name) if strategy == "basket" else []
    if strategy == "basket" and not chosen:
        st.info(EMPTY_BASKET.format(model=model_name))
        return None
    edit = make_edit(analysis, occupation, strategy=strategy, k=min(k, n), c=c, cap=cap, indices=chosen)
    if strategy == "if" and len(edit.removed) < k:
        name = analysis.groups.names[analysis.groups.index(occupation)]
        st.warning(IF_REMOVE_FEWER.format(n=len(edit.removed), name=name, k=k))
    if strategy == "random" and k > n:
        st.warning(RANDOM_CAPPED.format(k=k, n=n))
    return edit


def runs_of(store: Path, base: str) -> dict[str, dict]:
    """What-if model name -> config, for every stored run whose base model is ``base``."""
    runs = {}
    for name in list_models(store):
        config = cache.model_config(str(store / name), cache.model_version(store / name))
        if config.get("base_model") == base and config.get("edit"):
            runs[name] = config
    return runs


def noise_spread(noise: pd.DataFrame | None, occupation: str) -> float | None:
    if noise is None:
        return None
    hit = noise.loc[noise["occupation"] == occupation, "spread"]
    return float(hit.iloc[0]) if len(hit) else None


def noise_sentence(change: float | None, spread: float | None) -> str:
    """Is |change| above the spread of B_gr across retrains of the unedited graph?"""
    if spread is None or not ui.is_defined(change):
        return NO_NOISE_BAND
    verdict = "larger than" if abs(change) > spread else "within"
    return (f"Retrains of the unedited graph under 3 other seeds spread B_gr over {spread:.3f} (max − min): "
            f"this change ({ui.fmt(change)}) is {verdict} that noise.")


def random_baseline_sentence(curve: pd.DataFrame | None, *, k: int) -> str | None:
    """What Random-REMOVE of about as many triples did (from the stored curve), or None without a curve."""
    if curve is None or k <= 0:
        return None
    random = curve[(curve["strategy"] == "Random-REMOVE") & (curve["k"] > 0)]
    if random.empty:
        return None
    nearest = random.iloc[(random["k"] - k).abs().argmin()]
    base = float(curve.loc[curve["k"] == 0, "group_bias"].iloc[0])
    return (f"Random-REMOVE baseline: removing {int(nearest['k'])} random triples moved B_gr by "
            f"{ui.fmt(float(nearest['group_bias']) - base)} (from the curve below).")


# --- charts -------------------------------------------------------------------------------------
def bias_change_bars(frame: pd.DataFrame, *, occupation: str, noise: pd.DataFrame | None) -> go.Figure:
    """Change of B_gr of every occupation after the edit; the noise band's spread as error bars."""
    data = frame[frame["change"].notna()].sort_values("change")
    spread = None
    if noise is not None:
        spread = data["occupation"].map(noise.set_index("occupation")["spread"]).fillna(0) / 2
    colors = np.where(data["occupation"] == occupation, "#ff7f0e", "#7f7f7f")
    fig = go.Figure(go.Bar(
        x=data["change"], y=data["name"], orientation="h", marker_color=colors,
        error_x=None if spread is None else {"type": "data", "array": spread, "thickness": 1},
        hovertemplate="%{y}: change %{x:+.3f}<extra></extra>",
    ))
    fig.update_layout(height=max(300, 18 * len(data) + 120), margin={"l": 10, "r": 10, "t": 30, "b": 10},
                      xaxis_title=f"change of B_gr after − before ({ui.SIGN})", yaxis_title="occupation")
    fig.add_vline(x=0, line_color="black", line_width=1)
    return fig


def removal_curve(curve: pd.DataFrame, *, spread: float | None, run: tuple[int, float] | None = None) -> go.Figure:
    """B_gr against k for IF-REMOVE and Random-REMOVE (Du Fig 4d-f), with the noise band around k = 0."""
    fig = px.line(curve, x="k", y="group_bias", color="strategy", markers=True,
                  labels={"k": "triples removed k", "group_bias": f"B_gr after retraining ({ui.SIGN})"})
    base = float(curve.loc[curve["k"] == 0, "group_bias"].iloc[0])
    if spread is not None:
        fig.add_hrect(y0=base - spread / 2, y1=base + spread / 2, fillcolor="grey", opacity=0.2, line_width=0,
                      annotation_text="noise band (other seeds)")
    if run is not None:
        fig.add_scatter(x=[run[0]], y=[run[1]], mode="markers", name="selected run",
                        marker={"symbol": "star", "size": 14, "color": "#ff7f0e"})
    fig.add_hline(y=0, line_color="black", line_width=1)
    return fig


def accuracy_scatter(runs: pd.DataFrame, *, scale: float) -> go.Figure:
    """Predicted (sum of δ_z) against actual change of B_gr, one point per removal set (Du Fig 4a-c)."""
    fig = px.scatter(runs, x="predicted", y="actual", color="kind", symbol="kind", hover_data={"k": True},
                     labels={"predicted": "predicted change Σ δ_z B_gr (uncalibrated)",
                             "actual": "actual change of B_gr after masked retraining", "kind": "removed set"})
    if np.isfinite(scale):
        x = np.array([runs["predicted"].min(), runs["predicted"].max()])
        fig.add_scatter(x=x, y=scale * x, mode="lines", name=f"actual = {scale:.3g} × predicted",
                        line={"dash": "dash", "color": "black"})
    fig.add_hline(y=0, line_color="grey", line_width=1)
    fig.add_vline(x=0, line_color="grey", line_width=1)
    return fig


def census_scatter(joined: pd.DataFrame, *, measure: str) -> go.Figure:
    """A measure against census log(p/(1−p)), one point per occupation, with its name."""
    data = joined[np.isfinite(joined[measure]) & np.isfinite(joined["log_prop"])]
    fig = px.scatter(data, x="log_prop", y=measure, text="name", hover_data={"p_male": ":.2f"},
                     labels={"log_prop": "census log(p / (1 − p)), p = share of men (> 0 = more men)",
                             measure: f"{measure} ({ui.SIGN})"})
    fig.update_traces(textposition="top center")
    fig.add_hline(y=0, line_color="grey", line_width=1)
    fig.add_vline(x=0, line_color="grey", line_width=1)
    return fig


def link_table(base: pd.DataFrame, run: pd.DataFrame) -> pd.DataFrame:
    """MRR and Hits@10 before and after, per query set."""
    columns = ["queries", "n", "mrr", "hits@10"]
    return base[columns].merge(run[columns[:1] + columns[2:]], on="queries", suffixes=(" before", " after"))
