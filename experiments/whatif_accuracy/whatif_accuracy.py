"""What-if accuracy (issue 25): the Newton-step prediction and the calibrated closed form against masked retrains.

For each chosen occupation and removal set (top / bottom by Du's closed-form influence at each share of
the triples that move the occupation's B_gr, and random sets of the same sizes), one masked retrain gives
the actual change of B_gr (groups fixed, METHODS §2); the Newton-step prediction
(:func:`kgbias_core.influence.prediction.predict_removal`, as the lab calls it) and the old estimator (Du's sum of
delta_z times the calibration's scale, with the calibration's range) stand beside it. Every row is
appended to ``--runs`` when it is done and a rerun skips the rows already there (resumable).

    nice python experiments/whatif_accuracy/whatif_accuracy.py \
        --runs experiments/whatif_accuracy/results/synthetic_whatif.csv [--model PATH] \
        [--occupations 8] [--sets 2,16,40] [--threads 1] [--retrain-threads 2] [--seed 7] [--no-exact]

Without ``--model`` it trains the tiny synthetic graph of tests/conftest.py (600 persons, a second of
CPU). A model without a calibration is calibrated first (13 masked retrains; on the synthetic graph
seconds), and the rows say whether the occupation was one the calibration was fitted on.

``--no-calibration`` skips the old estimator (its calibration is 13 masked retrains: on a model whose retrain takes
minutes, the longest part of the run; its columns stay empty and the summary leaves it out); ``--kinds`` picks the
kinds of set (default all three).

``--shard I/N`` measures only every N-th chosen occupation from the I-th (0-based), so N processes share one
GPU (each appends to its own ``--runs``; concatenate them for the summary). ``--base FILE.npz`` keeps the unedited
retrain's B_gr of every occupation in FILE with what made it (the model's data hash and config, the retrain's kind of
device), written once and atomically; a later run of the same model reads it back (never unpickled) and skips that
retrain, any other retrains. ``--base-only`` writes it and stops (run it beside the model's audit).

A set is retrained once. A set that ``--runs``, a ``--skip`` file or the run itself already measured at another
share (on FB13 the top triple of a small occupation is both its 2% and its 16% set, k = 1; a random set depends
only on k) is not run again when its occupation, kind, k and closed-form sum agree (the sum tells another model's
set apart); it gets no row, so the summary counts it once. Occupations of the same k share one random set, and so
one retrain within a run (``retrain_s`` 0 on the rows that reuse it).

``--distance l1|l2|pseudo_huber`` trains that graph with an imported engine's distance or kgbias's pseudo-Huber
(the Newton step then uses that distance's curvature, :func:`kgbias_core.influence.prediction.absolute_curvature_hvp`).

With ``--model``, the estimator as the lab shows it is measured too, calibrated as the lab calibrates it
(:func:`kgbias_core.whatif.step_ratio.model_edit_calibration`, from the model's one-retrain audit, run first where
the model has none): the Newton step at the hinge temperature the audit found (one-negative squared L2; column
``temperature``), else times the audit's step scale, with the model's noise band as the floor (columns
``scaled``, ``scaled_low``, ``scaled_high``: the lab's point and interval whichever calibration made them;
``in_audit`` marks the audited occupation, whose retrain set the calibration). Predictions run on
``--threads`` (the issue's cost target is one thread), retrains on ``--retrain-threads``.

``--rescore OUT`` (with ``--model``) retrains nothing: it rebuilds each row's removal set of ``--runs`` (the same
deterministic set, checked by its closed-form sum), predicts it again as the lab does today (the model's current
calibration for edits, its noise band) and writes the rows with those columns replaced to OUT, with its summary.
Where the model has been calibrated since (``kgbias calibrate``), the old estimator's columns are filled too.
The retrained change is the one measured; only the prediction is new. Used when the step scale's source changed
(issue 25: edits read the audit, plans verified plans). ``--other-machine`` is for runs made on another machine's
model of the same config, whose sets this model does not rebuild: their predictions are kept, and the old
estimator's columns are filled from each row's closed-form sum and this model's calibration.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.commands.common import append_row, shard, write_text
from kgbias_core.data.synthetic import SyntheticConfig, generate_people_graph
from kgbias_core.device import retrain_device
from kgbias_core.embeddings.config import DISTANCES, TrainConfig
from kgbias_core.embeddings.store import load_model
from kgbias_core.embeddings.training import train_model
from kgbias_core.influence.prediction import (
    HINGE_BAND_BASE,
    HINGE_BAND_SMALL,
    band_ends,
    newton_change,
    predict_removal,
    removal_band_factor,
    scaled_band,
    spectral_damping,
)
from kgbias_core.influence.retraining_check import masked_retrain_bias, removal_set
from kgbias_core.influence.scale import predict
from kgbias_core.jobs import Progress
from kgbias_core.tasks import model_step_ratio, prediction_audit_task, saved_noise_band, saved_prediction_audit
from kgbias_core.tasks.calibration import calibrate
from kgbias_core.whatif.runs import noise_spread
from kgbias_core.whatif.step_ratio import EDITS, model_edit_calibration

#: The synthetic graph and training of tests/conftest.py (TINY_GRAPH, TINY_TRAINING).
SYNTHETIC = SyntheticConfig(n_persons=600, seed=7, other_gender_share=0.02)
SYNTHETIC_TRAINING = TrainConfig(dim=16, epochs=25, batch_size=256, lr=1e-2, l2=10.0, seed=3)


def model_or_synthetic(model_dir: Path | None, *, seed: int, epochs: int, distance: str, negatives: int = 8):
    """The stored model at ``model_dir``, else the synthetic graph of ``seed`` trained here with ``distance``,
    ``negatives`` frozen negatives a triple and ``epochs`` (the sibling scripts' two sources of a model)."""
    if model_dir:
        return load_model(model_dir)
    graph = generate_people_graph(replace(SYNTHETIC, seed=seed))
    training = replace(SYNTHETIC_TRAINING, epochs=epochs, negatives_per_triple=negatives, distance=distance)
    return train_model(graph, training, name="synthetic-transe", device=torch.device("cpu"))
KINDS = ("top", "bottom", "random")


def chosen_occupations(groups, n: int) -> list[int]:
    """Up to ``n`` occupations with both genders, spread over the size of the rarer gender (small ones included)."""
    smaller = torch.minimum(groups.n_male, groups.n_female)
    both = sorted((i for i in range(len(groups.labels)) if int(smaller[i]) >= 1), key=lambda i: (int(smaller[i]), i))
    if len(both) <= n:
        return both
    picks = np.linspace(0, len(both) - 1, n).round().astype(int)
    return [both[i] for i in sorted(set(picks.tolist()))]


def summarize(runs: pd.DataFrame, distance: str = "squared_l2") -> str:
    """The printed summary: one line per kind of set and estimator of :func:`summary_frame`, then the cost and
    the exact-H step's ratio (the lines the docs' *_summary.txt files copy)."""
    lines = []
    for _, row in summary_frame(runs, distance).iterrows():
        line = f"{row['sets']} | {row['estimator']} ({row['n']} sets): coverage {row['coverage']:.0%}"
        if row["sets"] == "targeted":
            floor = row["sign_beyond_floor"]
            beyond = "" if pd.isna(floor) else f" ({floor:.0%} beyond the noise floor)"
            line += (f", median relative half-width {row['half_width']:.2f} (10+ of each gender "
                     f"{row['half_width_large']:.2f}), sign {row['sign']:.0%}{beyond}, median retrained/predicted "
                     f"{row['ratio']:.2f}")
        shares = [c for c in row.index if c.startswith("coverage_") and pd.notna(row[c])]
        line += (f"; fewer than 10 of one gender ({row['small_n']} sets): {row['small_coverage']:.0%}; held-out "
                 f"occupations: {row['held_out_coverage']:.0%}; by share: "
                 + ", ".join(f"{c.removeprefix('coverage_')}% {row[c]:.0%}" for c in shares))
        lines.append(line)
    targeted = runs[runs["kind"] != "random"]
    lines.append(f"prediction: median {runs['newton_s'].median():.2f} s, max {runs['newton_s'].max():.2f} s; "
                 f"exact-H step (targeted): median retrained/predicted "
                 f"{(targeted['actual'] / targeted['exact_newton']).median():.2f}")
    return "\n".join(lines)


def measured_sets(frames: list[pd.DataFrame]) -> dict[tuple[str, str, int], float]:
    """The sets earlier rows measured: (occupation, kind, k) -> the set's closed-form sum."""
    measured = {}
    for frame in frames:
        for row in frame.itertuples():
            measured[(row.occupation, row.kind, int(row.k))] = float(row.closed_form)
    return measured


def already_measured(measured: dict[tuple[str, str, int], float], occupation: str, kind: str, k: int,
                     closed_form: float) -> bool:
    """Whether this set is one of ``measured``: the same occupation, kind and k, and the same closed-form
    sum (to float32's precision; a set of another model, or another ranking, sums to something else)."""
    earlier = measured.get((occupation, kind, k))
    return earlier is not None and math.isclose(earlier, closed_form, rel_tol=1e-5, abs_tol=1e-9)


def retrain_key(model) -> str:
    """What an unedited retrain of ``model`` depends on: its data, its training config and the kind of device the
    retrain runs on (the same on another machine of that kind; another kind drifts, kgbias_core.device)."""
    return json.dumps({"data_hash": model.data_hash, "config": model.config.to_dict(),
                       "device": retrain_device(model).type}, sort_keys=True, default=str)


def unedited_bias(model, groups, path: Path | None) -> torch.Tensor:
    """B_gr of every occupation after a retrain with nothing removed (the reference each set's change is read
    against), read from ``path`` when it was made by a retrain of the same key (:func:`retrain_key`), else
    retrained and written there."""
    key = retrain_key(model)
    if path is not None and path.exists():
        stored = np.load(path, allow_pickle=False)  # an .npy of an older bench is a bare array: not read back
        if isinstance(stored, np.lib.npyio.NpzFile):
            with stored:
                if "key" in stored and str(stored["key"]) == key and stored["bias"].shape == (len(groups.labels),):
                    print(f"base retrain read from {path}", flush=True)
                    return torch.as_tensor(stored["bias"], dtype=torch.float32, device=groups.occupations.device)
        print(f"{path} is not the base of this model and device: retraining", flush=True)
    started = time.perf_counter()
    base = masked_retrain_bias(model, removed=None, groups=groups)
    print(f"base retrain {time.perf_counter() - started:.1f} s", flush=True)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + f".{os.getpid()}.tmp")
        with open(partial, "wb") as handle:  # np.savez on a path would append .npz to the temporary name
            np.savez(handle, bias=base.detach().cpu().numpy(), key=np.array(key))
        os.replace(partial, path)
    return base


