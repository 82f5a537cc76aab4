"""Every long job of kgbias as a :class:`Task`: ``run(progress)`` plus the key naming the work.

The command line runs a task directly, printing its progress; the pages submit it to the
process-wide :class:`kgbias_core.jobs.JobRegistry` under its key, so two sessions asking for the
same work share one job. A task reports through its :class:`Progress` and stops when asked to,
between epochs or retrains. Base models are only read; a trained model or what-if is saved
atomically at the end, so a failed or cancelled task leaves nothing under a model's name. Results
that a page shows later are cached beside the model (:func:`kgbias_core.embeddings.store.save_result`),
each read back by the ``saved_*`` function next to the task that writes it.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Generic, TypeVar

import pandas as pd
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.data.datasets import load_dataset
from kgbias_core.data.graph import KnowledgeGraph
from kgbias_core.device import resolve_device
from kgbias_core.embeddings.config import RANDOM_FORMAT, TrainConfig, default_train_config
from kgbias_core.embeddings.store import (
    StoredModel,
    check_output,
    count_rows,
    is_model_dir,
    list_models,
    load_model,
    load_result,
    model_fingerprint,
    model_version,
    read_config,
    save_model,
    save_result,
)
from kgbias_core.embeddings.training import graph_labels, graph_model, train_model
from kgbias_core.errors import (
    CALIBRATION_CANCELLED,
    CALIBRATION_KEPT,
    LAB_K_TOO_LARGE,
    LAB_NO_KS,
    NOTHING_SAVED,
    CancelledError,
    MeasureError,
    ModelStoreError,
)
from kgbias_core.evaluation.link_prediction import cached_link_prediction
from kgbias_core.influence.calibration import calibrate
from kgbias_core.influence.closed_form import debiasing_removal
from kgbias_core.influence.negatives import DEFAULT_NEGATIVE_SEED
from kgbias_core.influence.retraining_check import (
    REMOVAL_KINDS,
    influence_accuracy,
    masked_retrain_bias,
    removal_set,
)
from kgbias_core.influence.scale import Calibration
from kgbias_core.jobs import Progress
from kgbias_core.measures.relation_audit import cached_value_audit
from kgbias_core.whatif.edits import Edit, retrain
from kgbias_core.whatif.runs import made_from, noise_band

T = TypeVar("T")

#: The kind of a built-in graph's default model (the one influence needs).
DEFAULT_MODEL_KIND = "transe"
#: Seeds of the noise band's retrains of the unedited graph.
NOISE_SEEDS = (1, 2, 3)


@dataclass(frozen=True)
class Task(Generic[T]):
    """A long piece of work, ready to run or to submit to a JobRegistry."""

    key: str  # names the work (kind, models with their versions, parameters): equal keys = one job
    run: Callable[[Progress], T]  # does the work, reporting through the Progress it is given
    kept: str = NOTHING_SAVED  # what stays when the work is cancelled or fails, said after its error


def _key(task: str, *model_dirs: Path | str, **params: Any) -> str:
    """The key of ``task`` over ``model_dirs`` (each at its current version) with ``params``."""
    models = [f"{Path(d)}@{_version(d)}" for d in model_dirs]
    return json.dumps({"task": task, "models": models, "params": params}, sort_keys=True, default=str)


def _version(model_dir: Path | str) -> int | None:
    try:
        return model_version(model_dir)
    except OSError:
        return None  # no model there: running the task says so, in the store's words


def slug(text: str) -> str:
    """Lower-case letters, digits and dashes only (for model directory names)."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def _check_ks(ks: Sequence[int], *, model: StoredModel) -> None:
    if not ks:
        raise MeasureError(LAB_NO_KS)
    n_triples = model.triples.shape[0]
    if max(ks) > n_triples:
        raise MeasureError(LAB_K_TOO_LARGE.format(k=max(ks), n=n_triples, model=model.name))


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


def check_retrains(model_dir: Path | str, *, what: str, retrains: int) -> None:
    """Refuse ``retrains`` full retrains of the model at ``model_dir`` that would not finish in reasonable
    time here (:func:`~kgbias_core.embeddings.training_cost.check_retrain_fits`), from its config.json alone:
    before the model is loaded or anything else is done."""
    from kgbias_core.embeddings.training_cost import check_retrain_fits

    if not is_model_dir(model_dir):
        return  # load_model, next, names what is missing
    config = read_config(model_dir)
    epochs = int(config.get("epochs") or TrainConfig.epochs)  # an imported model (0 epochs) retrains with the default
    check_retrain_fits(what=what, n_triples=int(config.get("n_train") or 0),
                       n_entities=count_rows(Path(model_dir) / "entities.tsv"),
                       n_relations=count_rows(Path(model_dir) / "relations.tsv"),
                       dim=int(config.get("dim") or TrainConfig.dim),
                       batch_size=int(config.get("batch_size") or TrainConfig.batch_size), epochs=epochs,
                       retrains=retrains, optimizer=str(config.get("optimizer") or TrainConfig.optimizer))


