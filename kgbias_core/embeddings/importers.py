"""Readers of embeddings trained elsewhere (TransE; PyTorch-BigGraph with any operator and comparator),
and their mapping onto a graph's ids.

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
- ``pbg``: PyTorch-BigGraph's checkpoint folder, any operator and comparator
  (:mod:`kgbias_core.embeddings.pbg_score` states its score). The ``translation`` operator with the
  ``l2`` / ``squared_l2`` comparator is TransE: score = -dist(h, t + r), the operator on the right-hand
  side, so kgbias's relation vector is -r (h + (-r) - t = h - (t + r)); with dynamic relations PBG ranks
  tails with the left-hand operator, -dist(h + r, t), and r is kept. ``diagonal`` + ``dot`` is DistMult,
  ``complex_diagonal`` + ``dot`` ComplEx (r conjugated on the tail side), the rest PBG's own formula
  (kind ``pbg``): :func:`_pbg_kind`. Entity rows are rescaled to ``max_norm`` as PBG does on every
  lookup (:func:`renormed`), then the global embedding is added. Read from the JSON PBG writes, never
  its Python config: ``config.json`` (entities, relations, comparator, ``entity_path``, ``max_norm``),
  ``checkpoint_version.txt`` = N, ``embeddings_<type>_<part>.v<N>.h5`` (dataset ``embeddings``, parts
  concatenated in order, plus ``model/entities/<type>/global_embedding`` where ``global_emb``),
  ``model.v<N>.h5`` (``model/relations/<i>/operator/rhs/<param>``, or the dynamic
  ``model/relations/0/operator/lhs/<param>s`` [R, ...]) and the names ``entity_names_<type>_<part>.json``
  / ``dynamic_rel_names.json`` from the checkpoint folder, else ``entity_path``.

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

from kgbias_core.embeddings.config import DISTANCES, IMPORT_DISTANCES, IMPORT_FORMATS
from kgbias_core.embeddings.pbg_score import PBG_COMPARATORS, PBG_OPERATORS, operator_width
from kgbias_core.embeddings.training import PYKEEN_NORMS
from kgbias_core.errors import (
    IMPORT_BAD_FILE,
    IMPORT_DIMS_DIFFER,
    IMPORT_FILE_MISSING,
    IMPORT_MISSING_LABEL,
    IMPORT_NO_DISTANCE,
    IMPORT_NOT_TRANSE,
    IMPORT_PBG_UNSUPPORTED,
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
    """Vectors read from another engine's files, in the source's own row order: TransE's, or for PBG
    the rows of the kind that scores as it does (``model``)."""

    format: str  # the reader's name: npy | pykeen | dglke | pbg
    entity_embeddings: FloatTensor  # [E_source, w_e]: d, or 2k for ComplEx ((re, im) pairs, PyKEEN's layout)
    relation_embeddings: FloatTensor  # [R_source, w_r]: d; 2k for ComplEx; pbg_score's flat operator width
    entity_rows: dict[str, int]  # entity label -> row of entity_embeddings
    relation_rows: dict[str, int]  # relation label -> row of relation_embeddings
    distance: str  # psi of h + r - t (DISTANCES): the engine's own, so measures rank as it does
    entity_map: Path  # the file the entity labels came from (named in a mismatch)
    relation_map: Path
    margin: float | None = None  # the engine's gamma where it records one (DGL-KE: score = gamma - psi)
    warnings: tuple[str, ...] = ()  # printed by the caller (an unpickled file)
    sign: str | None = None  # how the engine's relation vectors were turned into kgbias's (PBG: negated)
    model: str = "transe"  # the kind that scores as the engine: transe; PBG also distmult | complex | pbg
    pbg: dict[str, Any] | None = None  # PBG's operator, comparator, side, max_norm, ...: config.json's "pbg"


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
    ent, rel = imported.entity_embeddings, imported.relation_embeddings
    # TransE's h + r - t needs one d (Bordes eq. 1); other kinds (PBG's linear operator) shape theirs otherwise.
    if imported.model == "transe" and (ent.ndim != 2 or rel.ndim != 2 or ent.shape[1] != rel.shape[1]):
        raise DataError(IMPORT_DIMS_DIFFER.format(format=imported.format, entities=list(ent.shape),
                                                  relations=list(rel.shape)))
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
    if distance not in IMPORT_DISTANCES:
        raise _bad(path, fmt, f"unknown distance {distance!r}: choose one of {', '.join(IMPORT_DISTANCES)}")
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


def _pykeen_weights(path: Path) -> Path:
    """The file a PyKEEN import reads: ``trained_model.pt`` preferred, else ``trained_model.pkl``."""
    if not path.is_dir():
        return path
    if not (path / "trained_model.pt").is_file() and (path / "trained_model.pkl").is_file():
        return path / "trained_model.pkl"
    return path / "trained_model.pt"


def pickle_to_read(fmt: str, path: Path | str) -> Path | None:
    """The pickle an import of ``fmt`` at ``path`` would unpickle (given trust), else None: the caller
    warns *before* the reader runs, since unpickling runs the file's code before anything can be said."""
    if fmt != "pykeen":
        return None
    file = _pykeen_weights(Path(path))
    return file if file.suffix == ".pkl" else None


