"""Readers of TransE embeddings trained elsewhere, and their mapping onto a graph's ids.

One reader per format returns an :class:`ImportedEmbeddings` in its source's own row order, with its
label -> row maps and its scoring convention; :func:`onto_graph` is the one place rows are matched to
the graph's ids. Each engine's convention, with psi the distance of the residual v = h + r - t
(:func:`~kgbias_core.embeddings.objective.residual_distance`; every engine ranks lower psi as more
plausible, so kgbias's measures read the vectors unchanged):

- ``npy``: ``entities.npy`` [E, d], ``relations.npy`` [R, d], ``entities.tsv`` / ``relations.tsv``
  with one ``id<TAB>label`` line per row (id = the row of the .npy, no header; DGL-KE's layout), and
  an optional ``config.json`` ``{"model": "transe", "distance": "l1" | "l2" | "squared_l2"}``.
- ``pykeen``: PyKEEN's TransE, score = -||h + r - t||_p, raised to the power p with
  ``power_norm`` (PyKEEN's default: p = 1, no power, i.e. L1). Weights from ``trained_model.pt``
  (a ``state_dict()`` or a training checkpoint's ``model_state_dict``), the id maps from
  ``training_triples/entity_to_id.tsv.gz`` and ``relation_to_id.tsv.gz`` (gzip TSV, header
  ``id<TAB>label``), as ``PipelineResult.save_to_directory`` writes them. A state dict does not name
  its distance (``--distance``); the pickled ``trained_model.pkl`` does, and is read only when trusted.
- ``dglke``: DGL-KE's ``TransE_l1`` / ``TransE_l2`` (``TransE`` = ``TransE_l2``): score =
  gamma - ||h + r - t||_1 or _2 (not squared). ``config.json`` names the model, dataset, gamma and the
  id map files; weights in ``<dataset>_<model>_entity.npy`` / ``_relation.npy``.
- ``pbg``: PyTorch-BigGraph's checkpoint folder with the ``translation`` operator and the ``l2`` /
  ``squared_l2`` comparator: score = -dist(h, t + r), the operator on the right-hand side, so kgbias's
  relation vector is -r (h + (-r) - t = h - (t + r)). Read from the JSON PBG writes, never its Python
  config: ``config.json`` (entities, relations, comparator, ``entity_path``), ``checkpoint_version.txt``
  = N, ``embeddings_<type>_<part>.v<N>.h5`` (dataset ``embeddings``, parts concatenated in order, plus
  ``model/entities/<type>/global_embedding`` where ``global_emb``), ``model.v<N>.h5``
  (``model/relations/<i>/operator/rhs/translation``, or ``.../relations/0/.../translations`` [R, d] with
  dynamic relations) and the names ``entity_names_<type>_<part>.json`` / ``dynamic_rel_names.json``
  from the checkpoint folder, else ``entity_path``.

Untrusted files are never unpickled: ``numpy.load(allow_pickle=False)``,
``torch.load(weights_only=True)``, JSON and TSV; a pickle only with ``trust_pickle``.
"""

from __future__ import annotations

import csv
import gzip
import json
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from kgbias_core.embeddings.config import DISTANCES, IMPORT_FORMATS
from kgbias_core.embeddings.training import PYKEEN_NORMS
from kgbias_core.errors import (
    IMPORT_BAD_FILE,
    IMPORT_FILE_MISSING,
    IMPORT_MISSING_LABEL,
    IMPORT_NO_DISTANCE,
    IMPORT_NOT_TRANSE,
    IMPORT_PICKLE_REFUSED,
    IMPORT_PICKLE_TRUSTED,
    DataError,
)
from kgbias_core.types import FloatTensor

