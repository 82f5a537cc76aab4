"""The model store ``cached_models/<name>/``: the one module that reads and writes cached models.

Layout of a model directory (all written into a temporary sibling directory, then renamed into
place, so a half-written model is never visible under its name):

- ``model.safetensors``: the weights (TransE: ``entity_embeddings`` [E, d], ``relation_embeddings``
  [R, d]; other models: their PyKEEN state dict);
- ``training.safetensors``: ``triples`` [n, 3] (exactly the triples trained on, edits included),
  ``negatives`` [K n, 3] (the K = ``negatives_per_triple`` frozen negatives of each row, row j n + i the
  j-th of row i: :mod:`kgbias_core.embeddings.objective`; TransE only), and, where the graph has them,
  ``valid_triples`` / ``test_triples`` in the same id space;
- ``entities.tsv`` (``id label name``) and ``relations.tsv`` (``id label``);
- ``config.json``: data set and data hash, schema, training config, damping, influence scale,
  edit, library versions, final loss, training seconds;
- ``results/``: derived tables cached beside the model (:mod:`kgbias_core.embeddings.results`).

Nothing is ever unpickled: tensors come from safetensors, everything else from JSON/TSV.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import re
import shutil
import uuid
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass

import pyarrow as pa
import pyarrow.compute as pc
import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from kgbias_core.data.schema import Schema
from kgbias_core.data.text import read_columns, text_lines
from kgbias_core.embeddings.claims import FILE_MODE, Claim, alive, scratch_dir, scratch_parts
from kgbias_core.embeddings.config import Calibration, TrainConfig
from kgbias_core.embeddings.model_checks import (
    check_id_triples,
    check_negatives_count,
    check_transe_dims,
    check_unique_labels,
    config_calibration,
    config_train_config,
)
from kgbias_core.errors import (
    DEBIASED_NO_RETRAIN,
    MODEL_CORRUPT,
    MODEL_FILE_LINK,
    MODEL_INCOMPLETE,
    MODEL_NOT_FOUND,
    MODEL_WRITE_FAILED,
    NO_NEGATIVES,
    NO_NEGATIVES_IMPORTED,
    NON_FINITE_WEIGHTS,
    NOT_TRANSE,
    OUT_BAD_NAME,
    OUT_EXISTS,
    OUT_IS_INPUT,
    OUT_NOT_A_MODEL,
    STORE_NOT_WRITABLE,
    UNKNOWN_ENTITY,
    UNKNOWN_RELATION,
    DataError,
    MeasureError,
    ModelStoreError,
)
from kgbias_core.types import FloatTensor, LongTensor

MODEL_FILES = ("config.json", "model.safetensors", "training.safetensors", "entities.tsv", "relations.tsv")
STORE_ENV = "KGBIAS_MODEL_DIR"
#: A model name is one path component: nothing a user types (or a page passes) can leave the store.
#: At most 200 characters: a write's scratch directory adds about 50 to it, and a file system 255.
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,199}")


def default_store() -> Path:
    """``$KGBIAS_MODEL_DIR`` or ``./cached_models``."""
    return Path(os.environ.get(STORE_ENV, "cached_models"))


@dataclass(frozen=True)
class StoredModel:
    """A trained embedding with everything needed to compute measures without the raw data."""

    name: str  # directory name in the store
    dataset: str  # "fb15k237", "synthetic", or a user graph's name
    data_hash: str  # sha256 of the data the model was trained on
    schema: Schema
    config: TrainConfig
    entity_labels: tuple[str, ...]  # id -> label (MID, Q-id, ...)
    entity_names: tuple[str, ...]  # id -> readable name
    relation_labels: tuple[str, ...]  # id -> label
    weights: dict[str, torch.Tensor]  # model.safetensors
    triples: LongTensor  # [n, 3] trained on
    negatives: LongTensor | None  # [K n, 3] frozen negatives (TransE), row j n + i: row i's j-th (objective.py)
    valid_triples: LongTensor | None = None  # [n_valid, 3]
    test_triples: LongTensor | None = None  # [n_test, 3]
    damping: float = 0.0  # lambda of METHODS §3
    influence_scale: float | None = None  # calibrated actual/predicted (METHODS §4), None = ranking only
    calibration: Calibration | None = None  # the scale's spread over occupations (its scale = influence_scale)
    edit: dict[str, Any] | None = None  # the debiasing edit that made this what-if, if any
    info: dict[str, Any] = field(default_factory=dict)  # versions, final loss, seconds, base model

    @property
    def entity_embeddings(self) -> FloatTensor:
        """TransE entity embeddings [E, d]."""
        return self._transe_weights("entity_embeddings")

    @property
    def relation_embeddings(self) -> FloatTensor:
        """TransE relation embeddings [R, d]."""
        return self._transe_weights("relation_embeddings")

    def _transe_weights(self, key: str) -> FloatTensor:
        # Other kinds hold PyKEEN's state dict: the TransE measures have no vectors to read there.
        if self.config.model != "transe":
            raise MeasureError(NOT_TRANSE.format(model=self.name, kind=self.kind))
        return self.weights[key]

    @property
    def kind(self) -> str:
        """The model kind as a reader names it: ``distmult``, or ``pbg (linear operator, cos comparator)``."""
        pbg = self.info.get("pbg")
        if not isinstance(pbg, dict):
            return self.config.model
        operator, comparator = pbg.get("operator"), pbg.get("comparator")
        return f"{self.config.model} (PyTorch-BigGraph's {operator} operator, {comparator} comparator)"

    @property
    def frozen_negatives(self) -> LongTensor:
        """The frozen negatives [K n, 3] that influence and every retrain need; a named error if absent."""
        if self.info.get("debias"):  # before the negatives: a debiased model has them, yet no retrain may use them
            raise MeasureError(DEBIASED_NO_RETRAIN.format(model=self.name, method=self.info["debias"].get("method")))
        if self.negatives is not None:
            return self.negatives
        if self.config.model != "transe":  # the deeper reason: Du's influence differentiates TransE's distance
            raise MeasureError(NOT_TRANSE.format(model=self.name, kind=self.kind))
        if self.info.get("imported_from"):
            raise MeasureError(NO_NEGATIVES_IMPORTED.format(model=self.name, source=self.info["imported_from"]))
        raise MeasureError(NO_NEGATIVES.format(model=self.name))

    def retrain_refusal(self) -> str | None:
        """Why no retrain of this model can run here (what-if, noise band, audit, calibration, curve: each needs
        :attr:`frozen_negatives`), in words, or None: a model imported from another engine, a debiased one, a
        model that is no TransE. Pages ask it before they offer or start a retrain."""
        try:
            self.frozen_negatives  # noqa: B018 -- its named error is the reason
        except MeasureError as exc:
            return str(exc)
        return None

    @property
    def n_entities(self) -> int:
        return len(self.entity_labels)

    @property
    def n_relations(self) -> int:
        return len(self.relation_labels)

    @cached_property
    def entity_to_id(self) -> dict[str, int]:
        return {label: i for i, label in enumerate(self.entity_labels)}

    @cached_property
    def relation_to_id(self) -> dict[str, int]:
        return {label: i for i, label in enumerate(self.relation_labels)}

    def entity_id(self, label: str) -> int:
        # Until the label -> id map exists, a scan of the labels: a few lookups (the gender values, an
        # occupation) need no 5.7M-entry dict, which takes 3 s to build at 20M triples.
        ids = self.__dict__.get("entity_to_id")
        try:
            return ids[label] if ids is not None else self.entity_labels.index(label)
        except (KeyError, ValueError):
            raise MeasureError(UNKNOWN_ENTITY.format(entity=label)) from None

    def relation_id(self, label: str) -> int:
        try:
            return self.relation_to_id[label]
        except KeyError:
            raise MeasureError(UNKNOWN_RELATION.format(relation=label)) from None

    def to(self, device: torch.device | str) -> StoredModel:
        """A copy whose weights and triples (training, held-out, negatives) live on ``device``."""
        move = lambda t: None if t is None else t.to(device)  # noqa: E731
        return replace(
            self,
            weights={k: v.to(device) for k, v in self.weights.items()},
            triples=self.triples.to(device),
            negatives=move(self.negatives),
            valid_triples=move(self.valid_triples),
            test_triples=move(self.test_triples),
        )

    @property
    def device(self) -> torch.device:
        """Where the weights live: every measure of this model runs there."""
        return next(iter(self.weights.values())).device


def library_versions() -> dict[str, str]:
    from importlib.metadata import version

    return {"python": platform.python_version(), "torch": torch.__version__, "pykeen": version("pykeen")}


def check_model_name(name: str) -> str:
    """``name`` if it is a safe model name (one path component), else :class:`ModelStoreError`."""
    if not _NAME.fullmatch(name):
        raise ModelStoreError(OUT_BAD_NAME.format(name=name))
    return name


def is_model_dir(path: Path | str) -> bool:
    """True for a complete model directory written by :func:`save_model`."""
    path = Path(path)
    return path.is_dir() and all((path / f).is_file() for f in MODEL_FILES)


def check_output(target: Path | str, *, overwrite: bool, reading: Path | str | None = None) -> Path:
    """Refuse an output directory whose replacement would lose data; returns ``target``.

    Nothing that is not a kgbias model directory is ever replaced; an existing model only with
    ``overwrite`` (the CLI's ``--force``); the model being read (``reading``) never.
    """
    target = Path(target)
    check_model_name(target.name)
    if reading is not None and target.resolve() == Path(reading).resolve():
        raise ModelStoreError(OUT_IS_INPUT.format(path=target))
    if target.exists() or target.is_symlink():
        if target.is_symlink() or not is_model_dir(target):
            raise ModelStoreError(OUT_NOT_A_MODEL.format(path=target))
        if not overwrite:
            raise ModelStoreError(OUT_EXISTS.format(path=target))
    if target.parent.is_dir():  # before any training: a read-only store fails here, not after hours
        check_writable(target.parent, what="saving the model")
    return target


def check_writable(folder: Path | str, *, what: str) -> None:
    """Refuse, before long work, a ``folder`` this process cannot write in (read-only mount, permissions,
    an immutable directory): a probe file is created and removed there, which asks the file system
    itself (``os.access`` says yes to root even on a read-only directory)."""
    folder = Path(folder)
    probe = folder / f".probe-{os.getpid()}-{uuid.uuid4().hex}"
    try:
        probe.touch(exist_ok=False)
        probe.unlink()
    except OSError as exc:
        raise ModelStoreError(STORE_NOT_WRITABLE.format(path=folder, what=what, reason=exc.strerror or exc)) from None


def _recover(store: Path, name: str, scratch: list[Path]) -> list[str]:
    """Finish or undo the interrupted saves of ``name`` (``scratch``: its dead writers' directories).

    A save is interrupted between its two renames only: the model is then missing, the old one in
    ``.old-`` and the new complete one in ``.tmp-``. Roll forward to the newest complete ``.tmp-``
    (its config.json is written last, so complete means finished), else back to a complete ``.old-``;
    only then is the rest removed, so the only complete copy is never deleted. The caller holds the claim.
    """
    target = store / name
    if not (target.exists() or target.is_symlink()):
        complete = [p for p in scratch if is_model_dir(p)]
        # New before old: the save was done writing; its rename was all that was left.
        complete.sort(key=lambda p: (p.name.startswith(".tmp-"), (p / "config.json").stat().st_mtime_ns),
                      reverse=True)
        if complete:
            os.replace(complete[0], target)
            scratch = [p for p in scratch if p != complete[0]]
    for entry in scratch:
        shutil.rmtree(entry, ignore_errors=True)
    return [p.name for p in scratch]


def clean_orphans(store: Path | str | None = None) -> list[str]:
    """Recover from the saves of processes that died (kill -9); returns the scratch directories removed.

    A scratch directory of a live process (this one included) is left alone: its write may be
    under way. A model left missing by a save killed between its renames is restored from its
    complete scratch copy (:func:`_recover`) before anything is removed.
    """
    store = Path(store) if store is not None else default_store()
    removed: list[str] = []
    if not store.is_dir():
        return removed
    by_name: dict[str, list[Path]] = {}
    for entry in store.iterdir():
        parts = scratch_parts(entry)
        if parts is None or not entry.is_dir() or alive(parts[2]):
            continue
        by_name.setdefault(parts[1], []).append(entry)
    for name, scratch in by_name.items():
        claim = Claim(store, name)
        try:
            if not claim.acquire():  # a save of this name is running: its own finish tidies up
                continue
        except OSError:  # a read-only store: nothing can be recovered or removed here
            continue
        try:
            # Re-listed under the claim: another clean-up may have recovered this name meanwhile.
            scratch = [p for p in scratch if p.is_dir()]
            removed += _recover(store, name, scratch)
        except OSError:
            pass
        finally:
            claim.release()
    return removed


def save_model(model: StoredModel, store: Path | str | None = None, *, overwrite: bool = False) -> Path:
    """Write ``model`` to ``store/model.name`` atomically and return that path.

    An existing *model* of that name is replaced only with ``overwrite``; anything else at that
    path is never touched (:func:`check_output`). A failed write (full disk, I/O error) leaves the
    previous model as it was and raises :class:`ModelStoreError` with the reason. Writers of one
    name exclude each other (:class:`Claim`): the second is refused, and the existence check runs
    under the claim, so two saves without ``overwrite`` never both succeed. A process killed at
    any point leaves the old or the new model, restored by the next :func:`clean_orphans`.
    """
    store = Path(store) if store is not None else default_store()
    target = check_output(store / check_model_name(model.name), overwrite=overwrite)
    model = model.to("cpu")  # a model measured on a GPU is written from host memory
    try:
        store.mkdir(parents=True, exist_ok=True)
        claim = Claim(store, model.name).__enter__()
    except OSError as exc:
        raise ModelStoreError(MODEL_WRITE_FAILED.format(path=target, reason=exc)) from exc
    try:
        dead = [p for p in store.iterdir() if (parts := scratch_parts(p)) is not None and parts[1] == model.name
                and p.is_dir() and not alive(parts[2])]
        _recover(store, model.name, dead)  # a killed save of this name first gets its model back
        check_output(target, overwrite=overwrite)  # again, under the claim: another writer may have finished
        tmp, old = scratch_dir(store, "tmp", model.name), None
        try:
            tmp.mkdir()
            _write_model_files(model, tmp)
            if target.exists():
                old = scratch_dir(store, "old", model.name)
                os.replace(target, old)
            os.replace(tmp, target)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        except (OSError, SafetensorError) as exc:
            _roll_back(tmp, old, target)
            raise ModelStoreError(MODEL_WRITE_FAILED.format(path=target, reason=exc)) from exc
        except BaseException:
            _roll_back(tmp, old, target)
            raise
    finally:
        claim.release()
    return target


def _roll_back(tmp: Path, old: Path | None, target: Path) -> None:
    """After a failed save: the old model back under its name (if it had been moved), the scratch copy gone."""
    if old is not None and old.is_dir() and not target.exists():
        with contextlib.suppress(OSError):
            os.replace(old, target)
    shutil.rmtree(tmp, ignore_errors=True)


def _write_model_files(model: StoredModel, folder: Path) -> None:
    save_file({k: v.detach().cpu().contiguous() for k, v in model.weights.items()}, folder / "model.safetensors")
    training = {"triples": model.triples.cpu().contiguous()}
    for key in ("negatives", "valid_triples", "test_triples"):
        value = getattr(model, key)
        if value is not None:
            training[key] = value.cpu().contiguous()
    save_file(training, folder / "training.safetensors")
    with (folder / "entities.tsv").open("w", encoding="utf-8") as handle:
        handle.write("id\tlabel\tname\n")
        for i, (label, name) in enumerate(zip(model.entity_labels, model.entity_names, strict=True)):
            handle.write(f"{i}\t{label}\t{_clean(name)}\n")
    with (folder / "relations.tsv").open("w", encoding="utf-8") as handle:
        handle.write("id\tlabel\n")
        for i, label in enumerate(model.relation_labels):
            handle.write(f"{i}\t{label}\n")
    config = {
        "name": model.name,
        "dataset": model.dataset,
        "data_hash": model.data_hash,
        "schema": model.schema.to_dict(),
        **model.config.to_dict(),
        "damping": model.damping,
        "influence_scale": model.influence_scale,
        "calibration": None if model.calibration is None else model.calibration.to_dict(),
        "edit": model.edit,
        **model.info,
    }
    for file in folder.iterdir():
        file.chmod(FILE_MODE)
    # config.json last: a directory holding it was written completely.
    (folder / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True), encoding="utf-8")
    (folder / "config.json").chmod(FILE_MODE)


def _clean(text: str) -> str:
    return text.replace("\t", " ").replace("\n", " ").replace("\r", " ")


def _read_tsv(path: Path, columns: int) -> list[tuple[str, ...]]:
    """The columns after the id (each a tuple of str, header dropped) of an id-ordered TSV written by
    :func:`save_model`. Columns, not rows: millions of small lists would cost seconds."""
    table = read_columns(path, columns=tuple(f"c{i}" for i in range(columns)), nonempty=False, stripped=False,
                         header=True)
    # Columnar for millions of entities; any doubt (ids out of order, blank lines) goes to the line reader,
    # whose message names the line at fault.
    if table is not None and _count_lines(path) == table.num_rows + 1:
        ids = pc.cast(table["c0"], pa.int64(), safe=False) if pc.all(
            pc.match_substring_regex(table["c0"], r"^(0|[1-9][0-9]*)$")).as_py() else None
        if ids is not None and pc.all(pc.equal(ids, pa.array(range(table.num_rows)))).as_py():
            return [tuple(table[f"c{i}"].to_pylist()) for i in range(1, columns)]
    rows = []
    try:
        lines = text_lines(path)
    except DataError as exc:
        raise ModelStoreError(str(exc)) from None
    if not lines:
        raise ModelStoreError(MODEL_CORRUPT.format(path=path, problem="empty file"))
    for number, line in lines[1:]:
        parts = line.split("\t")
        if len(parts) != columns or parts[0] != str(number - 2):
            problem = f"line {number} is not 'id' + {columns - 1} columns in id order"
            raise ModelStoreError(MODEL_CORRUPT.format(path=path, problem=problem))
        rows.append(parts)
    return [tuple(row[i] for row in rows) for i in range(1, columns)]


def _count_lines(path: Path) -> int:
    """Lines of a file (the newlines, plus a last line without one), counted in blocks."""
    count, last = 0, b"\n"
    with path.open("rb") as handle:
        while block := handle.read(1 << 24):
            count += block.count(b"\n")
            last = block[-1:]
    return count + (last != b"\n")


def count_rows(path: Path | str) -> int:
    """Rows of a model's id-map TSV (entities.tsv, relations.tsv) below its header, without parsing it."""
    return max(_count_lines(Path(path)) - 1, 0)


def model_sizes(path: Path | str) -> tuple[int, int]:
    """(entities, relations) of the model directory at ``path``, counted from its id maps without loading it."""
    return count_rows(Path(path) / "entities.tsv"), count_rows(Path(path) / "relations.tsv")


def load_model(path: Path | str, *, device: torch.device | str = "cpu") -> StoredModel:
    """Read a model directory written by :func:`save_model`; never unpickles anything.

    ``device``: where its tensors go, once, on load (resolved at the top by
    :func:`kgbias_core.device.resolve_device`); every measure then runs where they are.
    """
    path = Path(path)
    if not (path / "config.json").is_file() and not (path / "model.safetensors").is_file():
        raise ModelStoreError(MODEL_NOT_FOUND.format(path=path))
    missing = [f for f in MODEL_FILES if not (path / f).is_file()]
    if missing:
        raise ModelStoreError(MODEL_INCOMPLETE.format(path=path, missing=", ".join(missing)))
    for file in MODEL_FILES:  # e.g. a config.json linked to another model's: its settings, these weights
        if (path / file).is_symlink():
            raise ModelStoreError(MODEL_FILE_LINK.format(path=path / file, target=os.readlink(path / file)))
    config = read_config(path)
    weights = _read_safetensors(path / "model.safetensors")
    training = _read_safetensors(path / "training.safetensors")
    entities = _read_tsv(path / "entities.tsv", 3)
    relations = _read_tsv(path / "relations.tsv", 2)
    train_config = config_train_config(config, path / "config.json")
    for key, tensor in weights.items():
        if tensor.is_floating_point() or tensor.is_complex():
            bad = int((~torch.isfinite(tensor)).sum())
            if bad:
                raise ModelStoreError(NON_FINITE_WEIGHTS.format(path=path / "model.safetensors", tensor=key, count=bad))
    if train_config.model == "transe":
        for key, rows in (("entity_embeddings", entities), ("relation_embeddings", relations)):
            if key not in weights or weights[key].shape[0] != len(rows[0]):
                raise ModelStoreError(
                    MODEL_CORRUPT.format(path=path, problem=f"{key} does not match the id maps")
                )
        check_transe_dims(weights, dim=train_config.dim, path=path)
    for kind, labels in (("entity", entities[0]), ("relation", relations[0])):
        check_unique_labels(labels, kind=kind, path=path)
    triples = training.get("triples")
    if triples is None or triples.ndim != 2 or triples.shape[1] != 3:
        raise ModelStoreError(MODEL_CORRUPT.format(path=path, problem="training.safetensors lacks triples [n, 3]"))
    for key, value in training.items():
        check_id_triples(value, key=key, n_entities=len(entities[0]), n_relations=len(relations[0]),
                          file=path / "training.safetensors")
    check_negatives_count(training.get("negatives"), n_triples=triples.shape[0],
                          per_triple=train_config.negatives_per_triple, file=path / "training.safetensors")
    reserved = {"name", "dataset", "data_hash", "schema", "damping", "influence_scale", "calibration", "edit"}
    reserved |= set(train_config.to_dict())
    model = StoredModel(
        name=path.name,
        dataset=config.get("dataset", ""),
        data_hash=config.get("data_hash", ""),
        schema=Schema.from_dict(config["schema"], source=str(path / "config.json")),
        config=train_config,
        entity_labels=entities[0],
        entity_names=entities[1],
        relation_labels=relations[0],
        weights=weights,
        triples=triples,
        negatives=training.get("negatives"),
        valid_triples=training.get("valid_triples"),
        test_triples=training.get("test_triples"),
        damping=float(config.get("damping") or 0.0),
        influence_scale=config.get("influence_scale"),
        calibration=config_calibration(config, path / "config.json"),
        edit=config.get("edit"),
        info={k: v for k, v in config.items() if k not in reserved},
    )
    return model if torch.device(device).type == "cpu" else model.to(device)


def list_models(store: Path | str | None = None) -> list[str]:
    """Names of the complete models in the store (temporary and partial directories are skipped)."""
    store = Path(store) if store is not None else default_store()
    if not store.is_dir():
        return []
    clean_orphans(store)
    return sorted(p.name for p in store.iterdir() if not p.name.startswith(".") and is_model_dir(p))


def read_config(path: Path | str) -> dict[str, Any]:
    """The config.json of a model directory, cheaply (for listings)."""
    file = Path(path) / "config.json"
    try:
        config = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # ValueError: invalid JSON or not UTF-8
        raise ModelStoreError(MODEL_CORRUPT.format(path=file, problem=str(exc))) from exc
    if not isinstance(config, dict):
        problem = f"expected a JSON object of settings, found a {type(config).__name__}"
        raise ModelStoreError(MODEL_CORRUPT.format(path=file, problem=problem))
    return config


def model_version(path: Path | str) -> int:
    """Version of a model directory's contents: config.json's modification time (it is written last)."""
    return (Path(path) / "config.json").stat().st_mtime_ns


def _read_safetensors(file: Path) -> dict[str, torch.Tensor]:
    try:
        return load_file(file)
    except (SafetensorError, OSError) as exc:
        raise ModelStoreError(MODEL_CORRUPT.format(path=file, problem=str(exc))) from exc


def model_fingerprint(path: Path | str) -> dict[str, str]:
    """What made a model's weights: ``data_hash`` (its training data) and ``config_hash`` (SHA-256 of
    the settings that trained it, edit included). Equal fingerprints, equal weights; the influence
    scale, set later, is not part of it."""
    return config_fingerprint(read_config(path))


def config_fingerprint(config: dict[str, Any]) -> dict[str, str]:
    """:func:`model_fingerprint` of an already read config.json."""
    settings = json.dumps(weight_settings(config), sort_keys=True, default=str)
    return {"config_hash": hashlib.sha256(settings.encode("utf-8")).hexdigest(),
            "data_hash": str(config.get("data_hash") or "")}


def weight_settings(config: dict[str, Any]) -> dict[str, Any]:
    """The parts of a model's config that determine its weights."""
    keys = ("dataset", "data_hash", "model", "dim", "epochs", "batch_size", "lr", "lr_min", "margin", "l2",
            "seed", "edit")
    # Only where set: a model stored before these keys existed keeps its fingerprint (and its cached results).
    extra = {k: config[k] for k in ("distance", "imported_from", "source_hash", "debias") if config.get(k) is not None}
    if config.get("fairness_weight"):  # 0 (plain TransE) leaves every existing fingerprint unchanged
        extra["fairness_weight"] = config["fairness_weight"]
    if config.get("optimizer") not in (None, "adam"):  # the dense default keeps every stored fingerprint
        extra["optimizer"] = config["optimizer"]
    if config.get("negatives_per_triple") not in (None, 1):  # one negative (every stored model) keeps its fingerprint
        extra["negatives_per_triple"] = config["negatives_per_triple"]
    if config.get("corruption") not in (None, "uniform"):  # uniform (every stored model) keeps its fingerprint
        extra["corruption"] = config["corruption"]
    if config.get("negative_entities") not in (None, "uniform"):  # the same for the entity a negative draws
        extra["negative_entities"] = config["negative_entities"]
    if extra.get("distance") == "squared_l2":
        del extra["distance"]
    return {**{k: config.get(k) for k in keys}, **extra}
