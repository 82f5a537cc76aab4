"""Background jobs and store helpers of the debiasing lab and validation pages (no Streamlit here).

Each ``*_job`` returns ``fn(progress)`` for :meth:`kgbias_core.jobs.JobRegistry.submit`; it runs on
the registry's worker thread, reports through its Progress and checks for cancellation between
retrains. Results that a page shows later (noise band, curves, accuracy runs, link prediction) are
cached beside the model with :func:`kgbias_core.store.save_result`, so they survive reruns, page
switches and evicted job results.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import pandas as pd

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embeddings.store import load_model, load_result, save_model, save_result
from kgbias_core.errors import LAB_K_TOO_LARGE, LAB_NO_KS, MeasureError
from kgbias_core.evaluation.link_prediction import cached_link_prediction
from kgbias_core.influence.retraining_check import REMOVAL_KINDS, influence_accuracy
from kgbias_core.jobs import Progress
from kgbias_core.tasks import removal_curve_job, whatif_job
from kgbias_core.whatif.edits import Edit, Mode
from kgbias_core.whatif.runs import noise_band

#: Seeds of the noise band's retrains of the unedited graph.
NOISE_SEEDS = (1, 2, 3)
#: Where the census file lies under the data directory.
CENSUS_FILE = Path("census") / "occupation_gender_ipums.csv"


def slug(text: str) -> str:
    """Lower-case letters, digits and dashes only (for model directory names)."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def whatif_name(base: str, edit: Edit, *, mode: Mode, occupation_name: str) -> str:
    """``<base>--<strategy>-<occupation>-<hash>``: the same edit and mode always get the same name."""
    payload = json.dumps({**edit.describe(), "added": edit.added_triples, "mode": mode}, sort_keys=True)
    digest = hashlib.sha1(payload.encode("utf-8")).hexdigest()[:8]
    strategy = slug(edit.strategy.split(" ")[0])
    return f"{base}--{strategy}-{slug(occupation_name)}-{digest}"


def _check_ks(ks: Sequence[int], *, n_triples: int, model: str) -> None:
    if not ks:
        raise MeasureError(LAB_NO_KS)
    if max(ks) > n_triples:
        raise MeasureError(LAB_K_TOO_LARGE.format(k=max(ks), n=n_triples, model=model))


# --- jobs ---------------------------------------------------------------------------------------
def whatif_and_evaluate_job(*, store: Path, base: str, edit: Edit, mode: Mode, name: str) -> Callable[[Progress], str]:
    """Retrain and save the what-if (atomically, at the end), then cache link prediction of run and base."""
    retrain = whatif_job(store=store, base=base, edit=edit, mode=mode, name=name)

    def run(progress: Progress) -> str:
        retrain(progress)
        progress.update(stage="evaluating", message="link prediction (MRR, Hits@10) of the run and its base")
        cached_link_prediction(store / name)
        cached_link_prediction(store / base)
        return name

    return run


def noise_band_job(
    *, store: Path, model_name: str, seeds: Sequence[int] = NOISE_SEEDS
) -> Callable[[Progress], pd.DataFrame]:
    """Retrain the unedited graph under ``seeds`` and cache B_gr's spread beside the model."""

    def run(progress: Progress) -> pd.DataFrame:
        model = load_model(store / model_name)
        done = [0]

        def on_epoch(epoch: int, n_epochs: int, loss: float) -> None:
            progress.update(stage="retraining", step=done[0] * n_epochs + epoch, total=len(seeds) * n_epochs,
                            loss=loss, message=f"seed {seeds[min(done[0], len(seeds) - 1)]}, epoch {epoch}/{n_epochs}")
            if epoch == n_epochs:
                done[0] += 1

        return noise_band(model, model_dir=store / model_name, seeds=seeds, on_epoch=on_epoch,
                          should_stop=progress.should_stop)

    return run


def curve_key(occupation: str) -> str:
    return f"removal_curve-{slug(occupation)}"