def read_pykeen(path: Path, *, distance: str | None = None, trust_pickle: bool = False) -> ImportedEmbeddings:
    """A PyKEEN TransE: ``path`` is the directory ``save_to_directory`` wrote (``trained_model.pt``
    preferred, else ``trained_model.pkl``) or a state-dict / checkpoint file beside ``training_triples/``."""
    path, fmt = Path(path), "pykeen"
    folder = path if path.is_dir() else path.parent
    weights_file = _pykeen_weights(path)
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


#: PBG's parameter names of each operator (torchbiggraph/operators.py), in the order kgbias flattens them
#: (:mod:`kgbias_core.embeddings.pbg_score`); a dynamic operator stacks them under the plural name.
_PBG_PARAMS = {"none": (), "diagonal": ("diagonal",), "translation": ("translation",),
               "linear": ("linear_transformation",), "affine": ("linear_transformation", "translation"),
               "complex_diagonal": ("real", "imag")}
#: How PBG's relation parameters became kgbias's, per (kind, side): recorded as ``sign`` in config.json.
PBG_SIGN = {
    ("transe", "tail"): "pbg: relation applied to the tail (score -dist(h, t + r)), negated on import",
    ("transe", "head"): "pbg: dynamic relations, the left-hand operator on the head (score -dist(h + r, t)), as is",
    ("distmult", "tail"): "pbg: diagonal on the tail, <h, r * t> = sum h r t, as is",
    ("distmult", "head"): "pbg: diagonal on the head, <r * h, t> = sum h r t, as is",
    ("complex", "tail"): "pbg: complex_diagonal on the tail, <h, r * t> = Re(sum h conj(r) conj(t)): r conjugated",
    ("complex", "head"): "pbg: complex_diagonal on the head, <r * h, t> = Re(sum h r conj(t)): r as is",
    ("pbg", "tail"): "pbg: PBG's own score, the operator on the tail",
    ("pbg", "head"): "pbg: PBG's own score, the left-hand operator on the head",
}


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


def renormed(rows: np.ndarray, max_norm: float | None) -> np.ndarray:
    """PBG's ``max_norm`` (``torch.nn.functional.embedding(..., max_norm=)`` on every lookup): a row whose
    L2 norm exceeds it is scaled by max_norm / (norm + 1e-7), torch's ``embedding_renorm_``; [n, d] -> [n, d]."""
    if max_norm is None:
        return rows
    norms = np.linalg.norm(rows, axis=1, keepdims=True)  # [n, 1]
    return np.where(norms > max_norm, rows * (max_norm / (norms + 1e-7)), rows).astype(rows.dtype)


def _interleaved(halves: np.ndarray) -> np.ndarray:
    """PBG's complex layout (real half, imaginary half) [n, 2k] -> PyKEEN's (re, im) pairs [n, 2k]."""
    half = halves.shape[1] // 2
    return np.stack([halves[:, :half], halves[:, half:]], axis=-1).reshape(halves.shape[0], 2 * half)


