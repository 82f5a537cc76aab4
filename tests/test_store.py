"""The model store: round trip, atomic writes, partial directories, corrupt files, no pickle."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from kgbias_core.embeddings.pykeen_bridge import pykeen_model
from kgbias_core.embeddings.store import MODEL_FILES, list_models, load_model, read_config, save_model
from kgbias_core.errors import ModelStoreError


def test_round_trip_keeps_everything(tiny_model, tmp_path: Path) -> None:
    path = save_model(tiny_model, tmp_path)
    loaded = load_model(path)
    assert torch.equal(loaded.entity_embeddings, tiny_model.entity_embeddings)
    assert torch.equal(loaded.triples, tiny_model.triples)
    assert torch.equal(loaded.negatives, tiny_model.negatives)
    assert torch.equal(loaded.test_triples, tiny_model.test_triples)
    assert loaded.entity_labels == tiny_model.entity_labels
    assert loaded.entity_names == tiny_model.entity_names
    assert loaded.schema == tiny_model.schema and loaded.config == tiny_model.config
    config = read_config(path)
    assert config["data_hash"] == tiny_model.data_hash and config["seed"] == tiny_model.config.seed
    assert {"versions", "final_loss", "train_seconds"} <= set(config)
    header = (path / "entities.tsv").read_text().splitlines()[0]
    assert header == "id\tlabel\tname"


def test_pykeen_model_scores_like_the_stored_weights(tiny_model) -> None:
    module = pykeen_model(tiny_model)
    hrt = tiny_model.triples[:20]
    E, R = tiny_model.entity_embeddings, tiny_model.relation_embeddings
    expected = -((E[hrt[:, 0]] + R[hrt[:, 1]] - E[hrt[:, 2]]) ** 2).sum(-1)
    assert torch.allclose(module.score_hrt(hrt).squeeze(-1), expected, atol=1e-5)


def test_replacing_a_model_is_atomic_and_leaves_no_temporaries(tiny_model, tmp_path: Path) -> None:
    save_model(tiny_model, tmp_path)
    changed = replace(tiny_model, influence_scale=0.25)
    save_model(changed, tmp_path)
    assert load_model(tmp_path / tiny_model.name).influence_scale == 0.25
    assert [p.name for p in tmp_path.iterdir()] == [tiny_model.name]


def test_a_failed_write_keeps_the_old_model(tiny_model, tmp_path: Path) -> None:
    save_model(tiny_model, tmp_path)
    broken = replace(tiny_model, weights={"entity_embeddings": "not a tensor"})
    with pytest.raises(AttributeError):
        save_model(broken, tmp_path)
    assert torch.equal(load_model(tmp_path / tiny_model.name).entity_embeddings, tiny_model.entity_embeddings)
    assert list_models(tmp_path) == [tiny_model.name]


def test_partial_directories_are_never_listed_or_loaded(tiny_model, tmp_path: Path) -> None:
    path = save_model(tiny_model, tmp_path)
    partial = tmp_path / "half-written"
    shutil.copytree(path, partial)
    (partial / "training.safetensors").unlink()
    shutil.copytree(path, tmp_path / ".tmp-job-123")
    assert list_models(tmp_path) == [tiny_model.name]
    with pytest.raises(ModelStoreError, match="incomplete model directory, missing training.safetensors"):
        load_model(partial)
    with pytest.raises(ModelStoreError, match="no model at"):
        load_model(tmp_path / "nothing")


def test_corrupt_files_are_reported_not_unpickled(tiny_model, tmp_path: Path) -> None:
    path = save_model(tiny_model, tmp_path)
    # A pickle where the weights should be: safetensors refuses it, nothing is executed.
    torch.save({"entity_embeddings": torch.zeros(2)}, path / "model.safetensors")
    with pytest.raises(ModelStoreError, match=str(path)):
        load_model(path)
    path = save_model(tiny_model, tmp_path)
    (path / "config.json").write_text("{not json")
    with pytest.raises(ModelStoreError, match="config.json"):
        load_model(path)
    path = save_model(tiny_model, tmp_path)
    lines = (path / "entities.tsv").read_text().splitlines()
    (path / "entities.tsv").write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(ModelStoreError, match="entity_embeddings does not match the id maps"):
        load_model(path)


def test_model_files_are_the_documented_ones(tiny_model, tmp_path: Path) -> None:
    path = save_model(tiny_model, tmp_path)
    assert sorted(p.name for p in path.iterdir()) == sorted(MODEL_FILES)
    config = json.loads((path / "config.json").read_text())
    for key in ("dataset", "data_hash", "schema", "model", "dim", "epochs", "batch_size", "lr", "margin",
                "damping", "l2", "influence_scale", "seed", "versions", "final_loss", "train_seconds"):
        assert key in config, key
