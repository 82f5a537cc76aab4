"""prepare: everything a demo shows, ahead of time, and what of it is in the store already."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from kgbias_core.embeddings.config import DEFAULT_FAMILY_SEEDS
from kgbias_core.embeddings.store import (
    is_model_dir,
    read_config,
)
from kgbias_core.jobs import Progress
from kgbias_core.tasks.base import Task, _key
from kgbias_core.tasks.calibration import calibration_task
from kgbias_core.tasks.evaluation import link_prediction_task, relation_audit_task
from kgbias_core.tasks.findings import findings_task, saved_findings
from kgbias_core.tasks.prediction_audit import (
    add_audit_task,
    hinge_temperature_task,
    prediction_audit_task,
    temperature_searched,
)
from kgbias_core.tasks.training import (
    DEFAULT_MODEL_NAMES,
    model_name,
    train_family_task,
    train_task,
)
from kgbias_core.tasks.whatif import noise_band_task, saved_noise_band
from kgbias_core.whatif.step_ratio import saved_add_audit, saved_prediction_audit


# --- prepare: everything a demo shows, ahead of time ----------------------------------------------
@dataclass(frozen=True)
class ReadyItem:
    """One thing a demo of a graph shows, and whether it is in the store."""

    dataset: str
    what: str  # "model", "seed family", "noise band", "link prediction", "relation audit", "findings", ...
    ready: bool
    optional: bool  # calibration: long, prepared only when asked (``prepare --calibrate``); a family of 1 seed
    detail: str  # the model directory (the family's members), or why it is missing


#: The items of :func:`readiness`, in the order ``prepare`` makes them (the family before the findings, which
#: read its seed band).
READY_ITEMS = ("model", "seed family", "noise band", "prediction audit", "Add audit", "link prediction",
               "relation audit", "findings", "calibration")


def demo_audit_params(model_dir: Path | str) -> dict[str, Any]:
    """The relation audit's parameters as Model comparison opens with them (default classifier and k)."""
    from kgbias_core.measures.relation_audit import audit_params, default_min_persons

    return audit_params(min_persons=default_min_persons(int(read_config(model_dir).get("n_train") or 0)))


def readiness(dataset: str, *, store: Path | str, data_dir: Path | str | None = None,
              seeds: int = DEFAULT_FAMILY_SEEDS) -> list[ReadyItem]:
    """What of :data:`READY_ITEMS` the default model of ``dataset`` has in ``store`` (read from files only).

    The seed family is ready when the default model is the first of ``seeds`` members, all in the store
    (:func:`family_item`); with ``seeds`` 1 it is optional (no family asked for)."""
    from kgbias_core.data.census import census_file
    from kgbias_core.data.datasets import resolve_data_dir
    from kgbias_core.measures.relation_audit import load_value_audit

    path = Path(store) / DEFAULT_MODEL_NAMES.get(dataset, model_name(dataset))
    if not is_model_dir(path):
        return [ReadyItem(dataset, what, False, _optional(what, seeds), f"no model {path.name} in {store}")
                for what in READY_ITEMS]
    census = census_file(resolve_data_dir(data_dir))
    family_ready, family_detail = family_item(path, seeds=seeds)
    have = {
        "model": True,
        "seed family": family_ready,
        "noise band": saved_noise_band(path) is not None,
        "prediction audit": temperature_searched(path),  # the audit, and the temperature searched on it
        "Add audit": saved_add_audit(path) is not None,
        "link prediction": cached_link_prediction_ready(path),
        "relation audit": load_value_audit(path, **demo_audit_params(path)) is not None,
        "findings": saved_findings(path, census=census) is not None,
        "calibration": read_config(path).get("calibration") is not None,
    }
    return [ReadyItem(dataset, what, have[what], _optional(what, seeds),
                      family_detail if what == "seed family" else str(path)) for what in READY_ITEMS]


def _optional(what: str, seeds: int) -> bool:
    return what == "calibration" or (what == "seed family" and seeds < 2)


