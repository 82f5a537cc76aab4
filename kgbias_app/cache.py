"""The one module that owns Streamlit caching.

- ``st.cache_resource``: one :class:`ModelAnalysis` per model directory and version, shared by
  every session and read-only (it memoises its tensors under its own lock). Jobs are shared through
  the job registry's keys, not here.
- ``st.cache_data``: DataFrames and small results derived from it; every caller gets a copy, so a
  page may sort or annotate what it gets without touching the cache.

Every function takes the model directory ``path`` and its ``version`` (the modification time of
its config.json): a model retrained under the same name is a new cache entry.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st
import torch

from kgbias_core import tables
from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embeddings.store import load_model, read_config
from kgbias_core.measures.prediction_fairness import FairnessReport, model_fairness


def model_version(path: Path | str) -> int:
    """Cache key of a model directory's current contents (config.json is written last)."""
    return (Path(path) / "config.json").stat().st_mtime_ns


@st.cache_resource(max_entries=4, show_spinner="Loading the model…")
def analysis(path: str, version: int) -> ModelAnalysis:
    """The shared, read-only analysis of one stored model (weights loaded once per process).

    The influence context (~0.8 s on FB15k-237) is precomputed in the background, so that the first
    predicted change or influence table of a session does not wait for it.
    """
    shared = ModelAnalysis(load_model(path))
    shared.warm_up()
    return shared


@st.cache_data(max_entries=64, show_spinner=False)
def model_config(path: str, version: int) -> dict:
    return read_config(path)


@st.cache_data(max_entries=8, show_spinner="Computing every measure per occupation…")
def measures(path: str, version: int) -> pd.DataFrame:
    return tables.measures_table(analysis(path, version))


@st.cache_data(max_entries=8, show_spinner=False)
def summary(path: str, version: int) -> dict[str, int]:
    return tables.summary(analysis(path, version))


@st.cache_data(max_entries=1024, show_spinner=False)
def individuals(path: str, version: int, occupation: str) -> pd.DataFrame:
    return tables.persons_table(analysis(path, version), occupation)


@st.cache_data(max_entries=256, show_spinner=False)
def individuals_of(path: str, version: int, occupations: tuple[str, ...]) -> pd.DataFrame:
    """Persons of several occupations stacked, with the occupation's label and name as columns."""
    frame = measures(path, version).set_index("occupation")["name"]
    parts = [
        individuals(path, version, label).assign(occupation=label, occupation_name=frame[label])
        for label in occupations
    ]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


@st.cache_data(max_entries=256, show_spinner="Computing the influence of every training triple…")
def influence_extremes(path: str, version: int, occupation: str, k: int) -> pd.DataFrame:
    return tables.influence_extremes(analysis(path, version), occupation, k=k)


@st.cache_data(max_entries=256, show_spinner=False)
def influence_table(path: str, version: int, occupation: str, top: int) -> pd.DataFrame:
    return tables.influence_table(analysis(path, version), occupation, top=top)


@st.cache_data(max_entries=256, show_spinner=False)
def occupation_relation_share(path: str, version: int, occupation: str) -> dict[str, object]:
    return tables.occupation_relation_share(analysis(path, version), occupation)


@st.cache_data(max_entries=64, show_spinner=False)
def triples_frame(path: str, version: int, indices: tuple[int, ...]) -> pd.DataFrame:
    return tables.triples_frame(analysis(path, version), torch.tensor(indices, dtype=torch.long))


def predicted_removal(path: str, version: int, occupation: str, indices: tuple[int, ...]) -> float:
    """Predicted change of B_gr for removing ``indices`` (a sum over the cached influence: not cached)."""
    return analysis(path, version).predicted_removal(occupation, torch.tensor(indices, dtype=torch.long))


@st.cache_data(max_entries=64, show_spinner=False)
def attribute_values(path: str, version: int, relation: str) -> pd.DataFrame:
    return tables.attribute_values(analysis(path, version), relation)


@st.cache_data(max_entries=128, show_spinner="Computing Fisher's b_p for every profession…")
def fisher_table(
    path: str, version: int, relation: str, value_a: str, value_b: str | None, min_count: int
) -> pd.DataFrame:
    return tables.fisher_table(
        analysis(path, version), relation=relation, value_a=value_a, value_b=value_b, min_count=min_count
    )


# --- model comparison ---------------------------------------------------------------------------
@st.cache_data(max_entries=32, show_spinner="Predicting occupations and bootstrapping the fairness gaps…")
def fairness_report(path: str, version: int, min_count: int, n_bootstrap: int) -> FairnessReport:
    """Schwertmann et al.'s fairness of the model's top-1 occupation predictions (a copy per caller)."""
    return model_fairness(analysis(path, version).model, min_count=min_count, n_bootstrap=n_bootstrap)
