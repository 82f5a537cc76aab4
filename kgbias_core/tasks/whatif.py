"""What-ifs (Du §4.3): retrained runs, the noise band, removal curves and the influence check (Du §4.2)."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pandas as pd
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.device import resolve_device
from kgbias_core.embeddings.results import cached_params, load_result, save_result
from kgbias_core.embeddings.store import (
    check_output,
    load_model,
    model_fingerprint,
    read_config,
    save_model,
)
from kgbias_core.evaluation.link_prediction import cached_link_prediction
from kgbias_core.influence.closed_form import debiasing_removal
from kgbias_core.influence.prediction import CHANGE_SCALED_DISTANCES, predict_removal
from kgbias_core.influence.retraining_check import (
    REMOVAL_KINDS,
    influence_accuracy,
    masked_retrain_bias,
    removal_set,
)
from kgbias_core.jobs import Progress
from kgbias_core.tasks.base import Task, _check_ks, _key, check_retrains, model_retrain_seconds, slug
from kgbias_core.whatif.edits import Edit, retrain
from kgbias_core.whatif.runs import noise_band, noise_spread
from kgbias_core.whatif.step_ratio import model_edit_calibration, saved_hinge_temperature, saved_prediction_audit

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
    """Retrain the unedited graph under ``seeds`` and cache B_gr's spread beside the model; the stored removal curves
    are then predicted again with it as their floor (:func:`repredict_curves`)."""
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

        band = noise_band(model, model_dir=model_dir, seeds=seeds, on_epoch=on_epoch, should_stop=progress.should_stop)
        repredict_curves(model_dir, device=device)  # the stored removal curves' intervals, with the floor now
        return band

    return Task(key=_key("noise_band", model_dir, seeds=list(seeds)), run=run)


def saved_noise_band(model_dir: Path | str) -> pd.DataFrame | None:
    return load_result(model_dir, "noise_band", params={"seeds": list(NOISE_SEEDS)})


def curve_key(occupation: str) -> str:
    return f"removal_curve-{slug(occupation)}"


#: The calibration a curve's predictions were made with, kept in its frame beside them: the model's edit calibration
#: (:func:`~kgbias_core.whatif.step_ratio.model_edit_calibration`: scale, temperature, whether the prior's), the noise
#: floor of the occupation, and the seed of the random sets. A curve whose calibration is not the model's now is
#: predicted again from its own sets, its retrains kept (:func:`repredict_curves`). ``scaled``: what the scale
#: multiplied, "step" or "change" (:data:`~kgbias_core.influence.prediction.CHANGE_SCALED_DISTANCES`); a curve from
#: before the column scaled the step, so only an L2 model's scaled curves are predicted again for it.
CURVE_CALIBRATION = ("scale", "temperature", "prior", "floor", "seed", "scaled")
#: The calibration columns a curve from before them may lack, with the value such a curve was made with.
_CALIBRATION_BEFORE = {"scaled": "step"}


def _curve_calibration(model_dir: Path | str, label: str, *, seed: int) -> dict:
    """The lab's calibration of a removal of ``label`` now (:data:`CURVE_CALIBRATION`; NaN for none)."""
    scale, temperature, prior = model_edit_calibration(model_dir, "remove")
    spread = noise_spread(saved_noise_band(model_dir), label)
    distance = str(read_config(model_dir).get("distance") or "squared_l2")
    return {"scale": scale, "temperature": math.nan if temperature is None else temperature, "prior": prior,
            "floor": math.nan if spread is None else spread, "seed": seed,
            "scaled": "change" if scale != 1.0 and distance in CHANGE_SCALED_DISTANCES else "step"}


def _curve_set(influence: torch.Tensor, *, strategy: str, k: int, before: float, seed: int) -> torch.Tensor:
    """The triples a curve's point removes: IF-REMOVE's k towards 0, or k at random from ``seed``."""
    if strategy == "IF-REMOVE":
        return debiasing_removal(influence, bias=before, k=k)
    return removal_set(influence, kind="random", k=k, seed=seed)


def _curve_prediction(analysis: ModelAnalysis, label: str, removed: torch.Tensor, *, before: float,
                      calibration: dict) -> dict:
    """A curve point's predicted B_gr after the removal, with its interval and estimator (the lab's prediction)."""
    temperature, floor = calibration["temperature"], calibration["floor"]
    predicted = predict_removal(analysis, label, removed, spread=None if math.isnan(floor) else floor,
                                scale=calibration["scale"], prior=calibration["prior"],
                                temperature=None if math.isnan(temperature) else temperature)
    return {"predicted": before + predicted.point, "predicted_low": before + predicted.low,
            "predicted_high": before + predicted.high, "estimator": predicted.estimator}