#: PyKEEN's TransE state-dict keys of the entity and relation vectors.
PYKEEN_ENTITY_KEY = "entity_representations.0._embeddings.weight"
PYKEEN_RELATION_KEY = "relation_representations.0._embeddings.weight"
#: PyKEEN's (scoring_fct_norm p, power_norm) -> distance: the inverse of the table kgbias scores through.
_PYKEEN_DISTANCES = {norms: distance for distance, norms in PYKEEN_NORMS.items()}
#: DGL-KE's TransE model names -> distance (``TransE`` is its alias of ``TransE_l2``).
_DGLKE_DISTANCES = {"TransE": "l2", "TransE_l2": "l2", "TransE_l1": "l1"}


@dataclass(frozen=True)
class ImportedEmbeddings:
    """TransE vectors read from another engine's files, in the source's own row order."""

    format: str  # the reader's name: npy | pykeen | dglke
    entity_embeddings: FloatTensor  # [E_source, d]
    relation_embeddings: FloatTensor  # [R_source, d]
    entity_rows: dict[str, int]  # entity label -> row of entity_embeddings
    relation_rows: dict[str, int]  # relation label -> row of relation_embeddings
    distance: str  # psi of h + r - t (DISTANCES): the engine's own, so measures rank as it does
    entity_map: Path  # the file the entity labels came from (named in a mismatch)
    relation_map: Path
    margin: float | None = None  # the engine's gamma where it records one (DGL-KE: score = gamma - psi)
    warnings: tuple[str, ...] = ()  # printed by the caller (an unpickled file)
    sign: str | None = None  # how the engine's relation vectors were turned into h + r - t (PBG: negated)


def onto_graph(
    imported: ImportedEmbeddings, *, entity_labels: tuple[str, ...], relation_labels: tuple[str, ...], graph: str
) -> tuple[FloatTensor, FloatTensor]:
    """The imported vectors re-ordered to the graph's ids: ([E, d], [R, d]), row i = the graph's id i.

    Every entity and relation of the graph must be in the imported maps (:data:`IMPORT_MISSING_LABEL`
    names the first missing one and the counts); imported rows the graph lacks are dropped.
    """
    rows = []
    for kind, kinds, labels, found_rows, path in (
        ("entity", "entities", entity_labels, imported.entity_rows, imported.entity_map),
        ("relation", "relations", relation_labels, imported.relation_rows, imported.relation_map),
    ):
        missing = [label for label in labels if label not in found_rows]
        if missing:
            raise DataError(IMPORT_MISSING_LABEL.format(
                kind=kind, kinds=kinds, label=missing[0], graph=graph, path=path, found=len(labels) - len(missing),
                needed=len(labels), imported=len(found_rows)))
        rows.append(torch.tensor([found_rows[label] for label in labels], dtype=torch.long))
    entities = imported.entity_embeddings[rows[0]].to(torch.float32).contiguous()  # [E, d]
    relations = imported.relation_embeddings[rows[1]].to(torch.float32).contiguous()  # [R, d]
    return entities, relations


def _need(path: Path, fmt: str, expected: str) -> Path:
    if not path.is_file():
        raise DataError(IMPORT_FILE_MISSING.format(format=fmt, path=path, expected=expected))
    return path


def _bad(path: Path, fmt: str, problem: object) -> DataError:
    return DataError(IMPORT_BAD_FILE.format(format=fmt, path=path, problem=problem))


def _matrix(path: Path, fmt: str) -> FloatTensor:
    """A float matrix [n, d] from a .npy file, never unpickling."""
    try:
        array = np.load(_need(path, fmt, "a NumPy array [n, d]"), allow_pickle=False)
    except (ValueError, OSError) as exc:  # ValueError: a pickled (object) array or not a .npy
        raise _bad(path, fmt, exc) from None
    if array.ndim != 2 or not np.issubdtype(array.dtype, np.floating):
        raise _bad(path, fmt, f"expected a float matrix [n, d], found {array.dtype} of shape {list(array.shape)}")
    return _finite(torch.from_numpy(np.ascontiguousarray(array)), path, fmt)


