"""Training, importing and naming models; the estimates shown before a training starts."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from kgbias_core.data.datasets import load_dataset
from kgbias_core.data.graph import KnowledgeGraph
from kgbias_core.device import resolve_device
from kgbias_core.embeddings.config import RANDOM_FORMAT, TrainConfig, default_train_config
from kgbias_core.embeddings.store import (
    check_output,
    save_model,
)
from kgbias_core.embeddings.training import graph_labels, graph_model, train_model
from kgbias_core.errors import FAMILY_KEPT, MeasureError
from kgbias_core.jobs import Progress
from kgbias_core.tasks.base import Task, _key
from kgbias_core.tasks.calibration import _calibrated, store_calibration

#: The kind of a built-in graph's default model (the one influence needs).
DEFAULT_MODEL_KIND = "transe"


# --- training ------------------------------------------------------------------------------------
def model_name(dataset: str, kind: str = DEFAULT_MODEL_KIND) -> str:
    """Store name of ``dataset``'s model of kind ``kind`` ("fb15k237-rotate")."""
    return f"{dataset}-{kind}"


#: Name in the model store of each built-in graph's default model.
DEFAULT_MODEL_NAMES = {dataset: model_name(dataset) for dataset in ("synthetic", "fb15k237", "fb13")}


def load_graph(
    dataset: str, data_dir: Path | str | None, *, schema: str | None = None, names: str | None = None,
    inverse_occupation: bool = False,
) -> KnowledgeGraph:
    """The graph to train on (tests replace this with a tiny graph)."""
    return load_dataset(dataset, data_dir=data_dir, schema=schema, names=names, inverse_occupation=inverse_occupation)


def train_config(dataset: str) -> TrainConfig:
    """The training config of ``dataset``'s default model (tests replace this with a tiny config)."""
    return default_train_config(dataset)


def train_task(
    dataset: str,
    *,
    out: Path,
    data_dir: Path | str | None = None,
    schema: str | None = None,
    names: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    calibrate: bool = False,
    overwrite: bool = False,
    inverse_occupation: bool = False,
    device: torch.device | str | None = None,
) -> Task[str]:
    """Train a model on ``dataset``'s training split and save it as the model directory ``out``.

    The config is the dataset's default (:func:`train_config`, looked up when the task runs) with
    ``overrides`` (model kind, dim, epochs, ...), so every kind sees the same data and split.
    ``calibrate`` (TransE only) then fits the influence calibration and stores it in the saved model,
    with the runs it was fitted on (:func:`saved_calibration_runs`). The task returns the directory.
    ``out`` is checked before the data is read (:func:`check_output`): an existing model there is
    replaced only with ``overwrite``, anything else never, so a refused ``out`` costs no training.
    One job per model directory: the key is ``out``. ``inverse_occupation`` trains on the graph with
    the inverse of the occupation relation added (:func:`kgbias_core.data.graph.with_inverse_occupation`).
    ``device`` (every task's): as :func:`kgbias_core.device.resolve_device` takes it (None: ``KGBIAS_DEVICE``,
    else auto); training and measures run there, retrains on the base's kind of device.
    """
    device = resolve_device(device)

    def run(progress: Progress) -> str:
        check_output(out, overwrite=overwrite)
        # No message while reading: a graph that cannot be read is the only line a user sees.
        progress.update(stage="loading data")
        graph = load_graph(dataset, data_dir, schema=schema, names=names, inverse_occupation=inverse_occupation)
        progress.update(message=f"read {graph.name}: {graph.training.num_triples} training triples, "
                                f"{graph.training.num_entities} entities, {graph.training.num_relations} relations")
        config = replace(train_config(graph.name), **(overrides or {}))
        from kgbias_core.embeddings.training_cost import check_retrain_fits
        from kgbias_core.influence.calibration import CALIBRATION_OCCUPATIONS

        check_retrain_fits(what="training" + (" with calibration" if calibrate else ""),
                           n_triples=graph.training.num_triples, n_entities=graph.training.num_entities,
                           n_relations=graph.training.num_relations, dim=config.dim, batch_size=config.batch_size,
                           epochs=config.epochs, retrains=1 + (1 + 2 * CALIBRATION_OCCUPATIONS) * calibrate,
                           optimizer=config.optimizer, negatives=config.negatives_per_triple,
                           distance=config.distance)
        # The stage clock starts now, so that the time left is estimated from the epochs alone.
        progress.update(stage="training", step=0, total=config.epochs, message=f"training {config.model}")
        model = train_model(graph, config, name=out.name, device=device, on_epoch=progress.as_callback(),
                            should_stop=progress.should_stop)
        progress.update(stage="saving", message=f"writing {out.name} to {out.parent}")
        path = save_model(model, out.parent, overwrite=overwrite)
        if calibrate and config.model == "transe":
            # Saved first: the model is usable (ranking only) while its calibration runs.
            try:
                calibrated, runs = _calibrated(model.to(device), progress)
            except MeasureError as exc:  # a graph too small to calibrate: the model itself is fine
                progress.update(stage="saved", message=f"saved, not calibrated: {exc}")
            else:
                store_calibration(path, calibrated.calibration, runs)
        return str(path)

    return Task(key=_key("train", out=str(out)), run=run)