def train_config(dataset: str) -> TrainConfig:
    """The training config of ``dataset``'s default model (tests replace this with a tiny config)."""
    return default_train_config(dataset)


def _calibrated(model: StoredModel, progress: Progress) -> tuple[StoredModel, pd.DataFrame]:
    """``model`` with its calibration over several occupations (METHODS §4), and the runs it was fitted on."""
    progress.update(stage="calibrating", step=0, message="calibrating the influence scale by masked retraining…")

    def on_run(done: int, total: int) -> None:
        progress.update(step=done, total=total, message=f"calibration retrain {done}/{total}")
        if progress.should_stop():  # between retrains: say how far it got, not an epoch
            raise CancelledError(CALIBRATION_CANCELLED.format(done=done, total=total))
        progress.pause_point()  # a person's job waiting runs now: each retrain seeds itself, the result is unchanged

    calibration, runs = calibrate(model, on_run=on_run)
    progress.update(message=f"influence scale actual/predicted = {calibration.scale:.3f} "
                            f"(range {calibration.low:.3f}-{calibration.high:.3f} over "
                            f"{len(calibration.occupations)} occupations)")
    return replace(model, influence_scale=calibration.scale, calibration=calibration), runs


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
                           optimizer=config.optimizer)
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
    from kgbias_core.embeddings.importers import READERS, onto_graph, pickle_to_read
    from kgbias_core.embeddings.pykeen_bridge import imported_weights
    from kgbias_core.embeddings.training import initial_embeddings
    from kgbias_core.errors import IMPORT_PICKLE_TRUSTED

    def vectors(kg: KnowledgeGraph, progress: Progress) -> tuple[dict, TrainConfig, dict[str, Any]]:
        """(weights, config, info) of the imported or drawn vectors, rows in the graph's id order."""
        if fmt == RANDOM_FORMAT:
            progress.update(stage="drawing", message=f"read {kg.name}: {kg.training.num_triples:,} training "
                                                     f"triples; drawing random {dim}-dimensional vectors (seed {seed})")
            entities, relations = initial_embeddings(n_entities=kg.training.num_entities,
                                                     n_relations=kg.training.num_relations, dim=dim, seed=seed)
            info = {"imported_from": RANDOM_FORMAT, "untrained": True, "negatives": "none", "train_seconds": 0.0,
                    "source": f"random uniform(-6/sqrt(d), 6/sqrt(d)), seed {seed}"}
            return ({"entity_embeddings": entities, "relation_embeddings": relations},
                    TrainConfig(model="transe", dim=dim, epochs=0, seed=seed), info)
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
        config = TrainConfig(model=imported.model, dim=model_dim, epochs=0, margin=margin,
                             distance=imported.distance)
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

    def run(progress: Progress) -> str:
        check_output(out, overwrite=overwrite)
        progress.update(stage="loading data")
        kg = load_graph(graph, data_dir, schema=schema, names=names)
        weights, config, info = vectors(kg, progress)
        model = graph_model(kg, config, name=out.name, negatives=None, weights=weights, info=info)
        progress.update(stage="saving", message=f"writing {out.name} to {out.parent}")
        return str(save_model(model, out.parent, overwrite=overwrite))

    return Task(key=_key("import", out=str(out)), run=run)


def store_calibration(model_dir: Path | str, calibration: Calibration, runs: pd.DataFrame | None = None) -> Path:
    """Save the model with ``calibration`` (atomic save_model), keeping its cached results; cache ``runs``."""
    model_dir = Path(model_dir)
    model = load_model(model_dir)
    results = model_dir / "results"
    kept = model_dir.parent / f".results-{model.name}-{uuid.uuid4().hex}"
    if results.is_dir():
        shutil.copytree(results, kept)
    try:
        calibrated = replace(model, influence_scale=calibration.scale, calibration=calibration)
        path = save_model(calibrated, model_dir.parent, overwrite=True)
        if kept.is_dir():  # the calibration does not change the weights: the cached results stay valid
            shutil.copytree(kept, path / "results", dirs_exist_ok=True)
    finally:
        shutil.rmtree(kept, ignore_errors=True)
    if runs is not None:
        save_result(path, CALIBRATION_RUNS, runs, params={"calibration": calibration.to_dict()})
    return path


#: The cached runs a model's calibration was fitted on (``saved_calibration_runs``).
CALIBRATION_RUNS = "calibration_runs"


def calibration_task(model_dir: Path | str, *, device: torch.device | str | None = None) -> Task[Calibration]:
    """Calibrate the model at ``model_dir`` on several occupations and store the calibration in it."""
    device = resolve_device(device)

    def run(progress: Progress) -> Calibration:
        from kgbias_core.influence.calibration import CALIBRATION_OCCUPATIONS

        check_retrains(model_dir, what="calibration", retrains=1 + 2 * CALIBRATION_OCCUPATIONS)
        model = load_model(model_dir, device=device)
        calibrated, runs = _calibrated(model, progress)
        progress.update(stage="saving", message=f"storing the calibration in {Path(model_dir).name}")
        store_calibration(model_dir, calibrated.calibration, runs)
        return calibrated.calibration

    return Task(key=_key("calibration", model_dir), run=run, kept=CALIBRATION_KEPT.format(name=Path(model_dir).name))


