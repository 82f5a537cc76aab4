"""The top of every page: its title and the sidebar's knowledge graph, model, device and config.

:func:`page_header` returns the selected model (a :class:`~kgbias_app.cache.ModelRef`) and stops
the page while there is none yet. Without any cached model for the synthetic graph, a training job
starts by itself; FB15k-237 (when the data directory has it) is offered with a button.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st
import torch

from kgbias_app import cache, jobs_ui, links, texts
from kgbias_app.cache import ModelRef
from kgbias_core.data.datasets import available_datasets, dataset_title, resolve_data_dir
from kgbias_core.device import describe_device
from kgbias_core.embeddings.store import default_store
from kgbias_core.errors import DeviceError
from kgbias_core.jobs import JobState, default_registry
from kgbias_core.tasks import DEFAULT_MODEL_NAMES, Task, train_task

#: Config fields shown in the sidebar, in this order.
CONFIG_FIELDS = (
    "model", "dim", "epochs", "batch_size", "lr", "margin", "l2", "seed", "damping", "influence_scale",
    "final_loss", "train_seconds", "device",
)


def default_graph(graphs: list[str], models: list[ModelRef]) -> int:
    """Index of the graph to open on: the first with its default model cached, else one with any model."""
    names = {m.name for m in models}
    for dataset, name in DEFAULT_MODEL_NAMES.items():
        if name in names and dataset in graphs:
            return graphs.index(dataset)
    return graphs.index(models[0].dataset) if models and models[0].dataset in graphs else 0


def default_model(graph: str, models: list[ModelRef]) -> int:
    """Index among ``models`` (one graph's) of the one to open on: the graph's default model, else its
    first base model; never a what-if run while a base model exists."""
    names = [m.name for m in models]
    if DEFAULT_MODEL_NAMES.get(graph) in names:
        return names.index(DEFAULT_MODEL_NAMES[graph])
    return next((i for i, m in enumerate(models) if not m.is_whatif), 0)


#: Torch threads of a page run. Page computations are small tensor ops; with several sessions each
#: script thread running them on every core oversubscribed the CPU (a retrain in the app ran 4-7x
#: slower than from the command line). One thread per page run; the job worker sets its own (all cores).
PAGE_TORCH_THREADS = 1


def page_header(title: str) -> ModelRef:
    """The page's title and the sidebar; the selected model, or the page stops (with a message) while there is none."""
    torch.set_num_threads(PAGE_TORCH_THREADS)  # per thread: this script run's thread only
    st.title(title)
    links.start()
    model = _render()
    if model is None:
        st.stop()
    return model


def _render() -> ModelRef | None:
    store, data_dir = default_store(), resolve_data_dir()
    models = list(cache.catalog().values())
    graphs = available_datasets(data_dir)
    graphs += sorted({m.dataset for m in models} - set(graphs) - {""})
    with st.sidebar:
        graph = links.selectbox(
            "Knowledge graph", graphs, index=default_graph(graphs, models), key="graph", what="graph",
            format_func=dataset_title, persist_state="session",
        )
        mine = [m for m in models if m.dataset == graph]
        model = None
        if mine:
            name = links.selectbox(
                "Cached model", [m.name for m in mine], index=default_model(graph, mine), key="model",
                what="model", persist_state="session",
            )
            model = next(m for m in mine if m.name == name)
        try:
            device = cache.device()
        except DeviceError as error:  # a bad KGBIAS_DEVICE: one line, and no page computes anywhere else
            st.error(str(error))
            st.stop()
        st.caption(texts.DEVICE_CAPTION.format(device=describe_device(device), store=store))
        training = _training(graph, [m.name for m in mine], store=store, data_dir=data_dir)
        if training is not None and model is not None:
            jobs_ui.progress_panel([training], key="sidebar")
        if model is None:
            st.caption(texts.NO_MODEL_SIDEBAR)
    if model is None:
        if training is not None:
            st.info(texts.FIRST_TRAINING)
            jobs_ui.progress_panel([training], key="sidebar")
        else:
            st.info(texts.NO_MODEL.format(graph=dataset_title(graph)))
        return None
    with st.sidebar:
        config = cache.config(model)
        st.caption(f"Data hash: `{str(config.get('data_hash', ''))[:16]}…`")
        with st.expander("Model config", expanded=False):
            st.json({k: config[k] for k in CONFIG_FIELDS if k in config}, expanded=True)
            if config.get("edit"):
                st.caption("What-if edit:")
                st.json(config["edit"], expanded=False)
    return model


def _training(graph: str, names: list[str], *, store: Path, data_dir: Path) -> Task[str] | None:
    """Start (synthetic: automatically) or offer (FB15k-237) the graph's default model; the task to poll, if any."""
    model_name = DEFAULT_MODEL_NAMES.get(graph)
    if model_name is None:
        return None
    # Calibrated by default (in the same background job, after the model is saved and usable): the lab
    # quotes every predicted change with its range, never a bare uncalibrated number.
    task = train_task(graph, out=store / model_name, data_dir=data_dir, calibrate=True)
    status = default_registry().latest(task.key)  # any session's: one training per model
    if status is not None and status.state is JobState.DONE:
        if model_name in names:
            return None
        if (store / model_name / "config.json").is_file():
            st.rerun()  # it was saved after this run listed the store
        status = None  # its model was removed since: it may be trained again
    if status is not None or model_name in names:
        return None if status is None else task
    if graph == "synthetic" and not names:
        start = True  # a fresh machine opens on the synthetic graph: train it without asking
    else:
        start = st.button(f"Train {model_name}", help=texts.TRAIN_HELP)
    if not start:
        return None
    # again: the model is missing, so a finished training of it is out of date.
    jobs_ui.submit(model_name, task, again=True)
    return task