def removal_curve_task(
    model_dir: Path | str, *, occupation: str, ks: Sequence[int], seed: int = 0,
    device: torch.device | str | None = None,
) -> Task[pd.DataFrame]:
    """B_gr of ``occupation`` after IF-REMOVE and Random-REMOVE of k triples, for each k (Du Fig. 4d-f).

    Masked retrains from the base seed (METHODS §2), so k = 0 is the base model itself. The task
    returns, and caches beside the model, a frame ``strategy, k, predicted_raw`` (sum of delta_z, the old
    closed form), ``predicted, predicted_low, predicted_high`` (B_gr after, as the Newton step predicts it, with
    its interval; :func:`~kgbias_core.influence.prediction.predict_removal` calibrated as the lab calibrates it,
    :func:`~kgbias_core.whatif.step_ratio.model_edit_calibration`), ``estimator``, ``group_bias`` (after the
    retrain) and the calibration the predictions were made with (:data:`CURVE_CALIBRATION`).
    """
    device = resolve_device(device)

    def run(progress: Progress) -> pd.DataFrame:
        check_retrains(model_dir, what="the removal curve", retrains=2 * len(ks))
        model = load_model(model_dir, device=device)
        _check_ks(ks, model=model)
        analysis = ModelAnalysis(model)
        index = analysis.groups.index(occupation)
        label = analysis.groups.labels[index]
        before = float(analysis.group_bias(occupation))
        influence = analysis.influence(occupation)
        # The lab's calibration (its audit's temperature or scale, else the prior): one figure per edit everywhere.
        calibration = _curve_calibration(model_dir, label, seed=seed)
        rows = [{"strategy": s, "k": 0, "predicted_raw": 0.0, "predicted": before, "predicted_low": before,
                 "predicted_high": before, "estimator": "none (k = 0: no edit)", "group_bias": before, **calibration}
                for s in ("IF-REMOVE", "Random-REMOVE")]
        plan = [(s, k) for k in ks for s in ("IF-REMOVE", "Random-REMOVE")]
        for step, (strategy, k) in enumerate(plan, start=1):
            progress.update(stage="retraining", step=step - 1, total=len(plan), message=f"{strategy} k={k}")
            removed = _curve_set(influence, strategy=strategy, k=k, before=before, seed=seed)
            after = masked_retrain_bias(model, removed=removed, groups=analysis.groups,
                                        should_stop=progress.should_stop)
            raw = float(influence[removed.to(influence.device)].sum())
            rows.append({"strategy": strategy, "k": k, "predicted_raw": raw,
                         **_curve_prediction(analysis, label, removed, before=before, calibration=calibration),
                         "group_bias": float(after[index]), **calibration})
        progress.update(step=len(plan), total=len(plan), message="done")
        frame = pd.DataFrame(rows)
        save_result(model_dir, curve_key(occupation), frame, params={"occupation": occupation})
        return frame

    return Task(key=_key("removal_curve", model_dir, occupation=occupation, ks=list(ks), seed=seed), run=run)


def saved_curve(model_dir: Path | str, occupation: str) -> pd.DataFrame | None:
    return load_result(model_dir, curve_key(occupation), params={"occupation": occupation})


def curve_occupations(model_dir: Path | str) -> list[str]:
    """The occupations (as the curve task was given them) of every removal curve cached beside the model."""
    return [str(p["occupation"]) for p in cached_params(model_dir, "removal_curve-")
            if isinstance(p, dict) and p.get("occupation") is not None]


def _same_calibration(curve: pd.DataFrame, calibration: dict) -> bool:
    """Whether ``curve``'s predictions were made with ``calibration`` (a curve from before the columns: no)."""
    if any(column not in curve.columns and column not in _CALIBRATION_BEFORE for column in CURVE_CALIBRATION):
        return False
    stored = {**_CALIBRATION_BEFORE, **curve.iloc[0].to_dict()}
    return all(bool(stored[c]) == bool(calibration[c]) if c == "prior" else
               str(stored[c]) == str(calibration[c]) if c in _CALIBRATION_BEFORE else
               math.isclose(float(stored[c]), float(calibration[c]), rel_tol=1e-9)
               or (math.isnan(float(stored[c])) and math.isnan(float(calibration[c])))
               for c in CURVE_CALIBRATION)