def removal_curve_saved_job(
    *, store: Path, base: str, occupation: str, ks: Sequence[int]
) -> Callable[[Progress], pd.DataFrame]:
    """:func:`kgbias_core.lab.removal_curve_job`, its result cached beside the base model."""

    def run(progress: Progress) -> pd.DataFrame:
        model = load_model(store / base)
        _check_ks(ks, n_triples=model.triples.shape[0], model=base)
        frame = removal_curve_job(store=store, base=base, occupation=occupation, ks=ks)(progress)
        save_result(store / base, curve_key(occupation), frame, params={"occupation": occupation})
        return frame

    return run


def accuracy_key(occupation: str) -> str:
    return f"influence_accuracy-{slug(occupation)}"


def influence_accuracy_job(
    *, store: Path, model_name: str, occupation: str, ks: Sequence[int], kinds: Sequence[str] = REMOVAL_KINDS
) -> Callable[[Progress], pd.DataFrame]:
    """Du §4.2: predicted against actual change of B_gr for top/bottom/random-k removals, cached."""

    def run(progress: Progress) -> pd.DataFrame:
        model = load_model(store / model_name)
        _check_ks(ks, n_triples=model.triples.shape[0], model=model_name)
        analysis = ModelAnalysis(model)
        index = analysis.groups.index(occupation)
        influence = analysis.influence(occupation)
        total = len(kinds) * len(ks)
        progress.update(stage="retraining", step=0, total=total, message="retraining the unedited graph (masked)")
        done = [0]

        def on_run(kind: str, k: int, predicted: float, actual: float) -> None:
            done[0] += 1
            progress.update(step=done[0], message=f"{kind} k={k}: predicted {predicted:+.4f}, actual {actual:+.4f}")
            progress.raise_if_cancelled(epoch=done[0])

        frame = influence_accuracy(model, influence=influence, occupation_index=index, groups=analysis.groups,
                                   ks=ks, kinds=kinds, on_run=on_run)
        save_result(store / model_name, accuracy_key(occupation), frame, params={"occupation": occupation})
        return frame

    return run


def link_prediction_job(*, model_dirs: Sequence[Path]) -> Callable[[Progress], None]:
    """Cache link prediction of each model directory (seconds each on FB15k-237)."""

    def run(progress: Progress) -> None:
        for step, path in enumerate(model_dirs):
            progress.update(stage="evaluating", step=step, total=len(model_dirs),
                            message=f"link prediction of {path.name}")
            cached_link_prediction(path)

    return run


# --- cached results -----------------------------------------------------------------------------
def saved_noise_band(model_dir: Path | str) -> pd.DataFrame | None:
    return load_result(model_dir, "noise_band", params={"seeds": list(NOISE_SEEDS)})


def saved_curve(model_dir: Path | str, occupation: str) -> pd.DataFrame | None:
    return load_result(model_dir, curve_key(occupation), params={"occupation": occupation})


def saved_accuracy(model_dir: Path | str, occupation: str) -> pd.DataFrame | None:
    return load_result(model_dir, accuracy_key(occupation), params={"occupation": occupation})


def saved_link_prediction(model_dir: Path | str) -> pd.DataFrame | None:
    """Link prediction if already cached beside the model (else None: compute it as a job)."""
    if not (Path(model_dir) / "results" / "link_prediction.csv").is_file():
        return None
    return cached_link_prediction(model_dir)


def store_influence_scale(model_dir: Path | str, scale: float) -> Path:
    """Save the model with ``influence_scale`` (atomic save_model), keeping its cached results."""
    model_dir = Path(model_dir)
    model = load_model(model_dir)
    results = model_dir / "results"
    kept = model_dir.parent / f".results-{model.name}-{uuid.uuid4().hex}"
    if results.is_dir():
        shutil.copytree(results, kept)
    try:
        path = save_model(replace(model, influence_scale=float(scale)), model_dir.parent)
        if kept.is_dir():  # the scale does not change the weights: the cached results stay valid
            shutil.copytree(kept, path / "results", dirs_exist_ok=True)
    finally:
        shutil.rmtree(kept, ignore_errors=True)
    return path


# --- census -------------------------------------------------------------------------------------
def census_file(data_dir: Path) -> Path:
    return data_dir / CENSUS_FILE


def census_years(path: Path) -> list[int]:
    """The census years in the file, newest first."""
    years = pd.read_csv(path, usecols=["Census year"])["Census year"].dropna().astype(int)
    return sorted(years.unique().tolist(), reverse=True)