def _inside(actual: pd.Series, low: pd.Series, high: pd.Series) -> pd.Series:
    return (low <= actual) & (actual <= high)


def _sign_beyond_floor(part: pd.DataFrame, point: str) -> float:
    """Share of sets with the right sign among those whose predicted change exceeds the occupation's noise
    floor: a prediction inside the noise makes no claim about the sign (NaN without a floor column)."""
    if "floor" not in part:
        return np.nan
    claimed = part[part[point].abs() > part["floor"]]
    return (np.sign(claimed[point]) == np.sign(claimed["actual"])).mean() if len(claimed) else np.nan


def current_band(runs: pd.DataFrame, distance: str = "squared_l2") -> tuple[np.ndarray, np.ndarray]:
    """The interval the lab shows today around each row's scaled point: [p / f, p * f] with the scaled step's
    band of the model's ``distance`` (:func:`~kgbias_core.influence.prediction.removal_band_factor`), widened by
    the row's noise floor. The point and the floor do not depend on the band, so runs made under an earlier band
    are judged anew."""
    hinge = _temperatures(runs).notna()
    f = np.array([removal_band_factor(int(min(m, w)), scale=float(s), distance=distance, hinge=bool(h))
                  for m, w, s, h in zip(runs["men"], runs["women"], runs["scale"], hinge, strict=True)], dtype=float)
    return band_ends(runs["scaled"].to_numpy(float), f, np.nan_to_num(runs["floor"].to_numpy(float)))