# --- estimates (shown before work is started) ------------------------------------------------------
#: Follow-up work estimated at most this long (seconds) starts unasked, as background work; longer work
#: is offered with its estimate (issue 25: no default background job longer than a few minutes of CPU).
AUTO_BACKGROUND_SECONDS = 180.0


def model_retrain_seconds(model_dir: Path | str, *, retrains: int = 1) -> float | None:
    """Estimated seconds of ``retrains`` retrains of the model at ``model_dir``, from its config.json alone
    (:func:`~kgbias_core.embeddings.training_cost.estimated_seconds`); None without a model there."""
    from kgbias_core.embeddings.training_cost import estimated_seconds

    if not is_model_dir(model_dir):
        return None
    config = read_config(model_dir)
    return estimated_seconds(n_triples=int(config.get("n_train") or 0),
                             n_entities=count_rows(Path(model_dir) / "entities.tsv"),
                             n_relations=count_rows(Path(model_dir) / "relations.tsv"),
                             dim=int(config.get("dim") or TrainConfig.dim),
                             batch_size=int(config.get("batch_size") or TrainConfig.batch_size),
                             epochs=int(config.get("epochs") or TrainConfig.epochs), retrains=retrains)


def calibration_seconds(model_dir: Path | str) -> float | None:
    """Estimated seconds of the calibration of the model at ``model_dir`` (1 + 2 x 6 masked retrains)."""
    from kgbias_core.influence.calibration import CALIBRATION_OCCUPATIONS

    return model_retrain_seconds(model_dir, retrains=1 + 2 * CALIBRATION_OCCUPATIONS)


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
                             batch_size=config.batch_size, epochs=config.epochs)


def saved_calibration_runs(model_dir: Path | str) -> pd.DataFrame | None:
    """The runs the model's stored calibration was fitted on; None without a calibration or its runs."""
    calibration = read_config(model_dir).get("calibration")
    if calibration is None:
        return None
    return load_result(model_dir, CALIBRATION_RUNS, params={"calibration": calibration})


# --- what-ifs (Du §4.3) --------------------------------------------------------------------------
def whatif_name(base: str, edit: Edit, *, occupation_name: str) -> str:
    """``<base>--<strategy>-<occupation>-<hash>``: the same edit always gets the same name."""
    # "mode" stays in the hash so that names of runs saved before warm starts were retired still match.
    payload = json.dumps({**edit.describe(), "added": edit.added_triples, "mode": "scratch"}, sort_keys=True)
    digest = hashlib.sha1(payload.encode("utf-8")).hexdigest()[:8]
    strategy = slug(edit.strategy.split(" ")[0])
    occupation = slug(occupation_name)[:40].rstrip("-")  # model names have at most 200 characters
    return f"{base}--{strategy}-{occupation}-{digest}"


def whatif_task(
    *, base: Path | str, edit: Edit, out: Path, evaluate: bool = False, overwrite: bool = False,
    device: torch.device | str | None = None,
) -> Task[str]:
    """Retrain the model at ``base`` with ``edit`` and save the run as the model directory ``out``.

    ``out`` is checked before retraining: never the base itself, an existing model only with
    ``overwrite``. The run's edit record keeps the base's :func:`model_fingerprint` under
    ``"base"``, so :func:`kgbias_core.whatif.runs.is_stale` can tell when the base was retrained
    since. ``evaluate`` then caches link prediction of the run and its base (what the lab compares), on
    ``device``; the retrain itself runs on the base's kind of device (:func:`kgbias_core.device.retrain_device`).
    The task returns the run's directory.
    """
    device = resolve_device(device)

    def run(progress: Progress) -> str:
        check_output(out, overwrite=overwrite, reading=base)
        check_retrains(base, what="the what-if (a full retrain)", retrains=1)
        model = load_model(base)
        fingerprint = model_fingerprint(base)
        progress.update(stage="retraining", message=f"retraining {model.name} from its seed: {edit.strategy}")
        what_if = retrain(model, edit, name=out.name, on_epoch=progress.as_callback(stage="retraining"),
                          should_stop=progress.should_stop)
        what_if = replace(what_if, edit={**what_if.edit, "base": fingerprint})
        progress.update(stage="saving", message="saving the run")
        path = save_model(what_if, out.parent, overwrite=overwrite)
        if evaluate:
            progress.update(stage="evaluating", message="link prediction (MRR, Hits@10) of the run and its base")
            cached_link_prediction(path, device=device)
            cached_link_prediction(base, device=device)
        return str(path)

    return Task(key=_key("whatif", base, out=str(out), evaluate=evaluate), run=run)


