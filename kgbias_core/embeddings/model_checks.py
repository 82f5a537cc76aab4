"""The consistency checks :func:`kgbias_core.embeddings.store.load_model` makes on a model directory's files.

Each names the file and what disagrees (``MODEL_CORRUPT`` / ``MODEL_DISAGREES``), so a damaged or hand-edited
model is refused with one line instead of failing later inside a measure.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch

from kgbias_core.embeddings.config import (
    CORRUPTIONS,
    DISTANCES,
    IMPORTED_MODELS,
    MODELS,
    NEGATIVE_ENTITIES,
    Calibration,
    TrainConfig,
)
from kgbias_core.errors import (
    MODEL_CORRUPT,
    MODEL_DISAGREES,
    UNKNOWN_CORRUPTION,
    UNKNOWN_DISTANCE,
    UNKNOWN_MODEL,
    UNKNOWN_NEGATIVE_ENTITIES,
    ModelStoreError,
)


def check_transe_dims(weights: dict[str, torch.Tensor], *, dim: int, path: Path) -> None:
    """TransE's vectors: [E, d] and [R, d] with config.json's d (h + r - t, Bordes eq. 1)."""
    entities, relations = weights["entity_embeddings"], weights["relation_embeddings"]
    if entities.ndim != 2 or relations.ndim != 2:
        problem = f"the vectors are not matrices (entities {list(entities.shape)}, relations {list(relations.shape)})"
        raise ModelStoreError(MODEL_DISAGREES.format(path=path, problem=problem))
    if entities.shape[1] != relations.shape[1]:
        problem = (f"entity vectors have dimension {entities.shape[1]}, relation vectors {relations.shape[1]} "
                   "(h + r - t needs one)")
        raise ModelStoreError(MODEL_DISAGREES.format(path=path, problem=problem))
    if entities.shape[1] != dim:
        problem = f"model.safetensors holds {entities.shape[1]}-dimensional vectors, config.json says dim {dim}"
        raise ModelStoreError(MODEL_DISAGREES.format(path=path, problem=problem))


def check_unique_labels(labels: tuple[str, ...], *, kind: str, path: Path) -> None:
    """Each label once: a label twice maps two rows to one name, and every lookup would take the first."""
    if len(set(labels)) == len(labels):
        return
    seen: set[str] = set()
    for i, label in enumerate(labels):
        if label in seen:
            file = "entities.tsv" if kind == "entity" else "relations.tsv"
            problem = f"{kind} label {label!r} appears twice in {file} (again at id {i})"
            raise ModelStoreError(MODEL_DISAGREES.format(path=path, problem=problem))
        seen.add(label)


def config_calibration(config: dict[str, Any], file: Path) -> Calibration | None:
    """The config's calibration (METHODS §4), checked; None where the model has none."""
    if config.get("calibration") is None:
        return None
    try:
        calibration = Calibration.from_dict(config["calibration"])
    except ValueError as exc:
        raise ModelStoreError(MODEL_CORRUPT.format(path=file, problem=f"'calibration' {exc}")) from None
    if config.get("influence_scale") != calibration.scale:
        problem = "'influence_scale' differs from the calibration's scale"
        raise ModelStoreError(MODEL_CORRUPT.format(path=file, problem=problem))
    return calibration


def config_train_config(config: dict[str, Any], file: Path) -> TrainConfig:
    """The training config of a config.json, each setting of the type its field's default has."""

    def corrupt(problem: str) -> ModelStoreError:
        return ModelStoreError(MODEL_CORRUPT.format(path=file, problem=problem))

    if not isinstance(config.get("schema"), dict):
        raise corrupt("'schema' is missing or not a JSON object")
    for key, default in TrainConfig().to_dict().items():
        value = config.get(key, default)
        if key == "damping" and value is None:
            continue
        numeric = isinstance(value, int | float) and not isinstance(value, bool)
        if isinstance(default, str):
            ok = isinstance(value, str)
        elif isinstance(default, int):
            ok = numeric and isinstance(value, int)
        else:
            ok = numeric and math.isfinite(value)
        if not ok:
            raise corrupt(f"{key!r} must be {type(default or 0.0).__name__}, found {value!r}")
    for key, low in (("dim", 1), ("batch_size", 1), ("epochs", 0), ("seed", 0), ("lr", 0), ("lr_min", 0),
                     ("margin", 0), ("l2", 0), ("negatives_per_triple", 1)):
        value = config.get(key)
        if value is not None and value < low:  # types checked above: int or finite float
            raise corrupt(f"{key!r} must be >= {low}, found {value!r}")
    for key in ("damping", "influence_scale"):
        value = config.get(key)
        if value is not None and not (isinstance(value, int | float) and not isinstance(value, bool)
                                      and math.isfinite(value) and value >= 0):
            raise corrupt(f"{key!r} must be a non-negative number or null, found {value!r}")
    if not isinstance(config.get("edit"), dict | None):
        raise corrupt(f"'edit' must be a JSON object or null, found {config['edit']!r}")
    train_config = TrainConfig.from_dict(config)
    if train_config.model not in (*MODELS, *IMPORTED_MODELS):
        raise corrupt(UNKNOWN_MODEL.format(model=train_config.model, known=", ".join((*MODELS, *IMPORTED_MODELS))))
    if train_config.distance not in DISTANCES:
        raise corrupt(UNKNOWN_DISTANCE.format(distance=train_config.distance, known=", ".join(DISTANCES)))
    if train_config.corruption not in CORRUPTIONS:
        raise corrupt(UNKNOWN_CORRUPTION.format(corruption=train_config.corruption, known=", ".join(CORRUPTIONS)))
    if train_config.negative_entities not in NEGATIVE_ENTITIES:
        raise corrupt(UNKNOWN_NEGATIVE_ENTITIES.format(draw=train_config.negative_entities,
                                                       known=", ".join(NEGATIVE_ENTITIES)))
    return train_config


def check_id_triples(tensor: torch.Tensor, *, key: str, n_entities: int, n_relations: int, file: Path) -> None:
    """``tensor`` is [n, 3] integer (head, relation, tail) ids inside the id maps."""
    if tensor.ndim != 2 or tensor.shape[1] != 3 or tensor.is_floating_point() or tensor.is_complex():
        problem = f"{key} is not integer triples [n, 3] (shape {list(tensor.shape)}, {tensor.dtype})"
        raise ModelStoreError(MODEL_CORRUPT.format(path=file, problem=problem))
    if tensor.numel() == 0:
        return
    entities, relations = tensor[:, [0, 2]], tensor[:, 1]
    if int(entities.min()) < 0 or int(entities.max()) >= n_entities or int(relations.min()) < 0 \
            or int(relations.max()) >= n_relations:
        problem = f"{key} names ids outside entities.tsv ({n_entities}) or relations.tsv ({n_relations})"
        raise ModelStoreError(MODEL_CORRUPT.format(path=file, problem=problem))


def check_negatives_count(negatives: torch.Tensor | None, *, n_triples: int, per_triple: int, file: Path) -> None:
    """``negatives`` (where stored) holds config.json's K negatives per training triple: [K n, 3], row j n + i
    the j-th of triple i (:mod:`kgbias_core.embeddings.objective`); a model of K = 1 stores [n, 3]."""
    if negatives is None or negatives.shape[0] == per_triple * n_triples:
        return
    problem = (f"negatives has {negatives.shape[0]} rows for {n_triples} training triples, config.json says "
               f"{per_triple} per triple ({per_triple * n_triples} rows)")
    raise ModelStoreError(MODEL_DISAGREES.format(path=file, problem=problem))
