"""The influence calibration (METHODS §4): the task that fits it, its storage and its estimate."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pandas as pd
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.device import resolve_device
from kgbias_core.embeddings.config import Calibration
from kgbias_core.embeddings.results import load_result, resave_model, save_result
from kgbias_core.embeddings.store import (
    StoredModel,
    load_model,
    read_config,
)
from kgbias_core.errors import (
    CALIBRATION_CANCELLED,
    CALIBRATION_KEPT,
    CancelledError,
)
from kgbias_core.influence.calibration import (
    CALIBRATION_OCCUPATIONS,
    calibration_occupations,
    calibration_runs,
    fit_calibration,
)
from kgbias_core.jobs import Progress
from kgbias_core.tasks.base import Task, _check_ks, _key, check_retrains, model_retrain_seconds


def calibrate(
    model: StoredModel,
    *,
    n_occupations: int = CALIBRATION_OCCUPATIONS,
    k: int | None = None,
    on_run: Callable[[int, int], None] | None = None,
) -> tuple[Calibration, pd.DataFrame]:
    """Fit the calibration of ``model`` on :func:`~kgbias_core.influence.calibration.calibration_occupations`:
    (calibration, its runs).

    1 + 2·``n_occupations`` masked retrains (13 by default: about 10 min on FB15k-237 on 2 cores). Here, not
    in :mod:`kgbias_core.influence`, because it needs a :class:`~kgbias_core.analysis.ModelAnalysis` (the
    measures and the influence of each occupation), which sits above influence.
    """
    analysis = ModelAnalysis(model)
    groups = analysis.groups
    chosen = calibration_occupations(groups, analysis.group_bias(), n=n_occupations)
    runs = calibration_runs(model, occupations=chosen, groups=groups, k=k, on_run=on_run,
                            influence_of=lambda index: analysis.influence(groups.labels[index]))
    return fit_calibration(runs), runs


def _calibrated(model: StoredModel, progress: Progress, *, n_occupations: int = CALIBRATION_OCCUPATIONS,
                k: int | None = None) -> tuple[StoredModel, pd.DataFrame]:
    """``model`` with its calibration over several occupations (METHODS §4), and the runs it was fitted on."""
    progress.update(stage="calibrating", step=0, message="calibrating the influence scale by masked retraining…")

    def on_run(done: int, total: int) -> None:
        progress.update(step=done, total=total, message=f"calibration retrain {done}/{total}")
        if progress.should_stop():  # between retrains: say how far it got, not an epoch
            raise CancelledError(CALIBRATION_CANCELLED.format(done=done, total=total))
        progress.pause_point()  # a person's job waiting runs now: each retrain seeds itself, the result is unchanged

    calibration, runs = calibrate(model, n_occupations=n_occupations, k=k, on_run=on_run)
    progress.update(message=f"influence scale actual/predicted = {calibration.scale:.3f} "
                            f"(range {calibration.low:.3f}-{calibration.high:.3f} over "
                            f"{len(calibration.occupations)} occupations)")
    return replace(model, influence_scale=calibration.scale, calibration=calibration), runs



def store_calibration(model_dir: Path | str, calibration: Calibration, runs: pd.DataFrame | None = None) -> Path:
    """Save the model with ``calibration`` (:func:`~kgbias_core.embeddings.results.resave_model`: atomic, its
    cached results kept, as the calibration does not change the weights); cache ``runs``."""
    model = load_model(model_dir)
    path = resave_model(replace(model, influence_scale=calibration.scale, calibration=calibration), model_dir)
    if runs is not None:
        save_result(path, CALIBRATION_RUNS, runs, params={"calibration": calibration.to_dict()})
    return path


#: The cached runs a model's calibration was fitted on (``saved_calibration_runs``).
CALIBRATION_RUNS = "calibration_runs"


def calibration_task(model_dir: Path | str, *, n_occupations: int = CALIBRATION_OCCUPATIONS, k: int | None = None,
                     device: torch.device | str | None = None) -> Task[Calibration]:
    """Calibrate the model at ``model_dir`` on ``n_occupations`` occupations (1 + 2·n masked retrains, each
    removing ``k`` triples; None: the default per occupation) and store the calibration in it, with its runs
    (:func:`saved_calibration_runs`). Refused before loading when the retrains would not finish here."""
    device = resolve_device(device)

    def run(progress: Progress) -> Calibration:
        check_retrains(model_dir, what="calibration", retrains=1 + 2 * n_occupations)
        model = load_model(model_dir, device=device)
        if k is not None:
            _check_ks([k], model=model)  # before the first of 1 + 2n retrains
        calibrated, runs = _calibrated(model, progress, n_occupations=n_occupations, k=k)
        progress.update(stage="saving", message=f"storing the calibration in {Path(model_dir).name}")
        store_calibration(model_dir, calibrated.calibration, runs)
        return calibrated.calibration

    # Only where not the defaults: the key of the default calibration stays what it was.
    params: dict[str, int] = {}
    if n_occupations != CALIBRATION_OCCUPATIONS:
        params["n_occupations"] = n_occupations
    if k is not None:
        params["k"] = k
    return Task(key=_key("calibration", model_dir, **params), run=run,
                kept=CALIBRATION_KEPT.format(name=Path(model_dir).name))


def calibration_seconds(model_dir: Path | str) -> float | None:
    """Estimated seconds of the calibration of the model at ``model_dir`` (1 + 2 x 6 masked retrains)."""
    return model_retrain_seconds(model_dir, retrains=1 + 2 * CALIBRATION_OCCUPATIONS)


def saved_calibration_runs(model_dir: Path | str) -> pd.DataFrame | None:
    """The runs the model's stored calibration was fitted on; None without a calibration or its runs."""
    calibration = read_config(model_dir).get("calibration")
    if calibration is None:
        return None
    return load_result(model_dir, CALIBRATION_RUNS, params={"calibration": calibration})