def noise_band_task(
    model_dir: Path | str, *, seeds: Sequence[int] = NOISE_SEEDS, device: torch.device | str | None = None
) -> Task[pd.DataFrame]:
    """Retrain the unedited graph under ``seeds`` and cache B_gr's spread beside the model."""
    device = resolve_device(device)

    def run(progress: Progress) -> pd.DataFrame:
        check_retrains(model_dir, what="the noise band", retrains=len(seeds))
        model = load_model(model_dir, device=device)
        done = [0]

        def on_epoch(epoch: int, n_epochs: int, loss: float) -> None:
            progress.update(stage="retraining", step=done[0] * n_epochs + epoch, total=len(seeds) * n_epochs,
                            loss=loss, message=f"seed {seeds[min(done[0], len(seeds) - 1)]}, epoch {epoch}/{n_epochs}")
            if epoch == n_epochs:
                done[0] += 1
                progress.pause_point()  # between seeds: a person's job waiting runs now

        return noise_band(model, model_dir=model_dir, seeds=seeds, on_epoch=on_epoch, should_stop=progress.should_stop)

    return Task(key=_key("noise_band", model_dir, seeds=list(seeds)), run=run)


def saved_noise_band(model_dir: Path | str) -> pd.DataFrame | None:
    return load_result(model_dir, "noise_band", params={"seeds": list(NOISE_SEEDS)})


def curve_key(occupation: str) -> str:
    return f"removal_curve-{slug(occupation)}"


def removal_curve_task(
    model_dir: Path | str, *, occupation: str, ks: Sequence[int], seed: int = 0,
    device: torch.device | str | None = None,
) -> Task[pd.DataFrame]:
    """B_gr of ``occupation`` after IF-REMOVE and Random-REMOVE of k triples, for each k (Du Fig. 4d-f).

    Masked retrains from the base seed (METHODS §2), so k = 0 is the base model itself. The task
    returns, and caches beside the model, a frame ``strategy, k, predicted_raw`` (sum of delta_z),
    ``predicted, predicted_low, predicted_high`` (B_gr after, calibrated; empty for an uncalibrated
    model) and ``group_bias`` (after the retrain).
    """
    device = resolve_device(device)

    def run(progress: Progress) -> pd.DataFrame:
        check_retrains(model_dir, what="the removal curve", retrains=2 * len(ks))
        model = load_model(model_dir, device=device)
        _check_ks(ks, model=model)
        analysis = ModelAnalysis(model)
        index = analysis.groups.index(occupation)
        before = float(analysis.group_bias(occupation))
        influence = analysis.influence(occupation)
        rows = [{"strategy": s, "k": 0, "predicted_raw": 0.0, "predicted": before, "predicted_low": before,
                 "predicted_high": before, "group_bias": before} for s in ("IF-REMOVE", "Random-REMOVE")]
        plan = [(s, k) for k in ks for s in ("IF-REMOVE", "Random-REMOVE")]
        for step, (strategy, k) in enumerate(plan, start=1):
            progress.update(stage="retraining", step=step - 1, total=len(plan), message=f"{strategy} k={k}")
            if strategy == "IF-REMOVE":
                removed = debiasing_removal(influence, bias=before, k=k)
            else:
                removed = removal_set(influence, kind="random", k=k, seed=seed)
            after = masked_retrain_bias(model, removed=removed, groups=analysis.groups,
                                        should_stop=progress.should_stop)
            change = analysis.predicted_removal(occupation, removed)
            rows.append({"strategy": strategy, "k": k, "predicted_raw": change.raw,
                         "predicted": before + change.point if change.calibrated else None,
                         "predicted_low": before + change.low if change.has_interval else None,
                         "predicted_high": before + change.high if change.has_interval else None,
                         "group_bias": float(after[index])})
        progress.update(step=len(plan), total=len(plan), message="done")
        frame = pd.DataFrame(rows)
        save_result(model_dir, curve_key(occupation), frame, params={"occupation": occupation})
        return frame

    return Task(key=_key("removal_curve", model_dir, occupation=occupation, ks=list(ks), seed=seed), run=run)


def saved_curve(model_dir: Path | str, occupation: str) -> pd.DataFrame | None:
    return load_result(model_dir, curve_key(occupation), params={"occupation": occupation})


# --- validation (Du §4.2) ------------------------------------------------------------------------
def accuracy_key(occupation: str) -> str:
    return f"influence_accuracy-{slug(occupation)}"