def _temperatures(runs: pd.DataFrame) -> pd.Series:
    """Each row's hinge temperature (NaN where the audit's scale made the lab's point, and in runs made before the
    lab predicted with a temperature)."""
    return runs["temperature"] if "temperature" in runs else pd.Series(np.nan, index=runs.index)


def lab_label(runs: pd.DataFrame) -> str:
    """How the lab's point of ``runs`` was made: at the audit's hinge temperature, or times the audit's scale."""
    temperature = _temperatures(runs).dropna()
    if len(temperature):
        return f"Newton step, hinge at T = {temperature.iloc[0]:.2f} (audit), noise floor"
    return f"Newton step x {runs['scale'].iloc[0]:.3f} (audit), noise floor"


def summary_frame(runs: pd.DataFrame, distance: str = "squared_l2") -> pd.DataFrame:
    """One row per estimator and kind of set (targeted / random) over the sets the scale was not read from
    (the audited occupation left out): coverage, median relative half-width (all sets, and those where both
    genders have at least 10 persons, where the noise floor does not dominate), sign, median retrained/predicted,
    and the coverage where one gender has fewer than 10 persons, on occupations the old estimator's calibration
    was not fitted on, and at each share; the docs' table. Random sets
    get only their coverage: their point is about 0, so relative width, sign and ratio are noise. The scaled step
    is judged twice: with the interval it was run with, and with today's band of the model's ``distance``
    (:func:`current_band`)."""
    shown = runs[~runs["in_audit"].astype(bool)] if "in_audit" in runs else runs
    estimators = [("Newton step as computed, no floor", "newton", "low", "high")]
    if "scaled" in runs:
        scaled = lab_label(runs)
        estimators.append((f"{scaled}, band as run", "scaled", "scaled_low", "scaled_high"))
        shown = shown.assign(**dict(zip(("band_low", "band_high"), current_band(shown, distance), strict=True)))
        base, small = ((HINGE_BAND_BASE, HINGE_BAND_SMALL) if _temperatures(runs).notna().any()
                       else scaled_band(distance))
        estimators.append((f"{scaled}, band {base} + {small}/sqrt(m)", "scaled", "band_low", "band_high"))
    if runs["old_point"].notna().any():  # a run with --no-calibration has no old estimator
        estimators.append(("closed form x calibrated scale (old)", "old_point", "old_low", "old_high"))
    rows = []
    for targeted, part in shown.groupby(shown["kind"] != "random"):
        small = np.minimum(part["men"], part["women"]) < 10
        for name, point, low, high in estimators:
            inside = _inside(part["actual"], part[low], part[high])
            relative = (part[high] - part[low]) / 2 / part[point].abs()
            row = {"sets": "targeted" if targeted else "random", "estimator": name, "n": len(part),
                   "coverage": inside.mean(), "half_width": relative.median(),
                   "half_width_large": relative[~small].median() if (~small).any() else np.nan,
                   "sign": (np.sign(part[point]) == np.sign(part["actual"])).mean(),
                   "sign_beyond_floor": _sign_beyond_floor(part, point),
                   "ratio": (part["actual"] / part[point]).median(),
                   "small_n": int(small.sum()), "small_coverage": inside[small].mean() if small.any() else np.nan,
                   "held_out_coverage": inside[~part["in_fit"].astype(bool)].mean()}  # occupations not calibrated on
            if not targeted:  # a random set's point is about 0: only its coverage of the noise means something
                row.update(half_width=np.nan, half_width_large=np.nan, sign=np.nan, sign_beyond_floor=np.nan,
                           ratio=np.nan)
            for share, g in inside.groupby(part["share"]):
                row[f"coverage_{share}"] = g.mean()
            rows.append(row)
    return pd.DataFrame(rows)