def train_family_task(
    dataset: str,
    *,
    out: Path,
    seeds: int,
    data_dir: Path | str | None = None,
    schema: str | None = None,
    names: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    inverse_occupation: bool = False,
    device: torch.device | str | None = None,
    from_existing: bool = False,
) -> Task[list[str]]:
    """Train ``seeds`` seeds of one config as a seed family (:func:`kgbias_core.families.train_family`): ``out``
    itself for the config's seed, ``out.parent/<out.name>-s<seed>`` for seed + 1, ..., each an ordinary model.
    The config is :func:`train_task`'s (the data set's default with ``overrides``); with ``from_existing``, the
    config of the model already at ``out`` where there is one (its siblings join it: ``prepare`` and the
    sidebar make the default model a family this way). Members already in the store as this training would
    make them are kept (:func:`~kgbias_core.families.train_family`). ``device`` as :func:`train_task`'s.
    -> the members' directories. One job per family: the key is ``out`` and ``seeds``.
    """
    from kgbias_core.embeddings.store import is_model_dir, load_model
    from kgbias_core.embeddings.training_cost import check_retrain_fits
    from kgbias_core.families import train_family

    device = resolve_device(device)

    def run(progress: Progress) -> list[str]:
        progress.update(stage="loading data")
        graph = load_graph(dataset, data_dir, schema=schema, names=names, inverse_occupation=inverse_occupation)
        if from_existing and is_model_dir(out):
            config = load_model(out).config  # the default model's own config, whatever the defaults are now
        else:
            config = replace(train_config(graph.name), **(overrides or {}))
        check_retrain_fits(what=f"a family of {seeds} seeds", n_triples=graph.training.num_triples,
                           n_entities=graph.training.num_entities, n_relations=graph.training.num_relations,
                           dim=config.dim, batch_size=config.batch_size, epochs=config.epochs, retrains=seeds,
                           optimizer=config.optimizer, negatives=config.negatives_per_triple,
                           distance=config.distance)

        def on_member(member: str, i: int, n: int) -> None:
            # The stage clock restarts per member: the time left is that member's.
            progress.update(stage=f"training {i + 1} of {n}", step=0, total=config.epochs,
                            message=f"training {member}")

        paths = train_family(graph, config, name=out.name, seeds=[config.seed + i for i in range(seeds)],
                             store=out.parent, overwrite=overwrite, device=device, on_member=on_member,
                             on_epoch=progress.as_callback(), should_stop=progress.should_stop)
        progress.update(stage="saved", message=f"family {out.name}: {', '.join(p.name for p in paths)}")
        return [str(p) for p in paths]

    # Cancelled between members, the members already saved stay: never "nothing was saved" (issue 26).
    return Task(key=_key("train_family", out=str(out), seeds=seeds), run=run,
                kept=FAMILY_KEPT.format(name=Path(out).name))