def influence_accuracy_task(
    model_dir: Path | str,
    *,
    occupation: str,
    ks: Sequence[int],
    kinds: Sequence[str] = REMOVAL_KINDS,
    keep: bool = True,
    device: torch.device | str | None = None,
) -> Task[pd.DataFrame]:
    """Du §4.2: predicted against actual change of B_gr for top/bottom/random-k removals.

    -> one row per (kind, k): ``kind, k, predicted, actual``; ``keep`` caches it beside the model
    (where the Validation page reads it; the command line writes its own file instead).
    """
    device = resolve_device(device)

    def run(progress: Progress) -> pd.DataFrame:
        check_retrains(model_dir, what="the influence check", retrains=1 + len(kinds) * len(ks))
        model = load_model(model_dir, device=device)
        _check_ks(ks, model=model)
        analysis = ModelAnalysis(model)
        index = analysis.groups.index(occupation)
        label = analysis.groups.labels[index]  # the cached result is keyed by the label, whatever was typed
        influence = analysis.influence(label)
        progress.update(stage="retraining", step=0, total=len(kinds) * len(ks),
                        message="retraining the unedited graph (masked)")
        done = [0]

        def on_run(kind: str, k: int, predicted: float, actual: float) -> None:
            done[0] += 1
            progress.update(step=done[0], message=f"{kind} k={k}: predicted {predicted:+.5f}  actual {actual:+.5f}")
            progress.raise_if_cancelled(epoch=done[0])

        frame = influence_accuracy(model, influence=influence, occupation_index=index, groups=analysis.groups,
                                   ks=ks, kinds=kinds, on_run=on_run)
        if keep:
            save_result(model_dir, accuracy_key(label), frame, params={"occupation": label})
        return frame

    key = _key("influence_accuracy", model_dir, occupation=occupation, ks=list(ks), kinds=list(kinds), keep=keep)
    return Task(key=key, run=run)


def saved_accuracy(model_dir: Path | str, occupation: str) -> pd.DataFrame | None:
    return load_result(model_dir, accuracy_key(occupation), params={"occupation": occupation})


# --- evaluation and the relation audit -----------------------------------------------------------
def link_prediction_task(
    model_dirs: Sequence[Path | str], *, device: torch.device | str | None = None
) -> Task[None]:
    """Cache filtered MRR and Hits@k of each model directory beside it (seconds each on FB15k-237)."""
    device = resolve_device(device)

    def run(progress: Progress) -> None:
        for step, path in enumerate(model_dirs):
            progress.update(stage="evaluating", step=step, total=len(model_dirs),
                            message=f"link prediction of {Path(path).name}")
            cached_link_prediction(path, device=device)

    return Task(key=_key("link_prediction", *model_dirs), run=run)


def relation_audit_task(
    model_dir: Path | str, params: Mapping[str, Any], *, device: torch.device | str | None = None
) -> Task[pd.DataFrame]:
    """Keidar et al.'s per-value relation audit of a stored model, cached beside it (METHODS §7)."""
    device = resolve_device(device)

    def run(progress: Progress) -> pd.DataFrame:
        def on_step(done: int, total: int, relation: str) -> None:
            progress.update(stage="auditing relations", step=done, total=total, message=f"relation {relation}")
            progress.pause_point()  # between relations: a person's job waiting runs now

        progress.update(stage="classifying occupations", message=f"{params['kind']} on {Path(model_dir).name}")
        return cached_value_audit(model_dir, **params, on_step=on_step, should_stop=progress.should_stop,
                                  device=device)

    return Task(key=_key("relation_audit", model_dir, **params), run=run)


# --- findings: Du et al.'s claims on one model (kgbias_core.findings) ---------------------------
#: The cached findings table of a model (``saved_findings``).
FINDINGS = "findings"


def saved_curves(model_dir: Path | str) -> dict[str, pd.DataFrame]:
    """Every removal curve cached beside the model, by occupation label."""
    curves = {}
    for meta in sorted((Path(model_dir) / "results").glob("removal_curve-*.json")):
        try:
            occupation = json.loads(meta.read_text(encoding="utf-8"))["params"]["occupation"]
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not a curve kgbias wrote: nothing to report from it
        curve = saved_curve(model_dir, occupation)
        if curve is not None:
            curves[str(occupation)] = curve
    return curves


#: Du's Add uses c = 0.5 (Table 3): claim 5 is about that c only.
PAPER_ADD_C = 0.5


def add_c(config: dict[str, Any]) -> float | None:
    """The c of an Add what-if's config (its edit's strategy reads ``add c=<c> (...)``), None if unreadable."""
    strategy = str((config.get("edit") or {}).get("strategy", ""))
    match = re.match(r"add c=(\S+)", strategy)
    try:
        return float(match.group(1)) if match else None
    except ValueError:
        return None


def add_runs(model_dir: Path | str, *, c: float | None = PAPER_ADD_C) -> list[Path]:
    """The Add what-ifs in the model's store that were retrained from the model now at ``model_dir``;
    with ``c``, only those of that c (default the paper's 0.5: an Add run of c = 1e9 measures its dummies,
    not a debiasing, and must not stand for claim 5); None: every c."""
    if c is not None:
        return [path for path in add_runs(model_dir, c=None) if add_c(read_config(path)) == c]
    base = Path(model_dir)
    base_config = read_config(base)
    found = []
    for name in list_models(base.parent):
        try:
            config = read_config(base.parent / name)
        except ModelStoreError:
            continue  # being replaced right now
        edit = config.get("edit") or {}
        if edit.get("kind") == "add" and config.get("base_model") == base.name and made_from(config, base_config):
            found.append(base.parent / name)
    return found


def findings_inputs(model_dir: Path | str, *, census: Path | None = None, year: int | None = None,
                    negative_seed: int | None = None) -> dict[str, Any]:
    """What a findings table was computed from besides the model: the cached curves, the Add runs, the
    noise band, the census file and, for a model without frozen negatives, the seed influence re-drew
    them from. A table made from other inputs is recomputed (``saved_findings``)."""
    return _inputs(saved_curves(model_dir), add_runs(model_dir), saved_noise_band(model_dir), census=census, year=year,
                   negative_seed=_redraw_seed(model_dir, negative_seed))


