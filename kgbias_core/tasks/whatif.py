"""What-ifs (Du §4.3): retrained runs, the noise band, removal curves and the influence check (Du §4.2)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pandas as pd
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.device import resolve_device
from kgbias_core.embeddings.results import load_result, save_result
from kgbias_core.embeddings.store import (
    check_output,
    load_model,
    model_fingerprint,
    save_model,
)
from kgbias_core.evaluation.link_prediction import cached_link_prediction
from kgbias_core.influence.closed_form import debiasing_removal
from kgbias_core.influence.prediction import predict_removal
from kgbias_core.influence.retraining_check import (
    REMOVAL_KINDS,
    influence_accuracy,
    masked_retrain_bias,
    removal_set,
)
from kgbias_core.jobs import Progress
from kgbias_core.tasks.base import Task, _check_ks, _key, check_retrains, slug
from kgbias_core.whatif.edits import Edit, retrain
from kgbias_core.whatif.runs import noise_band, noise_spread
from kgbias_core.whatif.step_ratio import model_edit_calibration

#: Seeds of the noise band's retrains of the unedited graph.
NOISE_SEEDS = (1, 2, 3)


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
    returns, and caches beside the model, a frame ``strategy, k, predicted_raw`` (sum of delta_z, the old
    closed form), ``predicted, predicted_low, predicted_high`` (B_gr after, as the Newton step predicts it, with
    its interval; :func:`~kgbias_core.influence.prediction.predict_removal` calibrated as the lab calibrates it,
    :func:`~kgbias_core.whatif.step_ratio.model_edit_calibration`), ``estimator`` and ``group_bias`` (after the
    retrain).
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
        spread = noise_spread(saved_noise_band(model_dir), analysis.groups.labels[index])
        # The lab's calibration (its audit's temperature or scale, else the prior): one figure per edit everywhere.
        scale, temperature, prior = model_edit_calibration(model_dir, "remove")
        rows = [{"strategy": s, "k": 0, "predicted_raw": 0.0, "predicted": before, "predicted_low": before,
                 "predicted_high": before, "estimator": "none (k = 0: no edit)", "group_bias": before}
                for s in ("IF-REMOVE", "Random-REMOVE")]
        plan = [(s, k) for k in ks for s in ("IF-REMOVE", "Random-REMOVE")]
        for step, (strategy, k) in enumerate(plan, start=1):
            progress.update(stage="retraining", step=step - 1, total=len(plan), message=f"{strategy} k={k}")
            if strategy == "IF-REMOVE":
                removed = debiasing_removal(influence, bias=before, k=k)
            else:
                removed = removal_set(influence, kind="random", k=k, seed=seed)
            after = masked_retrain_bias(model, removed=removed, groups=analysis.groups,
                                        should_stop=progress.should_stop)
            raw = float(influence[removed.to(influence.device)].sum())
            predicted = predict_removal(analysis, occupation, removed, spread=spread, scale=scale,
                                        temperature=temperature, prior=prior)
            rows.append({"strategy": strategy, "k": k, "predicted_raw": raw, "predicted": before + predicted.point,
                         "predicted_low": before + predicted.low, "predicted_high": before + predicted.high,
                         "estimator": predicted.estimator, "group_bias": float(after[index])})
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


