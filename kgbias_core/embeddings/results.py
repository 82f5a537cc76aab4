"""The results cache of a model directory: ``<model>/results/<key>.csv`` and ``<key>.json``.

A derived table (link prediction, a removal curve, the findings, ...) is cached beside the model that made
it, with that model's config fingerprint, data hash and the parameters it was computed with; it is read
back only while all three still match. This module is the only one that knows the ``results/`` layout.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgbias_core.embeddings.store import StoredModel, read_config, save_model, weight_settings
from kgbias_core.errors import ModelStoreError

if TYPE_CHECKING:
    import pandas as pd

#: The folder of a model directory that holds its cached results.
RESULTS = "results"


def _result_paths(model_dir: Path, key: str) -> tuple[Path, Path]:
    folder = Path(model_dir) / RESULTS
    return folder / f"{key}.csv", folder / f"{key}.json"


def save_result(model_dir: Path | str, key: str, frame: pd.DataFrame, *, params: dict[str, Any]) -> Path | None:
    """Cache a derived table beside a model, with the model's config, data hash and ``params``.

    Written atomically (temporary file, then rename); :func:`load_result` returns it only while the
    model and params are still the ones that made it. A directory that cannot be written (read-only)
    caches nothing: None.
    """
    config = read_config(model_dir)
    csv_path, meta_path = _result_paths(Path(model_dir), key)
    meta = {"data_hash": config.get("data_hash"), "model_config": weight_settings(config), "params": params}
    try:
        csv_path.parent.mkdir(exist_ok=True)
        for path, text in ((csv_path, frame.to_csv(index=False)), (meta_path, json.dumps(meta, sort_keys=True))):
            tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
            try:
                tmp.write_text(text, encoding="utf-8")
                os.replace(tmp, path)
            finally:
                tmp.unlink(missing_ok=True)
    except OSError:  # a read-only model directory: the result is computed, only not cached
        return None
    return csv_path


def load_result(model_dir: Path | str, key: str, *, params: dict[str, Any]) -> pd.DataFrame | None:
    """A table cached by :func:`save_result`, or None if absent or made by another model/params."""
    import pandas as pd

    csv_path, meta_path = _result_paths(Path(model_dir), key)
    if not csv_path.is_file() or not meta_path.is_file():
        return None
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        config = read_config(model_dir)
    except (OSError, json.JSONDecodeError, ModelStoreError):
        return None
    expected = {"data_hash": config.get("data_hash"), "model_config": weight_settings(config),
                "params": json.loads(json.dumps(params, sort_keys=True))}
    if meta != expected:
        return None
    return pd.read_csv(csv_path)


def cached_params(model_dir: Path | str, prefix: str) -> list[Any]:
    """The ``params`` of every result cached beside the model whose key starts with ``prefix``, in key order
    (files kgbias did not write, or cannot read, are skipped)."""
    found = []
    for meta in sorted((Path(model_dir) / RESULTS).glob(f"{prefix}*.json")):
        try:
            found.append(json.loads(meta.read_text(encoding="utf-8"))["params"])
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not a result kgbias wrote: nothing to report from it
    return found


def resave_model(model: StoredModel, model_dir: Path | str) -> Path:
    """Save ``model`` over the model at ``model_dir`` (atomic :func:`save_model`), keeping the results cached
    beside it: for a change that leaves the weights as they are (a calibration), so the results stay valid."""
    model_dir = Path(model_dir)
    results = model_dir / RESULTS
    kept = model_dir.parent / f".results-{model.name}-{uuid.uuid4().hex}"
    if results.is_dir():
        shutil.copytree(results, kept)
    try:
        path = save_model(model, model_dir.parent, overwrite=True)
        if kept.is_dir():
            shutil.copytree(kept, path / RESULTS, dirs_exist_ok=True)
    finally:
        shutil.rmtree(kept, ignore_errors=True)
    return path