def _redraw_seed(model_dir: Path | str, negative_seed: int | None) -> int | None:
    """The seed influence re-draws the negatives from (default 0), or None for a model that has its own."""
    if read_config(model_dir).get("negatives") != "none":  # the importer records "none"
        return None
    return DEFAULT_NEGATIVE_SEED if negative_seed is None else negative_seed


def _inputs(curves: Mapping[str, pd.DataFrame], runs: Sequence[Path], noise: pd.DataFrame | None, *,
            census: Path | None, year: int | None, negative_seed: int | None = None) -> dict[str, Any]:
    inputs = {
        "curves": sorted(curves),
        "add_runs": sorted(path.name for path in runs),
        "noise_band": noise is not None,
        "census": str(Path(census).resolve()) if census is not None and Path(census).is_file() else None,
        "year": year,
    }
    # Only where re-drawn: a model with frozen negatives keeps its cached findings' key.
    return inputs if negative_seed is None else {**inputs, "negative_seed": negative_seed}


def findings_task(
    model_dir: Path | str,
    *,
    census: Path | None = None,
    year: int | None = None,
    retrain: Sequence[str] = (),
    k: int | None = None,
    negative_seed: int | None = None,
    device: torch.device | str | None = None,
) -> Task[pd.DataFrame]:
    """Du et al.'s claims measured on the model at ``model_dir`` (:func:`kgbias_core.findings.model_findings`),
    cached beside it.

    Claims 4 and 5 use the removal curves, Add what-ifs and noise band already stored. ``retrain``
    names occupations to run them for first, where missing: the noise band, IF-REMOVE and
    Random-REMOVE of ``k`` triples (default: as many as are predicted to bring B_gr to zero) and
    Add with c = 0.5 (saved as a what-if next to the model). ``census`` is the IPUMS file (claim 6;
    None or a graph without a pairing: not measured). ``negative_seed``: for a model without frozen
    negatives, the seed claim 3's influence re-draws them from (default 0; its findings say approximate).
    """
    from kgbias_core.data.census import PAIRING_RESOURCES, census_validation
    from kgbias_core.findings import findings_frame, model_findings
    from kgbias_core.tables import measures_table

    device = resolve_device(device)

    def run(progress: Progress) -> pd.DataFrame:
        model = load_model(model_dir, device=device)
        if retrain:
            _findings_retrains(model_dir, model, retrain, k=k, progress=progress, device=device)
        seed = _redraw_seed(model_dir, negative_seed)
        analysis = ModelAnalysis(model, negative_seed=DEFAULT_NEGATIVE_SEED if seed is None else seed)
        progress.update(stage="measuring", message="every measure with its bootstrap interval")
        measures = measures_table(analysis)
        correlations = None
        if census is not None and Path(census).is_file() and model.dataset in PAIRING_RESOURCES:
            correlations, joined = census_validation(measures, census_path=census, year=year, dataset=model.dataset)
            correlations = None if joined.empty else correlations
        progress.update(stage="measuring", message="the top-influence triples of every occupation")
        curves, runs, noise = saved_curves(model_dir), add_runs(model_dir), saved_noise_band(model_dir)
        others = [f"{path.name} (c = {add_c(read_config(path))})" for path in add_runs(model_dir, c=None)
                  if path not in runs]
        frame = findings_frame(model_findings(analysis, measures, census=correlations, curves=curves, noise=noise,
                                              add_runs=[ModelAnalysis(load_model(path, device=device))
                                                        for path in runs],
                                              add_refused=others))
        save_result(model_dir, FINDINGS, frame,
                    params=_inputs(curves, runs, noise, census=census, year=year, negative_seed=seed))
        return frame

    return Task(key=_key("findings", model_dir, census=str(census), year=year, retrain=list(retrain), k=k,
                         negative_seed=negative_seed), run=run)


def _findings_retrains(
    model_dir: Path | str, model: StoredModel, occupations: Sequence[str], *, k: int | None, progress: Progress,
    device: torch.device,
) -> None:
    from kgbias_core.whatif.edits import add_edit

    analysis = ModelAnalysis(model)
    labels = [analysis.groups.labels[analysis.groups.index(o)] for o in occupations]  # names -> labels, checked first
    progress.update(stage="retraining", message="noise band: the unedited graph under 3 other seeds")
    noise_band_task(model_dir, device=device).run(progress)
    have_add = {read_config(path)["edit"]["occupation"] for path in add_runs(model_dir)}
    for label in labels:
        if saved_curve(model_dir, label) is None:
            ks = [k] if k is not None else [_debiasing_k(analysis, label)]
            removal_curve_task(model_dir, occupation=label, ks=ks, device=device).run(progress)
        if label not in have_add:
            edit = add_edit(model, label)
            name = whatif_name(model.name, edit, occupation_name=analysis.groups.names[analysis.groups.index(label)])
            whatif_task(base=model_dir, edit=edit, out=Path(model_dir).parent / name, device=device).run(progress)