def _finite(tensor: torch.Tensor, path: Path, fmt: str) -> FloatTensor:
    bad = int((~torch.isfinite(tensor)).sum())
    if bad:
        raise _bad(path, fmt, f"{bad} values are not finite")
    return tensor


def _id_map(lines: list[list[str]], *, path: Path, fmt: str, n_rows: int) -> dict[str, int]:
    """label -> row from ``id, label`` rows; each id a row of a matrix with ``n_rows`` rows, each label once."""
    rows: dict[str, int] = {}
    for number, parts in enumerate(lines, start=1):
        if len(parts) != 2 or not parts[0].strip().isdigit():
            raise _bad(path, fmt, f"line {number} is not 'id<TAB>label'")
        row, label = int(parts[0]), parts[1]
        if row >= n_rows:
            raise _bad(path, fmt, f"line {number}: id {row} is beyond the {n_rows} rows of the embeddings")
        if rows.setdefault(label, row) != row:
            raise _bad(path, fmt, f"line {number}: label {label!r} appears twice")
    return rows


def _tsv_map(path: Path, fmt: str, n_rows: int) -> dict[str, int]:
    """An ``id<TAB>label`` file without header (DGL-KE's and the npy format's id maps)."""
    try:
        text = _need(path, fmt, "id<TAB>label lines").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _bad(path, fmt, exc) from None
    lines = [line.rstrip("\r").split("\t") for line in text.split("\n") if line.strip()]
    return _id_map(lines, path=path, fmt=fmt, n_rows=n_rows)


def _json(path: Path, fmt: str) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise _bad(path, fmt, exc) from None
    if not isinstance(data, dict):
        raise _bad(path, fmt, "expected a JSON object")
    return data


def _distance(recorded: str | None, given: str | None, *, path: Path, fmt: str) -> str:
    """The engine's distance: what its files record, else ``given`` (``--distance``); both must agree."""
    if recorded is not None and given is not None and recorded != given:
        raise _bad(path, fmt, f"its files record distance {recorded!r}, --distance says {given!r}")
    distance = recorded or given
    if distance is None:
        raise DataError(IMPORT_NO_DISTANCE.format(format=fmt, path=path))
    if distance not in DISTANCES:
        raise _bad(path, fmt, f"unknown distance {distance!r}: choose one of {', '.join(DISTANCES)}")
    return distance


def read_npy(path: Path, *, distance: str | None = None, trust_pickle: bool = False) -> ImportedEmbeddings:
    """Plain arrays: ``entities.npy``, ``relations.npy``, ``entities.tsv``, ``relations.tsv``, optional
    ``config.json`` (module docstring). ``trust_pickle`` is unused: nothing here is a pickle."""
    path, fmt = Path(path), "npy"
    config = _json(path / "config.json", fmt) if (path / "config.json").is_file() else {}
    if str(config.get("model", "transe")).lower() != "transe":
        raise DataError(IMPORT_NOT_TRANSE.format(format=fmt, path=path / "config.json", found=config["model"]))
    entities, relations = _matrix(path / "entities.npy", fmt), _matrix(path / "relations.npy", fmt)
    return ImportedEmbeddings(
        format=fmt, entity_embeddings=entities, relation_embeddings=relations,
        entity_rows=_tsv_map(path / "entities.tsv", fmt, entities.shape[0]),
        relation_rows=_tsv_map(path / "relations.tsv", fmt, relations.shape[0]),
        distance=_distance(config.get("distance"), distance, path=path, fmt=fmt),
        entity_map=path / "entities.tsv", relation_map=path / "relations.tsv",
    )