def import_task(
    fmt: str,
    *,
    path: Path | None,
    graph: str,
    out: Path,
    data_dir: Path | str | None = None,
    schema: str | None = None,
    names: str | None = None,
    distance: str | None = None,
    trust_pickle: bool = False,
    overwrite: bool = False,
    dim: int = 64,
    seed: int = 0,
) -> Task[str]:
    """Import embeddings trained elsewhere (``fmt``: :data:`~kgbias_core.embeddings.config.IMPORT_FORMATS`)
    as the model directory ``out`` over ``graph``, the triples they were trained on (a data set name
    or a user graph, as for :func:`train_task`). The task returns the directory.

    The model keeps its engine's distance (``config.distance``), or for PyTorch-BigGraph the kind that
    scores as PBG does (``config.model``: transe, distmult, complex or pbg, with ``info["pbg"]``: operator,
    comparator, side, max_norm), and has no frozen negatives (``info``: ``imported_from``,
    ``"negatives": "none"``): on TransE influence re-draws them (approximate,
    :mod:`kgbias_core.influence.negatives`), retrains refuse it with a named error, and every other
    measure works. ``out`` is checked before anything is read.

    ``fmt`` :data:`~kgbias_core.embeddings.config.RANDOM_FORMAT` reads no files (``path`` None): random,
    untrained ``dim``-dimensional vectors, TransE's own initialisation drawn from ``seed``
    (:func:`~kgbias_core.embeddings.training.initial_embeddings`), for graphs too large to train here
    (20M triples on a CPU): every measure and the app run on the model's sizes, none of its numbers
    means anything; config.json records ``"imported_from": "random"``, ``"untrained": true``, ``epochs`` 0.
    """
    def run(progress: Progress) -> str:
        check_output(out, overwrite=overwrite)
        progress.update(stage="loading data")
        kg = load_graph(graph, data_dir, schema=schema, names=names)
        if fmt == RANDOM_FORMAT:
            weights, config, info = _random_vectors(kg, dim=dim, seed=seed, progress=progress)
        else:
            weights, config, info = _read_vectors(fmt, path, kg, distance=distance, trust_pickle=trust_pickle,
                                                  progress=progress)
        model = graph_model(kg, config, name=out.name, negatives=None, weights=weights, info=info)
        progress.update(stage="saving", message=f"writing {out.name} to {out.parent}")
        return str(save_model(model, out.parent, overwrite=overwrite))

    return Task(key=_key("import", out=str(out)), run=run)


def _random_vectors(kg: KnowledgeGraph, *, dim: int, seed: int,
                    progress: Progress) -> tuple[dict, TrainConfig, dict[str, Any]]:
    """(weights, config, info) of random, untrained TransE vectors drawn from ``seed``, rows in the graph's id order."""
    from kgbias_core.embeddings.training import initial_embeddings

    progress.update(stage="drawing", message=f"read {kg.name}: {kg.training.num_triples:,} training "
                                             f"triples; drawing random {dim}-dimensional vectors (seed {seed})")
    entities, relations = initial_embeddings(n_entities=kg.training.num_entities,
                                             n_relations=kg.training.num_relations, dim=dim, seed=seed)
    info = {"imported_from": RANDOM_FORMAT, "untrained": True, "negatives": "none", "train_seconds": 0.0,
            "source": f"random uniform(-6/sqrt(d), 6/sqrt(d)), seed {seed}"}
    return ({"entity_embeddings": entities, "relation_embeddings": relations},
            TrainConfig(model="transe", dim=dim, epochs=0, seed=seed), info)