def _pbg_kind(operator: str, comparator: str, side: str, params: np.ndarray, dim: int) -> tuple[str, np.ndarray]:
    """The kgbias model kind that scores exactly as PBG does, and its relation rows [R, k] from PBG's flat
    operator parameters ``params`` [R, k] (pbg_score's layout). Entity rows stay as they are, except
    ComplEx's, interleaved by the caller.

    - translation / none with l2 or squared_l2: TransE with r' = -r on the tail side (-dist(h, t + r)
      = -dist(h + (-r), t)), r' = r on the head side, r' = 0 for none;
    - diagonal / none with dot: DistMult, sum h_i r_i t_i (none: r = 1), the same on either side;
    - complex_diagonal with dot: ComplEx, Re(sum h r conj(t)): PBG's <h, r ⊙ t> = Re(sum conj(h) r t)
      = Re(sum h conj(r) conj(t)), so the tail side stores conj(r) and the head side (<r ⊙ h, t>) r;
    - everything else (cos, which normalises after the operator; translation, linear or affine with dot;
      l2 with a non-translation operator): the ``pbg`` kind, PBG's own formula.
    """
    n_relations = params.shape[0]
    if comparator in ("l2", "squared_l2") and operator in ("translation", "none"):
        if operator == "none":
            return "transe", np.zeros((n_relations, dim), dtype=np.float32)
        return "transe", -params if side == "tail" else params
    if comparator == "dot" and operator in ("diagonal", "none"):
        return "distmult", np.ones((n_relations, dim), dtype=np.float32) if operator == "none" else params
    if comparator == "dot" and operator == "complex_diagonal":
        half = dim // 2
        conjugated = np.concatenate([params[:, :half], -params[:, half:]], axis=1) if side == "tail" else params
        return "complex", _interleaved(conjugated)
    return "pbg", params


def _pbg_params(model_file: Path, *, operator: str, dynamic: bool, n_relations: int, dim: int,
                fmt: str) -> np.ndarray:
    """Each relation's operator parameters, flattened [R, k]: a static relation i's right-hand operator
    (``model/relations/<i>/operator/rhs/<param>``), or the dynamic left-hand stack
    (``model/relations/0/operator/lhs/<param>s``), the operator PBG ranks tails with."""
    width = operator_width(operator, dim)
    if operator == "none":
        return np.zeros((n_relations, width), dtype=np.float32)
    if dynamic:
        blocks = []
        for param in _PBG_PARAMS[operator]:
            plural = param if param in ("real", "imag") else f"{param}s"
            stacked = _h5(model_file, f"model/relations/0/operator/lhs/{plural}", fmt)
            if stacked.shape[0] != n_relations:
                raise _bad(model_file, fmt, f"the dynamic {operator} operator has {stacked.shape[0]} rows for "
                                            f"{n_relations} relation names")
            blocks.append(stacked.reshape(n_relations, -1))
        params = np.concatenate(blocks, axis=1)
    else:
        params = np.stack([np.concatenate([_h5(model_file, f"model/relations/{i}/operator/rhs/{p}", fmt).reshape(-1)
                                           for p in _PBG_PARAMS[operator]]) for i in range(n_relations)])
    if params.shape[1] != width:
        raise _bad(model_file, fmt, f"the {operator} operator holds {params.shape[1]} values per relation, "
                                    f"{width} expected for dimension {dim}")
    return params.astype(np.float32)