def _debiasing_k(analysis: ModelAnalysis, occupation: str) -> int:
    """The number of IF-REMOVE triples predicted to bring the occupation's B_gr to zero (calibrated
    scale where the model has one, else the raw sum), between 1 and 32% of the triples that move B_gr:
    a k so large that IF-REMOVE overshoots far past zero would test the overshoot, not Du's claim."""
    from kgbias_core.influence.retraining_check import default_ks

    influence = analysis.influence(occupation)
    bias = float(analysis.group_bias(occupation))
    order = debiasing_removal(influence, bias=bias, k=int((influence != 0).sum()))
    reached = (influence[order].cumsum(0).abs() * (analysis.model.influence_scale or 1.0) >= abs(bias)).nonzero()
    k = int(reached[0]) + 1 if len(reached) else int(order.shape[0])
    return max(1, min(k, default_ks(int((influence != 0).sum()))[-1]))


def saved_findings(
    model_dir: Path | str, *, census: Path | None = None, year: int | None = None
) -> pd.DataFrame | None:
    """The cached findings of the model, or None when absent or made from other inputs."""
    return load_result(model_dir, FINDINGS, params=findings_inputs(model_dir, census=census, year=year))


# --- prepare: everything a demo shows, ahead of time ----------------------------------------------
@dataclass(frozen=True)
class ReadyItem:
    """One thing a demo of a graph shows, and whether it is in the store."""

    dataset: str
    what: str  # "model", "noise band", "link prediction", "relation audit", "findings", "calibration"
    ready: bool
    optional: bool  # calibration: long, prepared only when asked (``prepare --calibrate``)
    detail: str  # the model directory, or why it is missing


#: The items of :func:`readiness`, in the order ``prepare`` makes them.
READY_ITEMS = ("model", "noise band", "link prediction", "relation audit", "findings", "calibration")


def demo_audit_params(model_dir: Path | str) -> dict[str, Any]:
    """The relation audit's parameters as Model comparison opens with them (default classifier and k)."""
    from kgbias_core.measures.relation_audit import audit_params, default_min_persons

    return audit_params(min_persons=default_min_persons(int(read_config(model_dir).get("n_train") or 0)))


def readiness(dataset: str, *, store: Path | str, data_dir: Path | str | None = None) -> list[ReadyItem]:
    """What of :data:`READY_ITEMS` the default model of ``dataset`` has in ``store`` (read from files only)."""
    from kgbias_core.data.census import census_file
    from kgbias_core.data.datasets import resolve_data_dir
    from kgbias_core.measures.relation_audit import load_value_audit

    path = Path(store) / DEFAULT_MODEL_NAMES.get(dataset, model_name(dataset))
    if not is_model_dir(path):
        return [ReadyItem(dataset, what, False, what == "calibration", f"no model {path.name} in {store}")
                for what in READY_ITEMS]
    census = census_file(resolve_data_dir(data_dir))
    have = {
        "model": True,
        "noise band": saved_noise_band(path) is not None,
        "link prediction": cached_link_prediction_ready(path),
        "relation audit": load_value_audit(path, **demo_audit_params(path)) is not None,
        "findings": saved_findings(path, census=census) is not None,
        "calibration": read_config(path).get("calibration") is not None,
    }
    return [ReadyItem(dataset, what, have[what], what == "calibration", str(path)) for what in READY_ITEMS]


def cached_link_prediction_ready(model_dir: Path | str) -> bool:
    from kgbias_core.evaluation.link_prediction import load_link_prediction

    return load_link_prediction(model_dir) is not None


def readiness_lines(items: Sequence[ReadyItem]) -> list[str]:
    """One line per item: 'ready   synthetic  noise band' / 'MISSING ...' / 'optional ...'."""
    def word(item: ReadyItem) -> str:
        return "ready" if item.ready else ("optional" if item.optional else "MISSING")

    return [f"{word(i):8} {i.dataset:10} {i.what:16} {i.detail}" for i in items]


def _demo_task(what: str, dataset: str, path: Path, *, data_dir: Path | str | None, census: Path | None,
               overrides: Mapping[str, Any] | None, device: torch.device | str | None) -> Task[Any]:
    """The task that makes ``what`` (one of :data:`READY_ITEMS`) for the model at ``path``, on ``device``."""
    if what == "model":
        return train_task(dataset, out=path, data_dir=data_dir, overrides=overrides, device=device)
    if what == "noise band":
        return noise_band_task(path, device=device)
    if what == "link prediction":
        return link_prediction_task([path], device=device)
    if what == "relation audit":
        return relation_audit_task(path, demo_audit_params(path), device=device)
    if what == "findings":
        return findings_task(path, census=census, device=device)
    return calibration_task(path, device=device)


