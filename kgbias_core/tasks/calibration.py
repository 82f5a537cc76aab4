"""The influence calibration (METHODS §4): the task that fits it, its storage and its estimate."""

from __future__ import annotations

import shutil
import uuid
from dataclasses import replace
from pathlib import Path

import pandas as pd
import torch

from kgbias_core.device import resolve_device
from kgbias_core.embeddings.store import (
    StoredModel,
    load_model,
    load_result,
    read_config,
    save_model,
    save_result,
)
from kgbias_core.errors import (
    CALIBRATION_CANCELLED,
    CALIBRATION_KEPT,
    CancelledError,
)
from kgbias_core.influence.calibration import calibrate
from kgbias_core.influence.scale import Calibration
from kgbias_core.jobs import Progress
from kgbias_core.tasks.base import Task, _key, check_retrains, model_retrain_seconds


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


def calibration_seconds(model_dir: Path | str) -> float | None:
    """Estimated seconds of the calibration of the model at ``model_dir`` (1 + 2 x 6 masked retrains)."""
    from kgbias_core.influence.calibration import CALIBRATION_OCCUPATIONS

    return model_retrain_seconds(model_dir, retrains=1 + 2 * CALIBRATION_OCCUPATIONS)


def saved_calibration_runs(model_dir: Path | str) -> pd.DataFrame | None:
    """The runs the model's stored calibration was fitted on; None without a calibration or its runs."""
    calibration = read_config(model_dir).get("calibration")
    if calibration is None:
        return None
    return load_result(model_dir, CALIBRATION_RUNS, params={"calibration": calibration})


