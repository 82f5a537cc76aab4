"""Background training of the built-in graphs' default models (no Streamlit here: the job runs on
the job registry's worker thread and reports through its Progress)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kgbias_core.data.datasets import load_dataset
from kgbias_core.data.graph import KnowledgeGraph
from kgbias_core.embeddings.config import TrainConfig, default_train_config
from kgbias_core.embeddings.store import save_model
from kgbias_core.embeddings.training import train_model
from kgbias_core.jobs import Progress

#: Name in the model store of each built-in graph's default model.
DEFAULT_MODEL_NAMES = {"synthetic": "synthetic-transe", "fb15k237": "fb15k237-transe", "fb13": "fb13-transe"}


def load_graph(dataset: str, data_dir: Path) -> KnowledgeGraph:
    """The graph to train on (tests replace this with a tiny graph)."""
    return load_dataset(dataset, data_dir=data_dir)


def train_config(dataset: str) -> TrainConfig:
    """The training config of the default model (tests replace this with a tiny config)."""
    return default_train_config(dataset)


def training_job(dataset: str, *, store: Path, data_dir: Path) -> Callable[[Progress], str]:
    """A job for :meth:`JobRegistry.submit`: load ``dataset``, train its default model, save it.

    Returns the saved model directory. Module-level ``load_graph`` and ``train_config`` are
    looked up when the job runs.
    """

    def run(progress: Progress) -> str:
        progress.update(stage="loading data", message=f"reading the {dataset} graph")
        graph = load_graph(dataset, data_dir)
        model = train_model(
            graph,
            train_config(dataset),
            name=DEFAULT_MODEL_NAMES[dataset],
            on_epoch=progress.as_callback(),
            should_stop=progress.should_stop,
        )
        progress.update(stage="saving", message=f"writing {DEFAULT_MODEL_NAMES[dataset]} to {store}")
        return str(save_model(model, store))

    return run