def family_item(model_dir: Path, *, seeds: int) -> tuple[bool, str]:
    """Whether the model at ``model_dir`` is the first of a family of (at least) ``seeds`` members, all present
    and recorded (:mod:`kgbias_core.families`), and the line that names them: those in the store, then those
    missing."""
    from kgbias_core.families import family_members, family_record

    if seeds < 2:
        return False, "one seed asked for (--seeds 1): no family"
    first_seed = int(read_config(model_dir).get("seed") or 0)
    wanted = family_record(model_dir.name, [first_seed + i for i in range(seeds)])["members"]
    stored = [name for name in wanted if is_model_dir(model_dir.parent / name)]
    missing = [name for name in wanted if name not in stored]
    recorded = {member.name for member in family_members(model_dir) or []}
    ready = all(name in recorded for name in wanted)
    detail = f"{seeds} seeds: {', '.join(stored)}" + (f"; missing {', '.join(missing)}" if missing else "")
    return ready, detail + ("" if ready or missing else "; the family record is not written yet")


def cached_link_prediction_ready(model_dir: Path | str) -> bool:
    from kgbias_core.evaluation.link_prediction import load_link_prediction

    return load_link_prediction(model_dir) is not None


def readiness_lines(items: Sequence[ReadyItem]) -> list[str]:
    """One line per item: 'ready   synthetic  noise band' / 'MISSING ...' / 'optional ...'."""
    def word(item: ReadyItem) -> str:
        return "ready" if item.ready else ("optional" if item.optional else "MISSING")

    return [f"{word(i):8} {i.dataset:10} {i.what:16} {i.detail}" for i in items]


def _demo_task(what: str, dataset: str, path: Path, *, data_dir: Path | str | None, census: Path | None,
               overrides: Mapping[str, Any] | None, device: torch.device | str | None, seeds: int) -> Task[Any]:
    """The task that makes ``what`` (one of :data:`READY_ITEMS`) for the model at ``path``, on ``device``."""
    if what == "model":
        return train_task(dataset, out=path, data_dir=data_dir, overrides=overrides, device=device)
    if what == "seed family":  # the default model's siblings, of its own config
        return train_family_task(dataset, out=path, seeds=seeds, data_dir=data_dir, device=device,
                                 from_existing=True)
    if what == "noise band":
        return noise_band_task(path, device=device)
    if what == "prediction audit":  # one retrain, then the hinge's temperature (or the scale) of every removal
        if saved_prediction_audit(path) is not None:  # stored before the search existed: the search alone
            return hinge_temperature_task(path, device=device)
        return prediction_audit_task(path, device=device)
    if what == "Add audit":  # one retrain: the ratio every Add prediction is multiplied by
        return add_audit_task(path, device=device)
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
    seeds: int = DEFAULT_FAMILY_SEEDS,
) -> Task[list[ReadyItem]]:
    """Train the default model of each of ``datasets`` where missing and its siblings, a family of ``seeds``
    seeds (the default model is its first member, under its own name: :mod:`kgbias_core.families`; 1: no
    family), then everything a demo shows: noise band, the prediction audit (one retrain: the step scale of the
    removals' predictions), the Add audit (one retrain: the ratio of the additions' predictions), link
    prediction, relation audit, findings (with the family's seed band), and the calibration with ``calibrate``
    (13 retrains). Resumable: what is in the store already is skipped. Returns the :func:`readiness` of every
    graph afterwards. ``overrides`` apply to the default model's training only (e.g. fewer epochs for a quick
    try); its siblings take its config."""
    from kgbias_core.data.census import census_file
    from kgbias_core.data.datasets import resolve_data_dir

    def run(progress: Progress) -> list[ReadyItem]:
        census = census_file(resolve_data_dir(data_dir))
        for dataset in datasets:
            path = Path(store) / DEFAULT_MODEL_NAMES.get(dataset, model_name(dataset))
            done = {i.what for i in readiness(dataset, store=store, data_dir=data_dir, seeds=seeds) if i.ready}
            for what in READY_ITEMS:
                if (what == "calibration" and not calibrate) or (what == "seed family" and seeds < 2):
                    continue
                if what in done:
                    progress.update(message=f"{dataset}: {what} is ready, skipped")
                    continue
                progress.update(message=f"{dataset}: {what}…")
                _demo_task(what, dataset, path, data_dir=data_dir, census=census, overrides=overrides,
                           device=device, seeds=seeds).run(progress)
        return [item for dataset in datasets
                for item in readiness(dataset, store=store, data_dir=data_dir, seeds=seeds)]

    return Task(key=_key("prepare", datasets=list(datasets), store=str(store), calibrate=calibrate, seeds=seeds),
                run=run)


