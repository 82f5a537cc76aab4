"""The sidebar every page shows: knowledge graph, cached model, device, config; start-up training.

:func:`render` returns the selected model (a :class:`ModelRef`) or ``None`` while there is none
yet (a page then stops). Without any cached model for the synthetic graph, a training job starts
by itself; FB15k-237 (when the data directory has it) is offered with a button. Training runs on
the process-wide job registry and is polled by a fragment every second.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

import streamlit as st
import torch

from kgbias_app import cache
from kgbias_core.data.datasets import available_datasets, dataset_title, resolve_data_dir
from kgbias_core.embeddings.store import default_store, list_models
from kgbias_core.embeddings.training import default_device
from kgbias_core.errors import KGBiasError
from kgbias_core.jobs import JobState, default_registry
from kgbias_core.tasks import DEFAULT_MODEL_NAMES, Task, train_task

#: Config fields shown in the sidebar, in this order.
CONFIG_FIELDS = (
    "model", "dim", "epochs", "batch_size", "lr", "margin", "l2", "seed", "damping", "influence_scale",
    "final_loss", "train_seconds", "device",
)


@dataclass(frozen=True)
class ModelRef:
    """The selected model: what the cache functions are keyed on."""

    name: str  # directory name in the store
    path: str  # model directory
    version: int  # cache key of its contents (see cache.model_version)
    dataset: str


def session_owner() -> str:
    """A per-browser-session id: the owner of this session's jobs in the registry."""
    return st.session_state.setdefault("session_id", uuid.uuid4().hex)


def _cached_models(store: Path) -> dict[str, dict]:
    configs = {}
    for name in list_models(store):
        try:
            configs[name] = cache.model_config(str(store / name), cache.model_version(store / name))
        except (KGBiasError, OSError):
            continue  # a model being replaced right now: it shows up on the next rerun
    return configs


def _default_graph(graphs: list[str], configs: dict[str, dict]) -> int:
    for dataset, name in DEFAULT_MODEL_NAMES.items():
        if name in configs and dataset in graphs:
            return graphs.index(dataset)
    if configs:
        return graphs.index(next(iter(configs.values())).get("dataset", "synthetic"))
    return 0


def render() -> ModelRef | None:
    """Draw the sidebar; return the selected model, or None (with a message) while there is none."""
    store, data_dir = default_store(), resolve_data_dir()
    configs = _cached_models(store)
    graphs = available_datasets(data_dir)
    graphs += sorted({c.get("dataset", "") for c in configs.values()} - set(graphs) - {""})
    device = default_device()
    with st.sidebar:
        graph = st.selectbox(
            "Knowledge graph", graphs, index=_default_graph(graphs, configs), key="graph",
            format_func=lambda g: dataset_title(g), persist_state="session",
        )
        names = [n for n, c in configs.items() if c.get("dataset") == graph]
        default_name = DEFAULT_MODEL_NAMES.get(graph)
        name = None
        if names:
            name = st.selectbox(
                "Cached model", names, key=f"model:{graph}", persist_state="session",
                index=names.index(default_name) if default_name in names else 0,
            )
        gpu = f"GPU ({torch.cuda.get_device_name(device)})" if device.type == "cuda" else "CPU"
        st.caption(f"Device: **{gpu}** · model store: `{store}`")
        job = _training_controls(graph, names, store=store, data_dir=data_dir)
        if job is not None and name is not None:
            _progress(*job)
        if name is None:
            st.caption("No cached model for this graph yet.")
    if name is None:
        if job is not None:
            st.info("Training a first model in the background: the dashboard opens when it is ready.")
            _progress(*job)
        else:
            st.info(f"No cached model for {dataset_title(graph)} yet: train one in the sidebar.")
        return None
    with st.sidebar:
        config = configs[name]
        st.caption(f"Data hash: `{str(config.get('data_hash', ''))[:16]}…`")
        with st.expander("Model config", expanded=False):
            st.json({k: config[k] for k in CONFIG_FIELDS if k in config}, expanded=True)
            if config.get("edit"):
                st.caption("What-if edit:")
                st.json(config["edit"], expanded=False)
    path = store / name
    return ModelRef(name=name, path=str(path), version=cache.model_version(path), dataset=graph)


def _training_controls(
    graph: str, names: list[str], *, store: Path, data_dir: Path
) -> tuple[str, Task[str]] | None:
    """Start (synthetic: automatically) or offer (FB15k-237) the default model; the job to poll, if any."""
    model_name = DEFAULT_MODEL_NAMES.get(graph)
    if model_name is None:
        return None
    task = train_task(graph, out=store / model_name, data_dir=data_dir)
    status = default_registry().latest(task.key)  # any session's: one training per model
    if status is not None and status.state is JobState.DONE:
        if model_name in names:
            return None
        if (store / model_name / "config.json").is_file():
            st.rerun()  # it was saved after this run listed the store
        status = None  # its model was removed since: it may be trained again
    if status is not None or model_name in names:
        return None if status is None else (status.job_id, task)
    if graph == "synthetic" and not names:
        start = True  # a fresh machine opens on the synthetic graph: train it without asking
    else:
        start = st.button(f"Train {model_name}", help="TransE with the default config; FB15k-237 takes minutes")
    if not start:
        return None
    return _submit(model_name, task), task


def _submit(model_name: str, task: Task[str]) -> str:
    # again: the model is missing, so a finished training of it is out of date.
    return default_registry().submit(model_name, task.run, owner=session_owner(), key=task.key, again=True)


@st.fragment(run_every=1)
def _progress(job_id: str, task: Task[str]) -> None:
    """Poll the training job: epoch, loss and time left; rerun the app once the model is saved."""
    status = default_registry().status(job_id)
    progress = status.progress
    if status.state is JobState.DONE:
        st.rerun()
    if status.state in (JobState.FAILED, JobState.CANCELLED):
        st.error(f"Training {status.name} stopped: {status.error}")
        if st.button("Try again", key=f"retry:{job_id}"):
            _submit(status.name, task)
            st.rerun()
        return
    if status.state is JobState.QUEUED:
        st.progress(0.0, text=f"{status.name}: queued (position {status.queue_position})")
        return
    loss = "–" if progress.loss is None else f"{progress.loss:.4f}"
    left = "estimating…" if progress.seconds_left is None else f"about {progress.seconds_left:.0f} s left"
    st.progress(
        progress.fraction or 0.0,
        text=f"{status.name}: {progress.stage}, epoch {progress.step}/{progress.total or '?'}, "
        f"loss {loss}, {left}",
    )
    if st.button("Cancel training", key=f"cancel:{job_id}"):
        default_registry().cancel(job_id)