def read_pbg(path: Path, *, distance: str | None = None, trust_pickle: bool = False) -> ImportedEmbeddings:
    """PyTorch-BigGraph's checkpoint folder (module docstring): one entity type, any number of partitions,
    one operator for every relation and any comparator; see :func:`_pbg_kind` for the kind it becomes.
    PBG's config is Python and is never executed: the reader takes the ``config.json`` PBG writes beside
    the checkpoint. ``trust_pickle`` is unused: nothing here is a pickle."""
    path, fmt = Path(path), "pbg"
    config_file = _need(path / "config.json", fmt, "the config.json PyTorch-BigGraph writes into the checkpoint")
    config = _json(config_file, fmt)
    entity_types, relations = config.get("entities"), config.get("relations")
    if (not isinstance(entity_types, dict) or len(entity_types) != 1 or not isinstance(relations, list)
            or not relations or not all(isinstance(relation, dict) for relation in relations)):
        raise _bad(config_file, fmt, "kgbias imports one entity type and at least one relation type; found "
                                     f"entities {sorted(entity_types or {})}")
    (entity_type, entity_config), = entity_types.items()
    entity_config = entity_config or {}
    operators = sorted({str(relation.get("operator", "none")) for relation in relations})
    comparator = str(config.get("comparator", "cos"))
    max_norm = config.get("max_norm")
    refused = [problem for problem, found in (
        (f"relations with different operators ({', '.join(operators)})", len(operators) > 1),
        (f"the operator {operators[0]!r} (PBG's are {', '.join(PBG_OPERATORS)})", operators[0] not in PBG_OPERATORS),
        (f"the comparator {comparator!r} (PBG's are {', '.join(PBG_COMPARATORS)})", comparator not in PBG_COMPARATORS),
        ("the bias term (bias: true), which takes the first coordinate out of the comparison",
         bool(config.get("bias"))),
        ("featurized entities, whose vectors are sums of feature vectors", bool(entity_config.get("featurized"))),
        (f"max_norm {max_norm!r}, not a positive number", max_norm is not None and not (
            isinstance(max_norm, int | float) and not isinstance(max_norm, bool) and max_norm > 0)),
    ) if found]
    if refused:
        raise DataError(IMPORT_PBG_UNSUPPORTED.format(path=config_file, problem=refused[0]))
    operator = operators[0]
    try:
        version = int(_need(path / "checkpoint_version.txt", fmt, "the checkpoint's version").read_text().strip())
    except ValueError as exc:
        raise _bad(path / "checkpoint_version.txt", fmt, exc) from None
    parts = int(entity_config.get("num_partitions", 1))
    entity_path = Path(str(config.get("entity_path") or path))
    names_dir = path if (path / f"entity_names_{entity_type}_0.json").is_file() else entity_path
    names, blocks = [], []
    for part in range(parts):
        names += _name_list(names_dir / f"entity_names_{entity_type}_{part}.json", fmt)
        blocks.append(_h5(path / f"embeddings_{entity_type}_{part}.v{version}.h5", "embeddings", fmt))
    # PBG looks a row up with max_norm first, then adds the global embedding (model.py: adjust_embs).
    entities = renormed(np.concatenate(blocks), max_norm)
    model_file = path / f"model.v{version}.h5"
    if config.get("global_emb", True):
        entities = entities + _h5(model_file, f"model/entities/{entity_type}/global_embedding", fmt)
    dim = entities.shape[1]
    if operator == "complex_diagonal" and dim % 2:
        raise _bad(config_file, fmt, f"complex_diagonal needs an even dimension, the embeddings have {dim}")
    dynamic = bool(config.get("dynamic_relations"))
    if dynamic:
        relation_map = names_dir / "dynamic_rel_names.json"
        relation_names = _name_list(relation_map, fmt)
    else:
        relation_map = config_file
        relation_names = [str(relation.get("name")) for relation in relations]
    side = "head" if dynamic else "tail"
    params = _pbg_params(model_file, operator=operator, dynamic=dynamic, n_relations=len(relation_names), dim=dim,
                         fmt=fmt)
    kind, relation_rows = _pbg_kind(operator, comparator, side, params, dim)
    if kind != "transe" and distance is not None:
        raise _bad(config_file, fmt, f"--distance {distance} names TransE's distance; the {operator} operator "
                                     f"with the {comparator} comparator is scored as PBG scores it, with none")
    if kind == "complex":
        entities = _interleaved(entities)
    entity_map = names_dir / f"entity_names_{entity_type}_0.json"
    if len(names) != entities.shape[0]:
        raise _bad(entity_map, fmt, f"{len(names)} names for {entities.shape[0]} embedding rows")
    return ImportedEmbeddings(
        format=fmt, entity_embeddings=torch.from_numpy(np.ascontiguousarray(entities)),
        relation_embeddings=torch.from_numpy(np.ascontiguousarray(relation_rows)),
        entity_rows=_rows(names, entity_map, fmt, entities.shape[0]),
        relation_rows=_rows(relation_names, relation_map, fmt, relation_rows.shape[0]),
        distance=_distance(comparator, distance, path=config_file, fmt=fmt) if kind == "transe" else DISTANCES[0],
        entity_map=entity_map, relation_map=relation_map, sign=PBG_SIGN[kind, side],
        model=kind,
        pbg={"operator": operator, "comparator": comparator, "side": side, "max_norm": max_norm,
             "global_emb": bool(config.get("global_emb", True)), "dynamic_relations": dynamic, "dim": dim},
    )


#: The readers by format name (the CLI's ``--format``).
READERS: dict[str, Callable[..., ImportedEmbeddings]] = dict(
    zip(IMPORT_FORMATS, (read_npy, read_pykeen, read_dglke, read_pbg), strict=True))