def _pykeen_map(path: Path, n_rows: int) -> dict[str, int]:
    """PyKEEN's ``<name>.tsv.gz`` (pandas' TSV with the header ``id<TAB>label``)."""
    try:
        with gzip.open(_need(path, "pykeen", "PyKEEN's gzip TSV id map"), "rt", encoding="utf-8", newline="") as handle:
            lines = list(csv.reader(handle, delimiter="\t"))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise _bad(path, "pykeen", exc) from None
    if not lines or lines[0] != ["id", "label"]:
        raise _bad(path, "pykeen", "the header is not 'id<TAB>label'")
    return _id_map(lines[1:], path=path, fmt="pykeen", n_rows=n_rows)


def read_pykeen(path: Path, *, distance: str | None = None, trust_pickle: bool = False) -> ImportedEmbeddings:
    """A PyKEEN TransE: ``path`` is the directory ``save_to_directory`` wrote (``trained_model.pt``
    preferred, else ``trained_model.pkl``) or a state-dict / checkpoint file beside ``training_triples/``."""
    path, fmt = Path(path), "pykeen"
    folder = path if path.is_dir() else path.parent
    weights_file = path
    if path.is_dir():
        weights_file = path / "trained_model.pt"
        if not weights_file.is_file() and (path / "trained_model.pkl").is_file():
            weights_file = path / "trained_model.pkl"
    _need(weights_file, fmt, "a state dict (torch.save(model.state_dict(), ...)) or trained_model.pkl")
    warnings: tuple[str, ...] = ()
    recorded = None
    if weights_file.suffix == ".pkl":
        if not trust_pickle:
            raise DataError(IMPORT_PICKLE_REFUSED.format(path=weights_file))
        warnings = (IMPORT_PICKLE_TRUSTED.format(path=weights_file),)
        try:
            module = torch.load(weights_file, map_location="cpu", weights_only=False)  # trusted by the caller
        except (OSError, RuntimeError, pickle.UnpicklingError, AttributeError, ModuleNotFoundError) as exc:
            raise _bad(weights_file, fmt, exc) from None
        interaction = getattr(module, "interaction", None)
        key = (getattr(interaction, "p", None), bool(getattr(interaction, "power_norm", False)))
        if type(module).__name__ != "TransE" or key not in _PYKEEN_DISTANCES:
            found = type(module).__name__ if type(module).__name__ != "TransE" else f"TransE with p = {key[0]}"
            raise DataError(IMPORT_NOT_TRANSE.format(format=fmt, path=weights_file, found=found))
        recorded, state = _PYKEEN_DISTANCES[key], module.state_dict()
    else:
        try:
            state = torch.load(weights_file, map_location="cpu", weights_only=True)
        except (OSError, RuntimeError, pickle.UnpicklingError) as exc:  # weights_only refuses arbitrary objects
            raise _bad(weights_file, fmt, f"not a plain state dict ({str(exc).splitlines()[0]})") from None
        if isinstance(state, dict) and isinstance(state.get("model_state_dict"), dict):  # a training checkpoint
            state = state["model_state_dict"]
    if not isinstance(state, dict) or PYKEEN_ENTITY_KEY not in state or PYKEEN_RELATION_KEY not in state:
        keys = ", ".join(sorted(state)[:4]) if isinstance(state, dict) else type(state).__name__
        raise DataError(IMPORT_NOT_TRANSE.format(format=fmt, path=weights_file, found=f"a state dict of {keys}"))
    entities = _finite(state[PYKEEN_ENTITY_KEY].detach().cpu(), weights_file, fmt)
    relations = _finite(state[PYKEEN_RELATION_KEY].detach().cpu(), weights_file, fmt)
    maps = folder / "training_triples"
    return ImportedEmbeddings(
        format=fmt, entity_embeddings=entities, relation_embeddings=relations,
        entity_rows=_pykeen_map(maps / "entity_to_id.tsv.gz", entities.shape[0]),
        relation_rows=_pykeen_map(maps / "relation_to_id.tsv.gz", relations.shape[0]),
        distance=_distance(recorded, distance, path=weights_file, fmt=fmt),
        entity_map=maps / "entity_to_id.tsv.gz", relation_map=maps / "relation_to_id.tsv.gz", warnings=warnings,
    )