def _report(runs: pd.DataFrame, args: argparse.Namespace) -> None:
    """Print the summary of ``runs`` and, with ``--summary``, write its table (:func:`summary_frame`)."""
    distance = load_model(args.model).config.distance if args.model else args.distance  # the band's distance
    print(summarize(runs, distance))
    if args.summary:
        write_text(summary_frame(runs, distance).to_csv(index=False, float_format="%.4f"), str(args.summary))


def _summarize_only(args: argparse.Namespace) -> None:
    """The summary of a finished ``--runs``, and a ``name`` column (readable occupation names) added to it, or
    filled where rows appended after it was added lack one."""
    runs = pd.read_csv(args.runs)
    if ("name" not in runs or runs["name"].isna().any()) and args.model:
        model = load_model(args.model)
        names = runs["occupation"].map(dict(zip(model.entity_labels, model.entity_names, strict=True)))
        if "name" in runs:
            runs["name"] = runs["name"].fillna(names)
        else:
            runs.insert(1, "name", names)
        write_text(runs.to_csv(index=False), str(args.runs))
    _report(runs, args)


def audited_occupations(model_dir) -> set[str]:
    """The labels the model's prediction audit retrained (its ratio is read from them)."""
    audit = saved_prediction_audit(model_dir)
    return set() if audit is None else set(pd.Series(audit["occupation"]).tolist())