def _read_vectors(fmt: str, path: Path | None, kg: KnowledgeGraph, *, distance: str | None, trust_pickle: bool,
                  progress: Progress) -> tuple[dict, TrainConfig, dict[str, Any]]:
    """(weights, config, info) of the ``fmt`` embeddings at ``path``, rows in the graph's id order."""
    from kgbias_core.embeddings.importers import READERS, onto_graph, pickle_to_read
    from kgbias_core.embeddings.pykeen_bridge import imported_weights
    from kgbias_core.errors import IMPORT_PICKLE_TRUSTED
    from kgbias_core.influence.negatives import import_negatives_per_triple

    progress.update(stage="reading", message=f"read {kg.name}: {kg.training.num_triples} training triples; "
                                             f"reading the {fmt} embeddings at {path}")
    pickled = pickle_to_read(fmt, path) if trust_pickle else None
    if pickled is not None:  # said before unpickling: the file's code runs during the read
        progress.update(message=IMPORT_PICKLE_TRUSTED.format(path=pickled))
    imported = READERS[fmt](path, distance=distance, trust_pickle=trust_pickle)
    for warning in imported.warnings:
        if pickled is None or warning != IMPORT_PICKLE_TRUSTED.format(path=pickled):
            progress.update(message=warning)
    entity_labels, relation_labels = graph_labels(kg)
    entities, relations = onto_graph(imported, entity_labels=entity_labels, relation_labels=relation_labels,
                                     graph=kg.name)
    margin = TrainConfig.margin if imported.margin is None else imported.margin
    # PyKEEN's ComplEx dimension counts complex numbers: its real rows hold (re, im) pairs.
    model_dim = int(entities.shape[1]) // (2 if imported.model == "complex" else 1)
    # a TransE's influence and what-ifs re-draw this many negatives a triple (the engine's were fresh every batch)
    negatives = import_negatives_per_triple(kg.training.num_triples) if imported.model == "transe" else 1
    config = TrainConfig(model=imported.model, dim=model_dim, epochs=0, margin=margin, distance=imported.distance,
                         negatives_per_triple=negatives)
    digest = hashlib.sha256(entities.numpy().tobytes() + relations.numpy().tobytes()).hexdigest()
    if imported.model == "transe":
        weights = {"entity_embeddings": entities, "relation_embeddings": relations}
    else:
        weights = imported_weights(imported.model, entities=entities, relations=relations, dim=model_dim,
                                   triples=kg.training.mapped_triples, pbg=imported.pbg)
    info = {"imported_from": fmt, "negatives": "none", "source": str(path), "source_hash": digest,
            "unpickled": bool(imported.warnings), "train_seconds": 0.0,
            **({"sign": imported.sign} if imported.sign else {}),
            **({"pbg": imported.pbg} if imported.pbg else {})}
    return weights, config, info


def graph_size(dataset: str, data_dir: Path | str | None) -> tuple[int, int, int]:
    """(training triples, entities, relations) of ``dataset``: a named graph's train.txt is counted without
    building the graph; any other is loaded (:func:`load_graph`)."""
    from kgbias_core.data.datasets import NAMED_DATASETS, resolve_data_dir

    train = resolve_data_dir(data_dir) / dataset / "train.txt"
    if dataset in NAMED_DATASETS and train.is_file():
        entities, relations, n = set(), set(), 0
        with train.open(encoding="utf-8") as lines:
            for line in lines:
                parts = line.rstrip("\n").split("\t")
                if len(parts) == 3:
                    entities.update((parts[0], parts[2]))
                    relations.add(parts[1])
                    n += 1
        return n, len(entities), len(relations)
    graph = load_graph(dataset, data_dir)
    return graph.training.num_triples, graph.training.num_entities, graph.training.num_relations


def training_seconds(dataset: str, data_dir: Path | str | None, *, overrides: Mapping[str, Any] | None = None) -> float:
    """Estimated seconds to train ``dataset``'s default model (with ``overrides``) on this machine."""
    from kgbias_core.embeddings.training_cost import estimated_seconds

    n_triples, n_entities, n_relations = graph_size(dataset, data_dir)
    config = replace(train_config(dataset), **(overrides or {}))
    return estimated_seconds(n_triples=n_triples, n_entities=n_entities, n_relations=n_relations, dim=config.dim,
                             batch_size=config.batch_size, epochs=config.epochs,
                             negatives=config.negatives_per_triple, distance=config.distance)


