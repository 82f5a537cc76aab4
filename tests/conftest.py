"""Shared fixtures: a tiny seeded people graph and a TransE model trained on it (session-wide)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from kgbias_core.data.graph import KnowledgeGraph
from kgbias_core.data.synthetic import SyntheticConfig, generate_people_graph
from kgbias_core.embeddings.config import TrainConfig
from kgbias_core.embeddings.store import StoredModel, save_model
from kgbias_core.embeddings.training import train_model

REPO = Path(__file__).resolve().parents[1]
#: Small enough to train in about a second on one CPU core, big enough for every group to exist.
TINY_GRAPH = SyntheticConfig(n_persons=600, seed=7, other_gender_share=0.02)
TINY_TRAINING = TrainConfig(dim=16, epochs=25, batch_size=256, lr=1e-2, l2=10.0, seed=3)


def data_dir() -> Path:
    """The shared data directory (CI sets KGBIAS_DATA_DIR=../shared/data)."""
    return Path(os.environ.get("KGBIAS_DATA_DIR") or REPO.parent / "shared" / "data")


@pytest.fixture(scope="session", autouse=True)
def _few_threads() -> None:
    torch.set_num_threads(2)


@pytest.fixture(scope="session")
def tiny_graph() -> KnowledgeGraph:
    return generate_people_graph(TINY_GRAPH)


@pytest.fixture(scope="session")
def tiny_model(tiny_graph: KnowledgeGraph) -> StoredModel:
    return train_model(tiny_graph, TINY_TRAINING, name="tiny-transe", device=torch.device("cpu"))


@pytest.fixture(scope="session")
def tiny_store(tmp_path_factory: pytest.TempPathFactory, tiny_model: StoredModel) -> Path:
    """A model store holding the tiny model as ``tiny-transe`` (read-only for tests: copy to edit)."""
    store = tmp_path_factory.mktemp("store")
    save_model(tiny_model, store)
    return store