def lab_columns(analysis, removed, *, label: str, calibration: tuple[float, float | None, bool], noise,
                audited: set[str]) -> dict:
    """The prediction as the lab shows it (predict_edit: the analysis's memo of |H| or H_T, the lab's tolerance),
    calibrated as the lab calibrates it (``calibration``: :func:`~kgbias_core.whatif.step_ratio.
    model_edit_calibration`, the audit's temperature where it found one, else its scale), with the noise floor;
    -> the run's columns ``scale, temperature, scaled, scaled_low, scaled_high, floor, in_audit`` (``scaled``:
    the lab's point, whichever calibration made it; ``temperature`` NaN where the scale did)."""
    scale, temperature, prior = calibration
    s = predict_removal(analysis, label, removed, scale=scale, temperature=temperature, prior=prior,
                        spread=noise_spread(noise, label))
    return {"scale": scale, "temperature": math.nan if temperature is None else temperature, "scaled": s.point,
            "scaled_low": s.low, "scaled_high": s.high, "floor": s.floor, "in_audit": label in audited}


def lab_calibration(model_dir) -> tuple[float, float | None, bool]:
    """The lab's calibration of a removal on the model at ``model_dir``, and a line saying which it is."""
    calibration = model_edit_calibration(model_dir, "remove")
    scale, temperature, prior = calibration
    which = (f"hinge temperature T = {temperature:.3f}" + (" (prior: no audit)" if prior else " (audit)")
             if temperature is not None else f"step scale {scale:.3f}")
    print(f"the lab predicts removals with the {which}", flush=True)
    return calibration


#: The old estimator's columns of a row (Du's closed form times the calibration's scale, with its range).
OLD_COLUMNS = ("old_point", "old_low", "old_high")


def old_columns(model, raw: float, label: str) -> dict:
    """The old estimator's columns for a set of closed-form sum ``raw``, where the model has a calibration (a
    rescore after ``kgbias calibrate``: the old estimator beside the new one on the same sets), else none."""
    if model.calibration is None:
        return {}
    old = predict(raw, scale=model.influence_scale, calibration=model.calibration)
    return {"in_fit": label in model.calibration.occupations,
            **{key: getattr(old, key.removeprefix("old_")) for key in OLD_COLUMNS}}