def repredict_curves(model_dir: Path | str, analysis: ModelAnalysis | None = None, *,
                     device: torch.device | str | None = None) -> list[str]:
    """Every removal curve cached beside the model whose predictions were made with another calibration than the
    model's now (an audit, its temperature or a noise band landed since: :data:`CURVE_CALIBRATION`), predicted again
    as the lab predicts now. No retrain: each point's set is rebuilt (IF-REMOVE's, or the random one of the curve's
    seed, 0 for a curve from before the column) and checked by its closed-form sum, and the retrained B_gr is kept.
    A curve whose sets do not rebuild keeps its predictions, named by the estimator that made them. A prediction
    is seconds (one thread), so a curve of 5 k is under a minute on FB15k-237. -> the occupations predicted again."""
    curves = ((o, saved_curve(model_dir, o)) for o in curve_occupations(model_dir))
    stale = [(o, c) for o, c in curves if c is not None and not _same_calibration(c, _calibration_of(model_dir, o, c))]
    if not stale:
        return []  # nothing to do: the model is not even loaded
    analysis = analysis or ModelAnalysis(load_model(model_dir, device=resolve_device(device)))
    done = []
    for occupation, curve in stale:
        label = analysis.groups.labels[analysis.groups.index(occupation)]
        calibration = _calibration_of(model_dir, occupation, curve, label=label)
        if _same_calibration(curve, calibration):
            continue  # a curve given a name, not its label: the floor read above was the name's (none)
        influence = analysis.influence(label)
        before = float(curve.loc[curve["k"] == 0, "group_bias"].iloc[0])
        rows = []
        for row in curve.to_dict("records"):
            if row["k"] > 0:
                removed = _curve_set(influence, strategy=row["strategy"], k=int(row["k"]), before=before,
                                     seed=calibration["seed"])
                raw = float(influence[removed.to(influence.device)].sum())
                if not math.isclose(raw, float(row["predicted_raw"]), rel_tol=1e-5, abs_tol=1e-9):
                    break  # not the set the curve retrained: its predictions stay as they were made
                row = {**row, **_curve_prediction(analysis, label, removed, before=before, calibration=calibration)}
            rows.append({**row, **calibration})
        else:
            save_result(model_dir, curve_key(occupation), pd.DataFrame(rows)[curve.columns.union(
                list(CURVE_CALIBRATION), sort=False)], params={"occupation": occupation})
            done.append(occupation)
    return done


def curve_is_current(model_dir: Path | str, occupation: str, curve: pd.DataFrame | None = None) -> bool:
    """Whether the removal curve stored for ``occupation`` (if any; ``curve``: that curve, already read by the caller,
    as the lab's rerun has it) is predicted with the model's calibration now."""
    curve = saved_curve(model_dir, occupation) if curve is None else curve
    return curve is None or _same_calibration(curve, _calibration_of(model_dir, occupation, curve))


def repredict_curves_task(model_dir: Path | str, *, device: torch.device | str | None = None) -> Task[list[str]]:
    """:func:`repredict_curves` as a job (no retrain): for a curve stored before the columns existed, or one whose
    calibration changed while no audit, search or noise band ran (a store of an earlier kgbias)."""
    def run(progress: Progress) -> list[str]:
        progress.update(stage="predicting", message="the stored removal curves, with the model's calibration now")
        return repredict_curves(model_dir, device=device)

    return Task(key=_key("repredict_curves", model_dir), run=run)


#: Newton steps of the hinge's temperature search, which takes about one retrain (FB13: 11 steps, 58-64 s): a curve
#: point's prediction is one such step, where the model has no search of its own to time it by.
SEARCH_STEPS = 11


def repredict_seconds(model_dir: Path | str, occupation: str) -> float | None:
    """Estimated seconds of predicting ``occupation``'s stored curve again: one Newton step a point, timed by the
    model's own temperature search where it has one (its seconds over its solves, on this machine), else a retrain
    over :data:`SEARCH_STEPS`."""
    curve = saved_curve(model_dir, occupation)
    if curve is None:
        return None
    points = int((curve["k"] > 0).sum())
    searched = saved_hinge_temperature(model_dir, saved_prediction_audit(model_dir))
    if searched is not None and int(searched["solves"].iloc[0]) > 0:
        return points * float(searched["seconds"].iloc[0]) / int(searched["solves"].iloc[0])
    seconds = model_retrain_seconds(model_dir, retrains=1)
    return None if seconds is None else seconds * points / SEARCH_STEPS


def _calibration_of(model_dir: Path | str, occupation: str, curve: pd.DataFrame, *, label: str | None = None) -> dict:
    """The calibration a removal of ``occupation`` gets now, with the seed of ``curve``'s random sets."""
    seed = int(curve["seed"].iloc[0]) if "seed" in curve.columns else 0
    return _curve_calibration(model_dir, label or occupation, seed=seed)


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


