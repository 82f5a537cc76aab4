"""Background jobs of the model-comparison page (no Streamlit here: they run on the job registry's
worker thread and report through their Progress).

Every job writes its result into the model store (a model, or a table cached beside a model with
:func:`kgbias_core.store.save_result`); the page reads it from there, so a finished job needs no
result kept in the registry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from kgbias_app import training_jobs
from kgbias_core.embeddings.store import save_model
from kgbias_core.embeddings.training import train_model
from kgbias_core.evaluation.link_prediction import cached_link_prediction
from kgbias_core.jobs import Progress
from kgbias_core.measures.relation_audit import cached_value_audit


def model_name(dataset: str, model: str) -> str:
    """Store name of ``dataset``'s model of kind ``model`` ("fb15k237-rotate")."""
    return f"{dataset}-{model}"


def training_job(dataset: str, model: str, *, store: Path, data_dir: Path) -> Callable[[Progress], str]:
    """Train ``model`` (transe | distmult | complex | rotate) on ``dataset``'s graph and split, save it.

    The config is the default model's (``training_jobs.train_config``, looked up when the job runs)
    with only the model kind replaced, so every kind sees the same data, split, dimension and epochs.
    """

    def run(progress: Progress) -> str:
        name = model_name(dataset, model)
        progress.update(stage="loading data", message=f"reading the {dataset} graph")
        graph = training_jobs.load_graph(dataset, data_dir)
        config = replace(training_jobs.train_config(dataset), model=model)
        trained = train_model(graph, config, name=name, on_epoch=progress.as_callback(),
                              should_stop=progress.should_stop)
        progress.update(stage="saving", message=f"writing {name} to {store}")
        return str(save_model(trained, store))

    return run


def link_prediction_job(model_dir: str) -> Callable[[Progress], None]:
    """Filtered MRR and Hits@k of a stored model, cached beside it (:func:`cached_link_prediction`)."""

    def run(progress: Progress) -> None:
        progress.update(stage="ranking test triples", message=f"filtered tail ranks of {Path(model_dir).name}")
        cached_link_prediction(model_dir)

    return run


def audit_job(model_dir: str, params: dict[str, object]) -> Callable[[Progress], None]:
    """Keidar et al.'s per-value relation audit of a stored model, cached beside it."""

    def run(progress: Progress) -> None:
        def on_step(done: int, total: int, relation: str) -> None:
            progress.update(stage="auditing relations", step=done, total=total, message=f"relation {relation}")

        progress.update(stage="classifying occupations", message=f"{params['kind']} on {Path(model_dir).name}")
        cached_value_audit(model_dir, **params, on_step=on_step, should_stop=progress.should_stop)

    return run
