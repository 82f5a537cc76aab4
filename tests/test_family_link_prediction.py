"""experiments/default_models/family_link_prediction.py (issue 24): one row per model and side, and a summary per
training config with the seed aside. Two families that differ only in their distance are two configs; a model
saved before ``distance`` was a setting still groups with its family."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
import torch

from kgbias_core.data.graph import KnowledgeGraph
from kgbias_core.embeddings.store import save_model
from kgbias_core.embeddings.training import train_model
from tests.conftest import FAMILY_TRAINING, load_script

SEEDS = (0, 1)


@pytest.fixture(scope="module")
def script():
    return load_script("experiments/default_models/family_link_prediction.py", "family_link_prediction")


@pytest.fixture(scope="module")
def two_families(tmp_path_factory: pytest.TempPathFactory, tiny_graph: KnowledgeGraph) -> list[Path]:
    """Squared L2 and L1, seeds 0 and 1 each, every other setting the same."""
    store = tmp_path_factory.mktemp("families")
    paths = []
    for distance in ("squared_l2", "l1"):
        for seed in SEEDS:
            config = replace(FAMILY_TRAINING, distance=distance, seed=seed)
            model = train_model(tiny_graph, config, name=f"{distance}-s{seed}", device=torch.device("cpu"))
            save_model(model, store)
            paths.append(store / model.name)
    return paths


def pooled(rows: pd.DataFrame) -> pd.DataFrame:
    return rows[(rows["side"] == "both") & (rows["queries"] == "all")]


def test_two_distances_are_two_configs_each_with_its_seeds(script, two_families: list[Path]) -> None:
    rows = pd.concat([script.model_rows(path, device="cpu") for path in two_families], ignore_index=True)
    result = script.summary(rows).set_index("distance")
    assert sorted(result.index) == ["l1", "squared_l2"]
    assert (result["seeds"] == len(SEEDS)).all()
    # The mean and the range of each family, from its own models' rows (by name, not by the summary's keys).
    for distance in ("squared_l2", "l1"):
        mine = pooled(rows[rows["model_name"].str.startswith(distance)])
        assert len(mine) == len(SEEDS)
        assert result.loc[distance, "mrr"] == pytest.approx(mine["mrr"].mean())
        assert result.loc[distance, "mrr_min"] == pytest.approx(mine["mrr"].min())
        assert result.loc[distance, "hits10_max"] == pytest.approx(mine["hits@10"].max())
    assert result.loc["l1", "mrr"] != result.loc["squared_l2", "mrr"]


def test_a_model_saved_before_distance_was_a_setting_groups_without_it(script, two_families: list[Path],
                                                                        tmp_path: Path) -> None:
    old = []
    for path in two_families[:len(SEEDS)]:  # the squared-L2 family, its configs without the key
        copy = tmp_path / path.name
        copy.mkdir()
        for file in path.iterdir():
            if file.is_file():
                (copy / file.name).write_bytes(file.read_bytes())
        config = json.loads((copy / "config.json").read_text())
        config.pop("distance")
        (copy / "config.json").write_text(json.dumps(config))
        old.append(copy)
    rows = pd.concat([script.model_rows(path, device="cpu") for path in old], ignore_index=True)
    assert rows["distance"].isna().all()
    result = script.summary(rows)
    assert "distance" not in result.columns
    assert len(result) == 1 and result["seeds"].iloc[0] == len(SEEDS)