def _rescore(args: argparse.Namespace) -> None:
    """``--rescore``: each row of ``--runs`` predicted again with the model's current step scale for edits."""
    runs = pd.read_csv(args.runs)
    model = load_model(args.model)
    if args.other_machine:
        _old_across_machines(runs, model, args)
        return
    ratio = model_step_ratio(args.model, use=EDITS)
    if ratio is None:
        raise SystemExit(f"{args.model}: no prediction audit or verified plan, so no step scale to rescore with")
    noise = saved_noise_band(args.model)
    audited = audited_occupations(args.model)
    print(f"step scale {ratio.value:.3f}: {ratio.describe()}", flush=True)
    calibration = lab_calibration(args.model)
    analysis = ModelAnalysis(model)
    rows = []
    for row in runs.to_dict("records"):
        influence = analysis.influence(row["occupation"])
        removed = removal_set(influence, kind=row["kind"], k=int(row["k"]))
        raw = float(influence[removed].sum())
        if not math.isclose(raw, row["closed_form"], rel_tol=1e-4, abs_tol=1e-6):
            raise SystemExit(f"{row['occupation']} {row['kind']} {row['share']}%: the rebuilt set's closed form "
                             f"{raw:+.6f} is not the run's {row['closed_form']:+.6f}: not the same set")
        t = time.perf_counter()
        shown = lab_columns(analysis, removed, label=row["occupation"], calibration=calibration, noise=noise,
                            audited=audited)
        rows.append({**row, **shown, **old_columns(model, raw, row["occupation"])})
        inside = "in " if shown["scaled_low"] <= row["actual"] <= shown["scaled_high"] else "OUT"
        print(f"{row.get('name', row['occupation'])} {row['kind']} {row['share']}%: scaled {shown['scaled']:+.4f} "
              f"[{shown['scaled_low']:+.4f}, {shown['scaled_high']:+.4f}] {inside} actual {row['actual']:+.4f} "
              f"({time.perf_counter() - t:.1f} s)", flush=True)
    rescored = pd.DataFrame(rows)
    write_text(rescored.to_csv(index=False), str(args.rescore))
    _report(rescored, args)