def read_dglke(path: Path, *, distance: str | None = None, trust_pickle: bool = False) -> ImportedEmbeddings:
    """DGL-KE's ``dglke_train`` output folder (module docstring), with the id maps its ``config.json``
    names (``emap_file`` / ``rmap_file``, default ``entities.tsv`` / ``relations.tsv``) in the same folder."""
    path, fmt = Path(path), "dglke"
    config = _json(_need(path / "config.json", fmt, "DGL-KE's training config"), fmt)
    model, dataset = str(config.get("model", "")), str(config.get("dataset", ""))
    if model not in _DGLKE_DISTANCES:
        raise DataError(IMPORT_NOT_TRANSE.format(format=fmt, path=path / "config.json", found=model or "unnamed"))
    entities = _matrix(path / f"{dataset}_{model}_entity.npy", fmt)
    relations = _matrix(path / f"{dataset}_{model}_relation.npy", fmt)
    # Only a file name: a config must not send the reader elsewhere on the disk.
    entity_map = path / Path(str(config.get("emap_file") or "entities.tsv")).name
    relation_map = path / Path(str(config.get("rmap_file") or "relations.tsv")).name
    gamma = config.get("gamma")
    return ImportedEmbeddings(
        format=fmt, entity_embeddings=entities, relation_embeddings=relations,
        entity_rows=_tsv_map(entity_map, fmt, entities.shape[0]),
        relation_rows=_tsv_map(relation_map, fmt, relations.shape[0]),
        distance=_distance(_DGLKE_DISTANCES[model], distance, path=path / "config.json", fmt=fmt),
        entity_map=entity_map, relation_map=relation_map,
        margin=float(gamma) if isinstance(gamma, int | float) and not isinstance(gamma, bool) else None,
    )


#: PBG's comparators that are a translation distance -> kgbias's distance (``dot`` and ``cos`` are not).
_PBG_DISTANCES = {"l2": "l2", "squared_l2": "squared_l2"}
PBG_SIGN = "pbg: relation applied to the tail (score -dist(h, t + r)), negated on import"


def _h5(path: Path, dataset: str, fmt: str) -> np.ndarray:
    """One HDF5 dataset as a finite float array, or a one-line error naming the file."""
    try:
        import h5py
    except ImportError:
        raise _bad(path, fmt, "reading PyTorch-BigGraph's HDF5 files needs h5py (pip install h5py)") from None
    try:
        with h5py.File(_need(path, fmt, "a PyTorch-BigGraph checkpoint HDF5 file"), "r") as handle:
            if not isinstance(handle.get(dataset), h5py.Dataset):
                raise _bad(path, fmt, f"no dataset {dataset!r}")
            array = handle[dataset][...]
    except OSError as exc:
        raise _bad(path, fmt, exc) from None
    if not np.issubdtype(array.dtype, np.floating):
        raise _bad(path, fmt, f"{dataset!r} is {array.dtype}, not floats")
    return _finite(torch.from_numpy(np.ascontiguousarray(array)), path, fmt).numpy()