def prepare_task(
    datasets: Sequence[str], *, store: Path | str, data_dir: Path | str | None = None, calibrate: bool = False,
    overrides: Mapping[str, Any] | None = None, device: torch.device | str | None = None,
) -> Task[list[ReadyItem]]:
    """Train the default model of each of ``datasets`` where missing, then everything a demo shows: noise band,
    link prediction, relation audit, findings (and the calibration with ``calibrate``: 13 retrains). Resumable:
    what is in the store already is skipped. Returns the :func:`readiness` of every graph afterwards.
    ``overrides`` apply to the trainings only (e.g. fewer epochs for a quick try)."""
    from kgbias_core.data.census import census_file
    from kgbias_core.data.datasets import resolve_data_dir

    def run(progress: Progress) -> list[ReadyItem]:
        census = census_file(resolve_data_dir(data_dir))
        for dataset in datasets:
            path = Path(store) / DEFAULT_MODEL_NAMES.get(dataset, model_name(dataset))
            done = {i.what for i in readiness(dataset, store=store, data_dir=data_dir) if i.ready}
            for what in READY_ITEMS:
                if what == "calibration" and not calibrate:
                    continue
                if what in done:
                    progress.update(message=f"{dataset}: {what} is ready, skipped")
                    continue
                progress.update(message=f"{dataset}: {what}…")
                _demo_task(what, dataset, path, data_dir=data_dir, census=census, overrides=overrides,
                           device=device).run(progress)
        return [item for dataset in datasets for item in readiness(dataset, store=store, data_dir=data_dir)]

    return Task(key=_key("prepare", datasets=list(datasets), store=str(store), calibrate=calibrate), run=run)


# --- embedding-level debiasing and the debiasing comparison (issue 29) ----------------------------
DEBIAS_METHODS = ("project", "regularise")


def debias_embedding_task(
    *,
    base: Path | str,
    method: str,
    out: Path,
    occupations: Sequence[str] | None = None,
    weight: float = 10.0,
    persons: bool = False,
    direction: str = "values",
    overwrite: bool = False,
    device: torch.device | str | None = None,
) -> Task[str]:
    """Debias the model at ``base`` at the embedding level and save it as the model directory ``out``.

    ``project``: the gender direction projected out of ``occupations`` (None: all) and, with
    ``persons``, of the persons (:func:`kgbias_core.whatif.projection.projected_model`, no training);
    ``regularise``: TransE retrained from the base's seed with the fairness term of weight ``weight``
    (:func:`kgbias_core.whatif.regularised.regularised_model`). Returns the saved directory.
    """
    from kgbias_core.errors import UNKNOWN_DEBIAS_METHOD, KGBiasError
    from kgbias_core.whatif.projection import projected_model
    from kgbias_core.whatif.regularised import regularised_model

    def run(progress: Progress) -> str:
        if method not in DEBIAS_METHODS:
            raise KGBiasError(UNKNOWN_DEBIAS_METHOD.format(method=method, known=", ".join(DEBIAS_METHODS)))
        check_output(out, overwrite=overwrite, reading=base)
        if method == "regularise":
            check_retrains(base, what="the regularised training (a full retrain)", retrains=1)
        model = load_model(base, device=resolve_device(device))  # the regulariser retrains on retrain_device
        if method == "project":
            progress.update(stage="projecting", message=f"projecting the gender direction ({direction}) out")
            debiased = projected_model(model, name=out.name, occupations=occupations, persons=persons,
                                       direction=direction)  # type: ignore[arg-type]
        else:
            progress.update(stage="training", message=f"training {model.name} with the fairness term, w = {weight:g}")
            debiased = regularised_model(model, name=out.name, weight=weight, occupations=occupations,
                                         on_epoch=progress.as_callback(stage="training"),
                                         should_stop=progress.should_stop)
        progress.update(stage="saving", message="saving the debiased model")
        return str(save_model(debiased, out.parent, overwrite=overwrite))

    params = {"method": method, "out": str(out), "occupations": occupations, "weight": weight, "persons": persons,
              "direction": direction}
    return Task(key=_key("debias-embedding", base, **params), run=run)


def compare_debiasing_task(model_dirs: Sequence[Path | str], *, occupations: Sequence[str] = (),
                           device: torch.device | str | None = None) -> Task[pd.DataFrame]:
    """:func:`kgbias_core.whatif.compare.comparison_table` of the models at ``model_dirs`` (the first is the
    reference graph); link prediction is read from, or cached into, each model's directory."""
    from kgbias_core.whatif.compare import comparison_table

    def run(progress: Progress) -> pd.DataFrame:
        models = [load_model(d, device=resolve_device(device)) for d in model_dirs]
        paths = {id(model): Path(d) for model, d in zip(models, model_dirs, strict=True)}

        def links(model: StoredModel) -> dict[str, float]:
            frame = cached_link_prediction(paths[id(model)])
            rows = frame[frame["queries"] == "all"]
            return {} if rows.empty else {k: float(v) for k, v in rows.iloc[0].items() if k != "queries"}

        progress.update(stage="measuring", message=f"measuring {len(models)} models")
        return comparison_table(models, occupations=occupations, links=links)

    return Task(key=_key("compare-debiasing", *model_dirs, occupations=list(occupations)), run=run)