def _old_across_machines(runs: pd.DataFrame, model, args: argparse.Namespace) -> None:
    """``--rescore --other-machine``: runs made on another machine's model of the same config, whose sets this
    model cannot rebuild (its closed-form ranking drifts). Each row keeps the predictions it was made with; the old
    estimator's columns are filled from the row's own closed-form sum and this model's calibration, the one part of
    the old estimator that is a property of the config rather than of the trained weights."""
    if model.calibration is None:
        raise SystemExit(f"{args.model}: not calibrated (kgbias calibrate), so no old estimator to fill in")
    rows = [{**row, **old_columns(model, float(row["closed_form"]), row["occupation"])}
            for row in runs.to_dict("records")]
    rescored = pd.DataFrame(rows)
    write_text(rescored.to_csv(index=False), str(args.rescore))
    _report(rescored, args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a stored model (default: train the synthetic graph of the tests)")
    parser.add_argument("--runs", required=True, type=Path, help="CSV the rows are appended to (resumed from)")
    parser.add_argument("--occupations", type=int, default=8)
    parser.add_argument("--sets", default="2,16,40", help="removal sizes in percent of the moving triples")
    parser.add_argument("--threads", type=int, default=1, help="torch threads of the predictions")
    parser.add_argument("--retrain-threads", type=int, default=None, help="torch threads of the retrains")
    parser.add_argument("--no-exact", action="store_true", help="skip the exact-H step (Lanczos, slow on FB)")
    parser.add_argument("--summary", type=Path, help="CSV of summary_frame (per estimator), written at the end")
    parser.add_argument("--summarize-only", action="store_true",
                        help="only write the summary of --runs (and its occupations' names, from --model)")
    parser.add_argument("--rescore", type=Path, metavar="OUT",
                        help="with --model: predict --runs' sets again with today's step scale, into OUT")
    parser.add_argument("--other-machine", action="store_true",
                        help="with --rescore: the runs were made on another machine's model of the same config; "
                             "keep their predictions and fill the old estimator's columns from each row's "
                             "closed-form sum and --model's calibration")
    parser.add_argument("--no-calibration", action="store_true",
                        help="skip the old estimator and its calibration (13 masked retrains)")
    parser.add_argument("--kinds", default=",".join(KINDS), help="kinds of removal set, of " + ", ".join(KINDS))
    parser.add_argument("--distance", choices=DISTANCES, default="squared_l2",
                        help="train the synthetic graph with this distance (an engine's L1 / L2, or pseudo_huber)")
    parser.add_argument("--shard", type=shard, default=(0, 1), metavar="I/N",
                        help="only every N-th chosen occupation, from the I-th (0-based)")
    parser.add_argument("--skip", type=Path, nargs="+", default=[], metavar="RUNS",
                        help="earlier --runs files (another machine's too): their sets (occupation, kind, share) are "
                             "not run again")
    parser.add_argument("--base", type=Path, help=".npz of the unedited retrain's B_gr (written once, then read)")
    parser.add_argument("--base-only", action="store_true", help="with --model and --base: write the base, stop")
    parser.add_argument("--seed", type=int, default=SYNTHETIC.seed,
                        help="seed of the synthetic graph (7: the tests' graph, the band's fit; others: held out)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    shares = [int(s) for s in args.sets.split(",")]
    kinds = [k for k in args.kinds.split(",") if k]
    if not kinds or set(kinds) - set(KINDS):
        parser.error(f"--kinds: a comma-separated list of {', '.join(KINDS)}")
    print(f"torch threads {args.threads}; load average {os.getloadavg()[0]:.2f} at start", flush=True)

    if args.summarize_only:
        _summarize_only(args)
        return
    if args.rescore:
        if not args.model:
            parser.error("--rescore needs the --model the runs were made on")
        _rescore(args)
        return
    retrain_threads = args.retrain_threads or args.threads
    if args.base_only:
        if not (args.model and args.base):
            parser.error("--base-only needs --model and --base")
        torch.set_num_threads(retrain_threads)
        model = load_model(args.model)
        unedited_bias(model, ModelAnalysis(model).groups, args.base)
        return
    scale, noise = None, None
    if args.model:
        model = load_model(args.model)
        ratio = model_step_ratio(args.model, use=EDITS)
        if ratio is None:
            torch.set_num_threads(retrain_threads)
            started = time.perf_counter()
            prediction_audit_task(args.model).run(Progress())
            ratio = model_step_ratio(args.model, use=EDITS)
            print(f"audited in {time.perf_counter() - started:.1f} s", flush=True)
        scale, noise = ratio.value, saved_noise_band(args.model)
        audited = audited_occupations(args.model)
        print(f"step scale {scale:.3f} from {ratio.n} retrain(s) of the model; noise band "
              f"{'stored' if noise is not None else 'none'}", flush=True)
        calibration = lab_calibration(args.model)
    else:
        graph = generate_people_graph(replace(SYNTHETIC, seed=args.seed))
        model = train_model(graph, replace(SYNTHETIC_TRAINING, distance=args.distance), name="synthetic-transe",
                            device=torch.device("cpu"))
    if model.calibration is None and not args.no_calibration:
        torch.set_num_threads(retrain_threads)
        started = time.perf_counter()
        calibration, _ = calibrate(model)
        model = replace(model, calibration=calibration, influence_scale=calibration.scale)
        print(f"calibrated in {time.perf_counter() - started:.1f} s: scale {calibration.scale:.3f} "
              f"[{calibration.low:.3f}, {calibration.high:.3f}] on {', '.join(calibration.occupations)}", flush=True)
    analysis = ModelAnalysis(model)
    groups = analysis.groups
    torch.set_num_threads(args.threads)
    damping = None
    if not args.no_exact:
        started = time.perf_counter()
        damping = spectral_damping(model)
        print(f"spectral damping lambda = {damping:.3f} ({time.perf_counter() - started:.2f} s)", flush=True)
    torch.set_num_threads(retrain_threads)
    base = unedited_bias(model, groups, args.base)

    args.runs.parent.mkdir(parents=True, exist_ok=True)
    done = pd.read_csv(args.runs) if args.runs.exists() else None
    earlier = [pd.read_csv(path) for path in args.skip]  # sets other files hold already
    held = [frame for frame in [done, *earlier] if frame is not None]
    seen = {key for frame in held for key in zip(frame["occupation"], frame["kind"], frame["share"], strict=True)}
    measured = measured_sets(held)
    retrained: dict[bytes, torch.Tensor] = {}  # one retrain per removed set (random sets of one k are one set)
    first, shards = args.shard
    for index in chosen_occupations(groups, args.occupations)[first::shards]:
        label = groups.labels[index]
        influence = analysis.influence(label)
        moving = int((influence != 0).sum())
        for kind in kinds:
            for share in shares:
                if (label, kind, share) in seen:
                    continue
                k = max(1, moving * share // 100)
                removed = removal_set(influence, kind=kind, k=k)
                raw = float(influence[removed].sum())
                if already_measured(measured, label, kind, k, raw):
                    print(f"{label:14s} {kind:6s} {share:2d}% k={k:4d}: the set of another share, measured already",
                          flush=True)
                    continue
                torch.set_num_threads(args.threads)
                t = time.perf_counter()
                p = predict_removal(analysis, label, removed)  # as computed: unscaled, no floor
                newton_s = time.perf_counter() - t
                exact = math.nan if damping is None else newton_change(
                    model, removed, groups=groups, occupation_index=index, damping=damping, curvature="exact")
                old = old_columns(model, raw, label)
                shown = {} if scale is None else lab_columns(analysis, removed, label=label,
                                                             calibration=calibration, noise=noise, audited=audited)
                torch.set_num_threads(retrain_threads)
                t = time.perf_counter()
                key = np.sort(removed.cpu().numpy()).tobytes()
                if key not in retrained:
                    retrained[key] = masked_retrain_bias(model, removed=removed, groups=groups)
                actual = float(retrained[key][index] - base[index])
                row = {"occupation": label, "men": int(groups.n_male[index]), "women": int(groups.n_female[index]),
                       "in_fit": old.get("in_fit", False), "kind": kind, "share": share, "k": k, "moving": moving,
                       "closed_form": raw, **{key: old.get(key, math.nan) for key in OLD_COLUMNS},
                       "exact_newton": exact, "newton": p.point, "low": p.low, "high": p.high, "actual": actual,
                       "newton_s": newton_s, "retrain_s": time.perf_counter() - t, **shown}
                append_row(row, args.runs)
                measured[(label, kind, k)] = raw  # this run's other shares see it too
                inside = "in " if p.low <= actual <= p.high else "OUT"
                print(f"{label:14s} {row['men']:3d}/{row['women']:<3d} {kind:6s} {share:2d}% k={k:4d}: newton "
                      f"{p.point:+.4f} [{p.low:+.4f}, {p.high:+.4f}] {inside} old {row['old_point']:+.4f} "
                      f"actual {actual:+.4f} ({newton_s:.2f} s)"
                      + (f" | scaled {shown['scaled']:+.4f} [{shown['scaled_low']:+.4f}, {shown['scaled_high']:+.4f}]"
                         if shown else ""), flush=True)
    if not args.runs.exists():
        print(f"every chosen set was measured already (--runs, --skip): no row for {args.runs}", flush=True)
        return
    runs = pd.read_csv(args.runs)
    if not math.isnan(runs["actual"].sum()):
        _report(runs, args)


if __name__ == "__main__":
    main()