def _name_list(path: Path, fmt: str) -> list[str]:
    try:
        names = json.loads(_need(path, fmt, "a JSON list of names in row order").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise _bad(path, fmt, exc) from None
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise _bad(path, fmt, "expected a JSON list of names")
    return names


def _rows(names: list[str], path: Path, fmt: str, n_rows: int) -> dict[str, int]:
    return _id_map([[str(i), name] for i, name in enumerate(names)], path=path, fmt=fmt, n_rows=n_rows)


def read_pbg(path: Path, *, distance: str | None = None, trust_pickle: bool = False) -> ImportedEmbeddings:
    """PyTorch-BigGraph's checkpoint folder (module docstring): one entity type, any number of partitions.
    PBG's config is Python and is never executed: the reader takes the ``config.json`` PBG writes beside
    the checkpoint. ``trust_pickle`` is unused: nothing here is a pickle."""
    path, fmt = Path(path), "pbg"
    config_file = _need(path / "config.json", fmt, "the config.json PyTorch-BigGraph writes into the checkpoint")
    config = _json(config_file, fmt)
    entity_types, relations = config.get("entities"), config.get("relations")
    if not isinstance(entity_types, dict) or len(entity_types) != 1 or not isinstance(relations, list) or not relations:
        raise _bad(config_file, fmt, "kgbias imports one entity type and at least one relation type; found "
                                     f"entities {sorted(entity_types or {})}")
    (entity_type, entity_config), = entity_types.items()
    operators = {str(relation.get("operator", "none")) for relation in relations if isinstance(relation, dict)}
    comparator = str(config.get("comparator", "cos"))
    if (operators != {"translation"} or comparator not in _PBG_DISTANCES or config.get("bias")
            or (entity_config or {}).get("featurized")):
        found = (f"operator {'/'.join(sorted(operators))} with the {comparator} comparator"
                 + (" and bias" if config.get("bias") else "") + (" on featurized entities"
                                                                 if (entity_config or {}).get("featurized") else ""))
        raise DataError(IMPORT_NOT_TRANSE.format(format=fmt, path=config_file, found=found)
                        + " (Du's measures need a translation distance)")
    try:
        version = int(_need(path / "checkpoint_version.txt", fmt, "the checkpoint's version").read_text().strip())
    except ValueError as exc:
        raise _bad(path / "checkpoint_version.txt", fmt, exc) from None
    parts = int((entity_config or {}).get("num_partitions", 1))
    entity_path = Path(str(config.get("entity_path") or path))
    names_dir = path if (path / f"entity_names_{entity_type}_0.json").is_file() else entity_path
    names, blocks = [], []
    for part in range(parts):
        names += _name_list(names_dir / f"entity_names_{entity_type}_{part}.json", fmt)
        blocks.append(_h5(path / f"embeddings_{entity_type}_{part}.v{version}.h5", "embeddings", fmt))
    entities = np.concatenate(blocks)
    model_file = path / f"model.v{version}.h5"
    if config.get("global_emb", True):
        entities = entities + _h5(model_file, f"model/entities/{entity_type}/global_embedding", fmt)
    if config.get("dynamic_relations"):
        relation_map = names_dir / "dynamic_rel_names.json"
        relation_names = _name_list(relation_map, fmt)
        translations = _h5(model_file, "model/relations/0/operator/rhs/translations", fmt)
    else:
        relation_map = config_file
        relation_names = [str(relation.get("name")) for relation in relations]
        translations = np.stack([_h5(model_file, f"model/relations/{i}/operator/rhs/translation", fmt)
                                 for i in range(len(relations))])
    entity_map = names_dir / f"entity_names_{entity_type}_0.json"
    if len(names) != entities.shape[0]:
        raise _bad(entity_map, fmt, f"{len(names)} names for {entities.shape[0]} embedding rows")
    return ImportedEmbeddings(
        format=fmt, entity_embeddings=torch.from_numpy(entities), relation_embeddings=torch.from_numpy(-translations),
        entity_rows=_rows(names, entity_map, fmt, entities.shape[0]),
        relation_rows=_rows(relation_names, relation_map, fmt, translations.shape[0]),
        distance=_distance(_PBG_DISTANCES[comparator], distance, path=config_file, fmt=fmt),
        entity_map=entity_map, relation_map=relation_map, sign=PBG_SIGN,
    )


#: The readers by format name (the CLI's ``--format``).
READERS: dict[str, Callable[..., ImportedEmbeddings]] = dict(
    zip(IMPORT_FORMATS, (read_npy, read_pykeen, read_dglke, read_pbg), strict=True))
