"""The top of every page: its title and the sidebar's knowledge graph, model, device and config.

:func:`page_header` returns the selected model (a :class:`~kgbias_app.cache.ModelRef`) and stops
the page while there is none yet. Without any cached model for the synthetic graph, a training job
starts by itself; every other graph with data but no model (FB15k-237, FB13) is offered with a button
that says how long it takes. The training job ends when the model is saved: the waiting page polls the
store and opens the dashboard, in every open session. Follow-up work (the two prediction audits) runs as
background work only when it takes a few minutes; longer, it is offered with its estimate. The job
queue is shown at the bottom of the sidebar on every page.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st
import torch

from kgbias_app import cache, jobs_ui, links, presenter, reruns, texts
from kgbias_app.cache import ModelRef
from kgbias_app.escape import md
from kgbias_core import tasks
from kgbias_core.data.datasets import available_datasets, dataset_title, has_dataset, resolve_data_dir
from kgbias_core.device import describe_device
from kgbias_core.embeddings.config import DEFAULT_FAMILY_SEEDS
from kgbias_core.embeddings.store import default_store
from kgbias_core.errors import DeviceError
from kgbias_core.families import family_record
from kgbias_core.jobs import FINISHED_STATES, JobState, Priority, default_registry
from kgbias_core.tasks import DEFAULT_MODEL_NAMES, Task, train_task

#: Config fields shown in the sidebar, in this order.
CONFIG_FIELDS = (
    "model", "distance", "negatives_per_triple", "corruption", "negative_entities", "dim", "epochs", "batch_size", "lr",
    "margin", "l2",
    "seed", "damping", "influence_scale", "final_loss", "train_seconds", "device",
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


#: Most seeds the sidebar trains as one family (each a full training).
MAX_FAMILY_SEEDS = 10

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
    st.session_state["chart_model"] = model  # widgets.chart_title names it in exported charts
    with st.sidebar:
        jobs_ui.queue_panel()
    if model is None:
        st.stop()
    return model


def _render() -> ModelRef | None:
    store, data_dir = default_store(), resolve_data_dir()
    models = list(cache.catalog().values())
    graphs = available_datasets(data_dir)
    graphs += sorted({m.dataset for m in models} - set(graphs) - {""})
    with st.sidebar:
        presenter.presenter_toggle()
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
        if graph in DEFAULT_MODEL_NAMES:
            await_model(str(store / DEFAULT_MODEL_NAMES[graph]))
        return None
    with st.sidebar:
        follow_up(model)
        readiness_panel(graph, store=store, data_dir=data_dir)
        family_panel(graph, store=store, data_dir=data_dir)
    with st.sidebar:
        config = cache.config(model)
        st.caption(f"Data hash: `{str(config.get('data_hash', ''))[:16]}…`")
        with st.expander("Model config", expanded=False):
            st.json({k: config[k] for k in CONFIG_FIELDS if k in config}, expanded=True)
            if config.get("edit"):
                st.caption("What-if edit:")
                st.json(config["edit"], expanded=False)
    return model


@st.cache_data(max_entries=16, show_spinner="Estimating the training time…")
def training_seconds(graph: str, data_dir: str) -> float:
    """:func:`kgbias_core.tasks.training_seconds`, once per graph and data directory."""
    return tasks.training_seconds(graph, data_dir)


def _training(graph: str, names: list[str], *, store: Path, data_dir: Path) -> Task[str] | None:
    """Start (synthetic: automatically) or offer (any other graph with data) the graph's default model, with
    its time estimate; the task to poll, if any. The job ends when the model is saved (no calibration in it)."""
    model_name = DEFAULT_MODEL_NAMES.get(graph)
    if model_name is None or not has_dataset(graph, data_dir) or model_name in names:
        return None
    task = train_task(graph, out=store / model_name, data_dir=data_dir)
    status = default_registry().latest(task.key)  # any session's: one training per model
    if status is not None and status.state is JobState.DONE:
        if (store / model_name / "config.json").is_file():
            reruns.rerun_app()  # it was saved after this run listed the store
        status = None  # its model was removed since: it may be trained again
    if status is not None and status.state not in FINISHED_STATES:
        return task  # queued or running: no button, the panel shows its progress
    seconds = training_seconds(graph, str(data_dir))
    if graph == "synthetic" and not names and status is None:
        start = True  # a fresh machine opens on the synthetic graph: train it without asking
    else:
        start = st.button(texts.TRAIN_BUTTON.format(name=model_name, estimate=texts.duration(seconds)),
                          help=texts.TRAIN_HELP, key=f"train:{model_name}")
        st.caption(texts.TRAIN_ESTIMATE.format(graph=dataset_title(graph), estimate=texts.duration(seconds)))
    if not start:
        return task if status is not None else None  # a stopped one: the panel says how (to whom it concerns)
    # again: the model is missing, so a finished training of it is out of date.
    jobs_ui.submit(model_name, task, again=True, estimate=seconds)
    st.rerun()  # the button goes: the training is now running


def readiness_panel(graph: str, *, store: Path, data_dir: Path) -> None:
    """What a demo of ``graph`` shows and whether it is in the store (:func:`kgbias_core.tasks.readiness`)."""
    if graph not in DEFAULT_MODEL_NAMES:
        return
    items = tasks.readiness(graph, store=store, data_dir=data_dir)
    needed = [i for i in items if not i.optional]
    ready = sum(i.ready for i in needed)
    with st.expander(texts.READINESS_HEADING.format(ready=ready, n=len(needed)), expanded=False):
        for item in items:
            mark = "✅" if item.ready else ("➖" if item.optional else "⏳")
            st.caption(f"{mark} {item.what}" + ("" if item.ready or not item.optional else " (optional, long)"))
        if ready < len(needed):
            st.caption(texts.READINESS_PREPARE.format(graph=graph))


@st.cache_data(max_entries=16, show_spinner="Estimating the training time…")
def stored_training_seconds(path: str, version: int) -> float | None:
    """One training of the stored model at ``path`` (``version``: its config's time, the cache's key), from its own
    config: :func:`kgbias_core.tasks.model_retrain_seconds` (its dimension, epochs, batch, negatives and distance;
    eight negatives or pseudo-Huber cost more a step)."""
    return tasks.model_retrain_seconds(path)


def family_panel(graph: str, *, store: Path, data_dir: Path) -> None:
    """Train ``graph``'s default model as a seed family (:mod:`kgbias_core.families`): N seeds of its config
    through the job queue, the default model the first of them; the estimate, N x one training, before the click."""
    name = DEFAULT_MODEL_NAMES.get(graph)
    if name is None or not has_dataset(graph, data_dir):
        return
    with st.expander(texts.FAMILY_HEADING.format(name=name), expanded=False):
        seeds = int(st.number_input(texts.FAMILY_SEEDS, 2, MAX_FAMILY_SEEDS, DEFAULT_FAMILY_SEEDS, key="family_seeds",
                                    help=texts.FAMILY_SEEDS_HELP))
        task = tasks.train_family_task(graph, out=store / name, seeds=seeds, data_dir=data_dir, from_existing=True)
        if jobs_ui.is_running(task):
            jobs_ui.progress_panel([task], key="family")
            return
        base = store / name
        ref = cache.catalog().get(name)
        config = cache.config(ref) if ref is not None else {}
        if config:
            ready, detail = tasks.family_item(base, seeds=seeds)
            st.caption(("✅ " if ready else "") + md(detail))
            if ready:
                return
        # One training of the default model's own config where it is stored (one home for reading a stored config's
        # cost, as the lab's retrains read it), else of the graph's default one.
        stored = stored_training_seconds(ref.path, ref.version) if config and ref is not None else None
        one = stored if stored is not None else training_seconds(graph, str(data_dir))
        first = int(config["seed"]) if config else tasks.training.train_config(graph).seed
        wanted = family_record(name, [first + i for i in range(seeds)])["members"]
        left = sum(not (store / member / "config.json").is_file() for member in wanted)
        st.caption(texts.FAMILY_ESTIMATE.format(n=seeds, one=texts.duration(one), total=texts.duration(seeds * one),
                                                left=left, remaining=texts.duration(left * one)))
        if st.button(texts.FAMILY_BUTTON.format(n=seeds, estimate=texts.duration(left * one)), key="train_family",
                     help=texts.FAMILY_HELP):
            # again: members are missing, so a finished training of this family is out of date.
            jobs_ui.submit(f"{name}: family of {seeds} seeds", task, again=True, estimate=left * one)
            st.rerun()


@st.fragment(run_every=1)
def await_model(path: str) -> None:
    """Poll the store for the model at ``path`` (trained here, by another session or by ``kgbias prepare``)
    and rerun the app the moment it is saved, so the dashboard opens without a refresh."""
    if (Path(path) / "config.json").is_file():
        reruns.rerun_app()


def follow_up(model: ModelRef) -> None:
    """After a default TransE model is saved: the one-retrain audits of its what-if predictions, of a removal
    (:func:`~kgbias_core.tasks.prediction_audit_task`) and of an addition (:func:`~kgbias_core.tasks.add_audit_task`),
    each as background work when it is estimated at a few minutes (:data:`~kgbias_core.tasks.AUTO_BACKGROUND_SECONDS`),
    else offered in the lab. The 13-retrain calibration of the old closed form is never started unasked (issue 25):
    the lab's prediction does not need it."""
    if model.is_whatif or model.kind != "transe" or DEFAULT_MODEL_NAMES.get(model.dataset) != model.name:
        return
    running = False
    audits = ((tasks.saved_prediction_audit, tasks.prediction_audit_task, texts.AUDIT_JOB,
               tasks.prediction_audit_seconds),
              (tasks.saved_add_audit, tasks.add_audit_task, texts.ADD_AUDIT_JOB, tasks.add_audit_seconds))
    for saved, make, job, estimate in audits:
        if saved(model.path) is not None:
            continue
        task = make(model.path)
        status = default_registry().latest(task.key)
        seconds = estimate(model.path) if status is None else None  # the removal audit's includes its T search
        if status is None and seconds is not None and seconds <= tasks.AUTO_BACKGROUND_SECONDS:
            jobs_ui.submit(job.format(name=model.name), task, priority=Priority.BACKGROUND, estimate=seconds)
            status = default_registry().latest(task.key)
        running = running or (status is not None and status.state not in FINISHED_STATES)
    if running:
        st.caption(texts.FOLLOW_UP_RUNNING.format(name=model.name))
