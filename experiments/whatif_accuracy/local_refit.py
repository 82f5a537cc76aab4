"""The Newton step with the touched rows re-optimised, against masked retrains (issue 25: Kelpie's post-training).

For each targeted removal set (top / bottom by Du's closed form), three predictions of the change of B_gr beside
the retrained one:

- ``newton``: the Newton step with |H| as computed (what :func:`~kgbias_core.influence.prediction.predict_removal`
  gives before the model's step scale);
- ``refit``: the rows that the removed triples name re-optimised on J_{-S} alone, every other row at theta, read
  against the same rows re-optimised on J (:func:`kgbias_core.influence.local_refit.paired_refit`'s two halves;
  the unedited half is made once per set for this and the next);
- ``newton_refit``: the Newton step, then those rows re-optimised with every other row at theta + Delta theta,
  read against the same pair's other half (:func:`~kgbias_core.influence.prediction.newton_change` with
  ``refit=True``);
- ``newton_refit_read``: the same, with the rows B_gr is read from (the occupation's persons and the occupation,
  :func:`~kgbias_core.influence.local_refit.read_rows`) refitted beside the touched ones, in a pair of its own
  (:func:`~kgbias_core.influence.local_refit.read_refit_change`); with ``--read-persons CAP``, at most CAP persons
  of each gender refitted, a sample read as a control variate on the step, and with ``--read-only`` the read rows
  alone, not the touched ones (what the core's default does; columns ``read_persons``, the cap or 0 for all,
  ``persons_refit`` and ``touched``, written with either option); with ``--start-scale X`` (``audit``: the step's
  audited ratio) its refit starts from theta + X Delta theta (column ``start_scale``; tried on L2 on 2026-12-07, not
  what the lab does: docs/results/whatif.md).

Two sources of retrains:

    python experiments/whatif_accuracy/local_refit.py --model PATH --runs R1.csv [R2.csv ..] --out OUT.csv
        (the retrained changes of ``whatif_accuracy.py`` runs on that model, or of
        experiments/default_models/sweep.py's influence check: no retrain here; each set is rebuilt
        and checked by its closed-form sum, or, with ``--other-machine``, rebuilt from its kind and k only and
        its closed-form sums recorded side by side: runs made on another machine's model of the same config)
    python experiments/whatif_accuracy/local_refit.py --out OUT.csv [--seed 7] [--epochs 25] [--distance l1]
        (the synthetic graph of the tests, retrained masked here: 8 occupations x top/bottom x 2, 16, 40%; --epochs
        trains it, and every retrain, longer than the tests' 25 epochs: nearer every row's optimum; --distance
        trains and retrains it with an engine's L1 or L2 (what an imported model scores with), and --as-imported
        predicts it as the lab predicts an imported model (its negatives re-drawn, --imported-negatives K a triple;
        no audit) while the retrains keep its own; --retrained EARLIER.csv reads each set's retrained change from
        an earlier OUT of the same seed and epochs instead, and with --as-imported --own-sets the sets of a run
        without --as-imported, chosen by the model's own closed form; with --model, --as-imported predicts the
        runs' sets so)

Every row is written when it is done (resumable: a rerun skips the sets in OUT). ``--summary`` writes, per
estimator, the spread of retrained / predicted and the share of sets within 30% of their point, overall and
for occupations with fewer than 10 persons of one gender (``--summarize-only``: that alone, from OUT). With
``--random`` the runs' random sets are predicted too; the summary leaves them out (their point is about 0), and
``--bands --lab`` judges them apart, by the lab's interval with its noise floor.

    python experiments/whatif_accuracy/local_refit.py --bands OUT1.csv OUT2.csv --runs R1.csv .. --out BANDS.csv

fits, for the Newton step and for the Newton step + refit, each scaled by its own ratio on the audited occupation's
top 16% set (as ``kgbias prepare``'s audit scales the lab's step), the narrowest band f = a + b / sqrt(m) that
covers ``--coverage`` of the targeted sets (experiments/whatif_accuracy/band_fit.py), in-sample and with each
occupation held out; the noise floors come from the ``--runs`` the sets were made in (``NAME=RUNS.csv``: that
graph's alone, where graphs share occupation labels, as synthetic graphs of two seeds do). Where two files hold the same
occupation, the first one's rows are used. Files named ``NAME=OUT.csv`` are graphs of their own (unnamed ones:
``fb15k237``): band_fit.py's rows for every graph, pooled and across graphs, are written. A graph whose rows mark
no audited set (the synthetic mode) reads its audit ratio from the top 16% set of the occupation that
``kgbias prepare``'s audit would choose (the one with the largest rarer gender; its k may differ from the audit's by
rounding). ``--audit-rule`` moves a stored audit's marks to the occupation that rule chooses today (for a model
audited before the rule of 2026-11-29: FB13's stored audit is Politician's set, the rule's Writer's).
"""

from __future__ import annotations

import argparse
import math
import os
import time
from dataclasses import replace
from pathlib import Path

import band_fit  # noqa: I001  (the band's fit, beside this file)
import numpy as np
import pandas as pd
import torch
from whatif_accuracy import SYNTHETIC, SYNTHETIC_TRAINING, chosen_occupations  # noqa: I001  (beside this file)

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.commands.common import append_row, write_text
from kgbias_core.data.synthetic import generate_people_graph
from kgbias_core.embeddings.config import DISTANCES
from kgbias_core.embeddings.store import load_model
from kgbias_core.embeddings.training import train_model
from kgbias_core.influence.local_refit import (
    MAX_DEGREE,
    MIN_SHARE,
    read_refit_change,
    refit_rows,
    touched_rows,
)
from kgbias_core.influence.prediction import (
    REDRAWN_SCALES,
    _bias,
    _moved,
    absolute_newton_step,
    scaled_band,
    unscaled_band,
)
from kgbias_core.influence.refit_prediction import REFIT_BANDS, REFIT_REDRAWN_BANDS, REFIT_REDRAWN_SCALES
from kgbias_core.influence.retraining_check import masked_retrain_bias, removal_set
from kgbias_core.tasks.prediction_audit import AUDIT_SHARE, audit_index
from kgbias_core.whatif.step_ratio import EDITS, clipped_scale, model_step_ratio, saved_prediction_audit

ESTIMATORS = ("newton", "refit", "newton_refit", "newton_refit_read")


def predictions(analysis, label: str, removed: torch.Tensor, *, max_degree: int = MAX_DEGREE,
                min_share: float = MIN_SHARE, read_persons: int | None = None, read_only: bool = False,
                step_only: bool = False, start_scale: float = 1.0) -> dict:
    """The four predictions of one set (module docstring), unscaled, with their seconds; ``read_persons``: the cap
    of persons per gender of ``newton_refit_read`` (None: all), ``read_only``: its rows without the touched ones
    (either one adds the columns ``read_persons``, ``persons_refit`` and ``touched``); ``step_only``: the Newton
    step alone (the refits of a large set's touched rows take minutes); ``start_scale``: ``newton_refit_read`` refits
    from theta + start_scale * Delta theta (``--start-scale``; the column ``start_scale`` where it is not 1)."""
    model, groups = analysis.model, analysis.groups
    index = groups.index(label)
    e, r = model.entity_embeddings, model.relation_embeddings
    out = {}
    t = time.perf_counter()
    negatives = analysis.negatives  # the frozen ones, or re-drawn as for an imported model (--as-imported)
    step = absolute_newton_step(model, removed, tolerance=1e-3, active=analysis.active_terms,
                                hvp=analysis.absolute_hvp, negatives=None if negatives.exact else negatives.negatives)
    out["newton"] = _bias(_moved(model, step), groups, index) - _bias(model, groups, index)
    out["newton_s"] = time.perf_counter() - t
    if step_only:
        return out
    rows = touched_rows(model.triples, removed, max_degree=max_degree, min_share=min_share)
    common = dict(triples=model.triples, negatives=negatives.negatives, margin=model.config.margin,
                  l2=model.config.l2, distance=model.config.distance, rows=rows)
    # paired_refit's unedited half (the rows refitted on J at theta) is the same for both refits: made once here,
    # its seconds counted in each one's (what the lab would pay for either alone).
    t = time.perf_counter()
    unedited = refit_rows(entities=e, relations=r, removed=removed.new_zeros(0), **common)
    unedited_bias = _bias(_moved(model, (unedited - e, torch.zeros_like(r))), groups, index)
    unedited_s = time.perf_counter() - t
    for name, start in (("refit", (e, r)), ("newton_refit", (e + step[0], r + step[1]))):
        t = time.perf_counter()
        edited = refit_rows(entities=start[0], relations=start[1], removed=removed, **common)
        out[name] = _bias(_moved(model, (edited - e, start[1] - r)), groups, index) - unedited_bias
        out[f"{name}_s"] = unedited_s + time.perf_counter() - t
    out["rows"] = int(rows.numel())
    # The rows B_gr reads (the occupation's persons and the occupation, hub or not) refitted with the touched ones:
    # the prediction is read from exactly the rows that were re-optimised. Its own pair: other rows, other halves.
    t = time.perf_counter()
    read_step = step if start_scale == 1.0 else (start_scale * step[0], start_scale * step[1])
    read = read_refit_change(entities=e, relations=r, step=read_step, removed=removed, groups=groups,
                             occupation_index=index, max_persons=read_persons, touched=not read_only,
                             max_degree=max_degree, min_share=min_share,
                             **{k: v for k, v in common.items() if k != "rows"})
    out["newton_refit_read"] = read.change
    out["newton_refit_read_s"] = time.perf_counter() - t
    out["rows_read"] = read.rows
    if read_persons is not None or read_only:
        out.update(read_persons=read_persons or 0, persons_refit=read.sampled, touched=not read_only)
    if start_scale != 1.0:
        out["start_scale"] = start_scale
    return out


def as_imported(model, negatives: int = 1):
    """``model`` as the lab sees one imported from another engine: no frozen negatives (influence re-draws
    ``negatives`` a triple, :func:`kgbias_core.influence.negatives.influence_negatives`; ``kgbias import`` records
    IMPORT_NEGATIVES since 2026-12-06, 1 before), so no audit; its rows and objective otherwise its own (an
    imported model's margin and l2 are kgbias's guesses: this is the proxy's best case)."""
    return replace(model, negatives=None, config=replace(model.config, negatives_per_triple=negatives))


def summary_frame(rows: pd.DataFrame) -> pd.DataFrame:
    """Per estimator and group size: sets, median and range of retrained / predicted (over the sets whose point is
    not 0), median |error| / |actual|, the share of sets whose retrained change is within 30% of the point, and the
    same share once each point is times the part's median ratio (``within_30pct_scaled``: the spread around the level,
    an in-sample scale that no audit gives, so that two estimators whose level differs compare by their spread)."""
    out = []
    rows = rows.assign(small=np.minimum(rows["men"], rows["women"]) < 10)
    for estimator in (name for name in ESTIMATORS if name in rows):  # files made before an estimator lack it
        for part, sel in (("all", rows), ("fewer than 10 of one gender", rows[rows["small"]]),
                          ("10+ of each", rows[~rows["small"]])):
            if sel.empty:
                continue
            ratio = sel["actual"] / sel[estimator].where(sel[estimator] != 0)  # a refit of no row reads 0
            miss = (sel["actual"] - sel[estimator]).abs()
            scaled = ratio.median() * sel[estimator]
            out.append({"estimator": estimator, "sets": part, "n": len(sel), "median_ratio": ratio.median(),
                        "min_ratio": ratio.min(), "max_ratio": ratio.max(),
                        "median_rel_error": (miss / sel["actual"].abs()).median(),
                        "within_30pct": float((miss <= 0.3 * sel[estimator].abs()).mean()),
                        "within_30pct_scaled": float(((sel["actual"] - scaled).abs() <= 0.3 * scaled.abs()).mean()),
                        "sign_right": float((np.sign(sel[estimator]) == np.sign(sel["actual"])).mean())})
    return pd.DataFrame(out)


def scaled_rows(rows: pd.DataFrame, runs: pd.DataFrame, estimator: str, *, unscaled: bool = False,
                distance: str = "squared_l2") -> tuple[pd.DataFrame, float]:
    """``rows`` as band_fit.py reads a run: ``scaled`` = the estimator's point times its audit ratio (retrained /
    predicted on the audited occupation's top 16% set, the set ``kgbias prepare``'s audit retrains, clipped to the
    range of the models' ``distance`` as the lab clips it; where ``unscaled`` (an imported model has no audit) the
    step's prior scale, :data:`REDRAWN_SCALES` (L1 since 2026-12-07), and the refit's for the refits,
    :data:`REFIT_REDRAWN_SCALES`, where the distance has one, else 1),
    ``floor`` the noise floor of the same set in ``runs`` (0 where none). -> (rows, the ratio)."""
    if unscaled:
        ratio = (REDRAWN_SCALES if estimator == "newton" else REFIT_REDRAWN_SCALES).get(distance, 1.0)
    else:
        ratio = band_fit.audit_ratio(rows, estimator, distance=distance)
    floor = runs.drop_duplicates(["occupation", "kind", "share"]).set_index(["occupation", "kind", "share"])
    floor = floor["floor"] if "floor" in floor else pd.Series(dtype=float)
    keys = list(zip(rows["occupation"], rows["kind"], rows["share"], strict=True))
    return rows.assign(scaled=rows[estimator] * ratio,
                       floor=[float(floor.get(key, 0.0)) for key in keys]).fillna({"floor": 0.0}), ratio


def lab_bands(distance: str = "squared_l2", *, unscaled: bool = False, step_band: tuple[float, float] | None = None,
              refit_band: tuple[float, float] | None = None) -> dict[str, tuple[float, float]]:
    """The bands the lab shows, by estimator (``--lab``): the scaled step's constants for the models' ``distance``
    (:func:`~kgbias_core.influence.prediction.scaled_band`), or with ``unscaled`` the step's as computed on an imported
    model of that distance (no audit; :func:`~kgbias_core.influence.prediction.unscaled_band`), and the
    refined prediction's (its distance's where it has one of its own, else squared L2's; with ``unscaled`` an
    import's, where the distance has one). ``step_band``, ``refit_band``: the step's or the refined prediction's
    (base, small) given instead (a band the lab showed before)."""
    if step_band is None:
        step_band = unscaled_band(distance, redrawn=True) if unscaled else scaled_band(distance)
    refined = REFIT_BANDS.get(distance, REFIT_BANDS["squared_l2"])
    if unscaled:
        refined = REFIT_REDRAWN_BANDS.get(distance, refined)
    return {"newton": step_band, "newton_refit_read": refit_band or refined}


def band_frame(graphs: dict[str, pd.DataFrame], runs: pd.DataFrame | dict[str, pd.DataFrame], coverage: float, *,
               lab: bool = False, distance: str = "squared_l2", unscaled: bool = False,
               step_band: tuple[float, float] | None = None, refit_band: tuple[float, float] | None = None,
               clip_as: str | None = None) -> pd.DataFrame:
    """Per estimator (Newton step, Newton step + refit, the same with the rows B_gr reads; those the rows hold), each
    scaled by its own audit ratio on each graph: band_fit.py's narrowest f = a + b / sqrt(m) that covers ``coverage``
    of the targeted sets, in-sample and with each occupation held out (the audited occupation left out of both);
    with several graphs also pooled and from graph to graph. ``audit_ratio``: each graph's, ``;``-joined. ``lab``:
    also the band the lab shows for the estimator on models of ``distance`` (:func:`lab_bands`), judged on each graph
    and on all (``lab band -> ...``), and on each graph's random sets where the rows hold some (``--random``: ``lab
    band, random sets -> ...``, no half-width). ``unscaled``: no audit ratio (1), and the lab's band of an imported
    model; ``step_band``, ``refit_band``: the step or the refined prediction judged by this band instead
    (:func:`lab_bands`); ``clip_as``: each audit ratio clipped to this distance's range instead of ``distance``'s (the
    lab clipped every distance as squared L2 before 2026-12-06)."""
    out = []
    names = ("newton", "newton_refit", "newton_refit_read")
    for estimator in (name for name in names if all(name in rows for rows in graphs.values())):
        scaled = {graph: scaled_rows(rows, runs[graph] if isinstance(runs, dict) else runs, estimator,
                                     unscaled=unscaled, distance=clip_as or distance)
                  for graph, rows in graphs.items()}
        evaluation = band_fit.evaluate({graph: band_fit.targeted_rows(rows) for graph, (rows, _) in scaled.items()},
                                       coverage)
        if len(graphs) == 1:  # one graph: its own rows only (the pooled ones repeat them)
            evaluation = evaluation[~evaluation["evaluation"].str.contains("all")]
        shown = lab_bands(distance, unscaled=unscaled, step_band=step_band, refit_band=refit_band)
        if lab and estimator in shown:
            targeted = {graph: band_fit.targeted_rows(rows) for graph, (rows, _) in scaled.items()}
            targeted["all"] = pd.concat(targeted.values(), ignore_index=True)
            evaluation = pd.concat([evaluation, pd.DataFrame([
                band_fit.evaluation_row(f"lab band -> {graph}", rows, *band_fit.judged(rows, *shown[estimator]),
                              *shown[estimator]) for graph, rows in targeted.items()])], ignore_index=True)
            # random sets: a point of about 0, judged by whether the noise floor holds the retrained change (no
            # relative half-width: it divides by that point)
            for graph, (rows, _) in scaled.items():
                chance = band_fit.random_rows(rows)
                if not chance.empty:
                    covered, _ = band_fit.judged(chance, *shown[estimator])
                    evaluation = pd.concat([evaluation, pd.DataFrame([band_fit.evaluation_row(
                        f"lab band, random sets -> {graph}", chance, covered, np.full(len(chance), np.nan),
                        *shown[estimator])])], ignore_index=True)
        ratios = [ratio for _, ratio in scaled.values()]
        out.append(evaluation.assign(estimator=estimator, audit_ratio=ratios[0] if len(ratios) == 1 else
                                     "; ".join(f"{graph} {ratio:.4f}" for graph, (_, ratio) in scaled.items())))
    return pd.concat(out, ignore_index=True)[["estimator", "audit_ratio", "evaluation", "sets", "coverage",
                                               "half_width", "half_width_large", "coverage_small", "a", "b"]]


def with_audit(rows: pd.DataFrame, *, by_rule: bool = False) -> pd.DataFrame:
    """``rows`` with an audited set. Rows that mark one (a stored audit's: every row of its occupation) stay as they
    are, or with ``by_rule`` have their marks moved to every row of the occupation ``kgbias prepare``'s audit chooses
    today (:func:`kgbias_core.tasks.prediction_audit.audit_index`). Rows that mark none get that occupation's top 16%
    set marked ``in_audit``."""
    stored = bool(rows["in_audit"].astype(bool).any())
    if stored and not by_rule:
        return rows
    sizes = rows.drop_duplicates("occupation")
    index = audit_index(torch.tensor(sizes["men"].to_numpy()), torch.tensor(sizes["women"].to_numpy()))
    mark = rows["occupation"] == sizes["occupation"].iloc[index]
    if not stored:
        mark &= (rows["kind"] == "top") & (rows["share"] == round(100 * AUDIT_SHARE))
    return rows.assign(in_audit=mark)


def _bands(args) -> None:
    """``--bands``: the rows of ``--out`` files by graph (``NAME=FILE``; the first file's sets win where two of a
    graph hold an occupation), their noise floors from ``--runs``."""
    graphs: dict[str, list[pd.DataFrame]] = {}
    for item in args.bands:
        name, _, path = str(item).rpartition("=")
        graphs.setdefault(name or "fb15k237", []).append(pd.read_csv(path))
    rows_of = {}
    for name, frames in graphs.items():
        rows, seen = [], set()
        for frame in frames:
            fresh = frame[~frame["occupation"].isin(seen)]
            seen |= set(frame["occupation"])
            rows.append(fresh)
        rows_of[name] = with_audit(pd.concat(rows, ignore_index=True), by_rule=args.audit_rule)
    named: dict[str, list[pd.DataFrame]] = {}  # NAME=RUNS: that graph's floors only (graphs that share labels)
    for item in args.runs:
        name, _, path = str(item).rpartition("=")
        named.setdefault(name, []).append(pd.read_csv(path))
    runs = {graph: pd.concat(named.get("", []) + named.get(graph, []) or
                             [pd.DataFrame(columns=["occupation", "kind", "share"])], ignore_index=True)
            for graph in rows_of}
    bands = band_frame(rows_of, runs, args.coverage, lab=args.lab, distance=args.distance, unscaled=args.as_imported,
                       step_band=args.lab_step_band, refit_band=args.lab_refit_band, clip_as=args.clip_as)
    print(bands.round(3).to_string(index=False))
    write_text(bands.to_csv(index=False, float_format="%.4f"), str(args.out))


def _summarize(args) -> None:
    """The summary of ``--out``'s rows, the audited occupation left out, printed and written to ``--summary``."""
    rows = pd.read_csv(args.out)
    summary = summary_frame(rows[~rows["in_audit"].astype(bool) & (rows["kind"] != "random")])
    print(summary.round(3).to_string(index=False))
    if args.summary:
        write_text(summary.to_csv(index=False, float_format="%.4f"), str(args.summary))


def sizes(analysis, label: str) -> dict:
    """The occupation's name and gender counts: the columns a ``sweep.py`` run (experiments/default_models) lacks,
    whose sets are the same top and bottom sets of the closed form (its base rows are not sets)."""
    index = analysis.groups.index(label)
    model = analysis.model
    return {"name": model.entity_names[int(analysis.groups.occupations[index])],
            "men": int(analysis.groups.n_male[index]), "women": int(analysis.groups.n_female[index])}


def _start_scale(args, analysis: ModelAnalysis, predictor: ModelAnalysis, stored: dict, base) -> float:
    """``--start-scale``: a number as given, or ``audit``: the step's ratio retrained / predicted on the audited set,
    clipped to the distance's range as the lab clips it. With ``--model`` the model's stored audit
    (:func:`~kgbias_core.whatif.step_ratio.model_step_ratio`); on the synthetic graph the top 16% set of the occupation
    ``kgbias prepare``'s audit would choose, its step predicted here and its retrain read from ``--retrained`` or
    made here (``base``: the unedited retrain's B_gr)."""
    if args.start_scale != "audit":
        return float(args.start_scale)
    distance = predictor.model.config.distance
    if args.model:
        ratio = model_step_ratio(args.model, use=EDITS)
        if ratio is None:
            raise SystemExit(f"{args.model}: no prediction audit stored (kgbias prepare runs it)")
        return ratio.value
    groups = analysis.groups
    label = groups.labels[audit_index(groups.n_male, groups.n_female)]
    influence = analysis.influence(label)
    k = max(1, int((influence != 0).sum()) * round(100 * AUDIT_SHARE) // 100)
    removed = removal_set(influence, kind="top", k=k)
    earlier = stored.get((label, "top", round(100 * AUDIT_SHARE)))
    if earlier is not None:
        actual = float(earlier["actual"])
    else:
        index = groups.index(label)
        actual = float(masked_retrain_bias(analysis.model, removed=removed, groups=groups)[index] - base[index])
    step = predictions(predictor, label, removed, step_only=True)["newton"]
    return clipped_scale(actual / step, distance)


def _stored_sets(args) -> tuple[ModelAnalysis, list[dict]]:
    model = load_model(args.model)
    analysis = ModelAnalysis(model)
    runs = pd.concat([pd.read_csv(p) for p in args.runs]) if args.runs else pd.DataFrame(columns=["kind"])
    kinds = ("top", "bottom", "random") if args.random else ("top", "bottom")
    runs = runs[runs["kind"].isin(kinds)].drop_duplicates(["occupation", "kind", "share"])
    if "in_audit" in runs:  # a file without the column (sweep.py's) beside one with it: its NaN marks no audit
        runs = runs.assign(in_audit=runs["in_audit"].astype("boolean").fillna(False).astype(bool))
    sets = [{**row, **sizes(analysis, row["occupation"])} for row in runs.to_dict("records")]
    audit = saved_prediction_audit(args.model) if args.audit else None
    if args.audit and audit is None:
        raise SystemExit(f"{args.model}: no prediction audit stored (kgbias prepare runs it)")
    if audit is not None:  # the audit's own set, rebuilt from its occupation and k (no closed-form sum to check)
        row = audit.iloc[0]
        index = analysis.groups.index(row["occupation"])
        share = round(100 * AUDIT_SHARE)
        sets = [s for s in sets if (s["occupation"], s["kind"], s["share"]) != (row["occupation"], "top", share)] + [{
            "occupation": row["occupation"], "name": row["name"], "men": int(analysis.groups.n_male[index]),
            "women": int(analysis.groups.n_female[index]), "kind": "top", "share": share,
            "k": int(row["k"]), "closed_form": math.nan, "actual": float(row["retrained"]), "in_audit": True}]
    return analysis, sets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a stored model whose --runs hold the retrained changes")
    parser.add_argument("--runs", nargs="*", default=(),
                        help="whatif_accuracy.py (or default_models/sweep.py) run CSVs made on --model")
    parser.add_argument("--other-machine", action="store_true",
                        help="the runs were made on another machine's model of the same config: rebuild each set "
                             "from its kind and k, record both closed-form sums, do not require them equal")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--summary", type=Path)
    parser.add_argument("--random", action="store_true",
                        help="with --model: predict the random sets of --runs too (kind random: k triples of the "
                             "whole graph, seed k; left out of the summary, judged apart by --bands --lab)")
    parser.add_argument("--audit", action="store_true",
                        help="with --model: predict the model's stored one-retrain audit set too (in_audit, in place "
                             "of the same set in --runs), whose ratio scales the band fit")
    parser.add_argument("--max-degree", type=int, default=MAX_DEGREE)
    parser.add_argument("--min-share", type=float, default=MIN_SHARE)
    parser.add_argument("--seed", type=int, default=SYNTHETIC.seed, help="synthetic graph's seed (no --model)")
    parser.add_argument("--epochs", type=int, default=SYNTHETIC_TRAINING.epochs,
                        help="synthetic graph's training epochs (no --model; the tests' model trains 25)")
    parser.add_argument("--works-per-person", type=float, default=SYNTHETIC.works_per_person,
                        help="synthetic graph (no --model): mean works per person (the tests' graph: 1.5; more "
                             "works, more training triples per person)")
    parser.add_argument("--negatives", type=int, default=SYNTHETIC_TRAINING.negatives_per_triple,
                        help="synthetic graph (no --model): frozen negatives per triple of its training and retrains")
    parser.add_argument("--as-imported", action="store_true",
                        help="synthetic graph (no --model): predict it as an imported model (its negatives "
                             "re-drawn, one a triple), retrain it with its own; with --model: the runs' sets (made "
                             "by the model's own closed form) predicted so; with --bands: no audit ratio (the step "
                             "at its distance's prior scale where it has one, REDRAWN_SCALES), and --lab judges the "
                             "step by an imported model's band")
    parser.add_argument("--redraw-seed", type=int, default=0,
                        help="with --as-imported: the seed the negatives are re-drawn from (the lab's is 0; a model "
                             "trained here with seed 0 would get its own back, so --model needs another)")
    parser.add_argument("--own-sets", action="store_true",
                        help="synthetic graph with --as-imported: the sets chosen by the model's own closed form "
                             "(its frozen negatives), as a run without --as-imported chose them, so that --retrained "
                             "can read that run's retrains")
    parser.add_argument("--imported-negatives", type=int, default=1,
                        help="with --as-imported: negatives re-drawn per triple (kgbias import records 8 since "
                             "2026-12-06, 1 before)")
    parser.add_argument("--retrained", type=Path,
                        help="synthetic graph (no --model): each set's retrained change read from this earlier --out "
                             "of the same --seed and --epochs (checked by its closed-form sum) instead of retrained")
    parser.add_argument("--read-persons", type=int, metavar="CAP",
                        help="refit at most CAP persons of each gender in newton_refit_read (default: all)")
    parser.add_argument("--read-only", action="store_true",
                        help="newton_refit_read refits the rows B_gr reads alone, not the touched rows beside them")
    parser.add_argument("--start-scale", metavar="X|audit",
                        help="newton_refit_read refits from theta + X * the Newton step (audit: the step's audited "
                             "ratio; default 1, the step as computed)")
    parser.add_argument("--step-only", action="store_true",
                        help="the Newton step alone, no refit (a large set's refits take minutes)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--bands", nargs="+", metavar="[GRAPH=]ROWS",
                        help="fit the band of each estimator on these files' rows (noise floors from --runs), "
                             "by graph where named, write the fit to --out; nothing is predicted")
    parser.add_argument("--coverage", type=float, default=0.9, help="with --bands: the coverage to reach")
    parser.add_argument("--audit-rule", action="store_true",
                        help="with --bands: mark each graph's audit set by today's rule (audit_index), not as stored")
    parser.add_argument("--lab", action="store_true",
                        help="with --bands: also judge the bands the lab shows (the scaled step's, the refined one's)")
    parser.add_argument("--clip-as", choices=DISTANCES,
                        help="with --bands: clip each audit ratio to this distance's range, not --distance's (the "
                             "lab clipped every distance as squared L2 before 2026-12-06)")
    parser.add_argument("--lab-step-band", type=lambda text: tuple(float(v) for v in text.split(",")),
                        metavar="BASE,SMALL", help="with --bands --lab: judge the step by this band instead of "
                                                   "today's (the band the lab showed before a change)")
    parser.add_argument("--lab-refit-band", type=lambda text: tuple(float(v) for v in text.split(",")),
                        metavar="BASE,SMALL", help="with --bands --lab: judge the refined prediction by this band "
                                                   "instead of today's")
    parser.add_argument("--distance", choices=DISTANCES, default="squared_l2",
                        help="the models' distance: the synthetic graph (no --model) trains and retrains with it; "
                             "with --bands --lab, whose scaled-step band the lab shows")
    parser.add_argument("--summarize-only", action="store_true", help="only write the summary of --out's rows")
    args = parser.parse_args()
    if args.bands:
        _bands(args)
        return
    if args.summarize_only:
        _summarize(args)
        return
    torch.set_num_threads(args.threads)
    print(f"torch threads {args.threads}; load average {os.getloadavg()[0]:.2f} at start", flush=True)
    done = pd.read_csv(args.out) if args.out.exists() else pd.DataFrame(columns=["occupation", "kind", "share"])
    seen = set(zip(done["occupation"], done["kind"], done["share"], strict=True))
    stored = {}  # the synthetic graph's earlier retrained changes (--retrained), by set
    if args.model:
        analysis, sets = _stored_sets(args)
        # --as-imported: each set rebuilt by the model's own closed form (the set its run retrained), then predicted
        # as the lab predicts the model imported from another engine (its negatives re-drawn, no audit)
        predictor = (ModelAnalysis(as_imported(analysis.model, args.imported_negatives),
                                   negative_seed=args.redraw_seed) if args.as_imported else analysis)
        if args.as_imported and torch.equal(predictor.negatives.negatives, analysis.model.frozen_negatives):
            # a kgbias model re-drawn from its own training seed gets its own negatives back: no import at all
            raise SystemExit(f"--redraw-seed {args.redraw_seed} re-draws {args.model}'s own frozen negatives "
                             f"(its training seed): pass another")
    else:
        graph = generate_people_graph(replace(SYNTHETIC, seed=args.seed, works_per_person=args.works_per_person))
        training = replace(SYNTHETIC_TRAINING, epochs=args.epochs, negatives_per_triple=args.negatives,
                           distance=args.distance)
        model = train_model(graph, training, name="synthetic-transe", device=torch.device("cpu"))
        # --as-imported: predicted as the lab predicts a model imported from another engine (no frozen negatives,
        # so one re-drawn a triple, no audit), retrained with the negatives it was trained with
        predictor = ModelAnalysis(as_imported(model, args.imported_negatives) if args.as_imported else model,
                                  negative_seed=args.redraw_seed)
        # the sets: by the closed form of the analysis that predicts them (an imported model's, re-drawn negatives),
        # or with --own-sets by the model's own (the sets of a run without --as-imported, whose retrains
        # --retrained reads)
        analysis = ModelAnalysis(model) if args.own_sets else predictor
        sets = []
        for index in chosen_occupations(analysis.groups, 8):
            label = analysis.groups.labels[index]
            moving = int((analysis.influence(label) != 0).sum())
            sets += [{"occupation": label, "name": label, "men": int(analysis.groups.n_male[index]),
                      "women": int(analysis.groups.n_female[index]), "kind": kind, "share": share,
                      "k": max(1, moving * share // 100), "closed_form": math.nan, "actual": math.nan}
                     for kind in ("top", "bottom") for share in (2, 16, 40)]
        earlier = [] if args.retrained is None else pd.read_csv(args.retrained).to_dict("records")
        stored = {(row["occupation"], row["kind"], row["share"]): row for row in earlier}
        base = None if stored else masked_retrain_bias(model, removed=None, groups=analysis.groups)
    start_scale = 1.0
    if args.start_scale is not None:
        start_scale = _start_scale(args, analysis, predictor, stored, base if not args.model else None)
        print(f"newton_refit_read starts from the step times {start_scale:.3f}", flush=True)
    for row in sets:
        if (row["occupation"], row["kind"], row["share"]) in seen:
            continue
        label = row["occupation"]
        influence = analysis.influence(label)
        removed = removal_set(influence, kind=row["kind"], k=int(row["k"]))
        raw = float(influence[removed].sum())
        if (args.model and not args.other_machine and not math.isnan(row["closed_form"])
                and not math.isclose(raw, row["closed_form"], rel_tol=1e-4)):
            raise SystemExit(f"{label} {row['kind']} {row['share']}%: closed form {raw:+.6f}, the run's "
                             f"{row['closed_form']:+.6f}: not the same set (another machine? --other-machine)")
        actual = row["actual"]
        if not args.model and stored:
            earlier = stored.get((label, row["kind"], row["share"]))
            if earlier is None or not math.isclose(raw, earlier["closed_form"], rel_tol=1e-4):
                raise SystemExit(f"{label} {row['kind']} {row['share']}%: not in {args.retrained} with closed form "
                                 f"{raw:+.6f} (another seed, training or machine?)")
            actual = float(earlier["actual"])
        elif not args.model:
            index = analysis.groups.index(label)
            actual = float(masked_retrain_bias(model, removed=removed, groups=analysis.groups)[index] - base[index])
        out = {"occupation": label, "name": row.get("name", label), "men": row["men"], "women": row["women"],
               "kind": row["kind"], "share": row["share"], "k": int(row["k"]), "closed_form": raw,
               "closed_form_run": row["closed_form"], "in_audit": bool(row.get("in_audit", False)),
               **predictions(predictor, label, removed, max_degree=args.max_degree, min_share=args.min_share,
                             read_persons=args.read_persons, read_only=args.read_only, step_only=args.step_only,
                             start_scale=start_scale),
               "actual": actual}
        append_row(out, args.out)
        if args.step_only:
            print(f"{out['name']} {out['kind']} {out['share']}%: newton {out['newton']:+.3f} actual {actual:+.3f} "
                  f"({out['newton_s']:.1f} s)", flush=True)
            continue
        print(f"{out['name']} {out['kind']} {out['share']}%: newton {out['newton']:+.3f} refit {out['refit']:+.3f} "
              f"newton+refit {out['newton_refit']:+.3f} read rows too {out['newton_refit_read']:+.3f} "
              f"actual {actual:+.3f} ({out['newton_refit_s']:.1f} s, {out['newton_refit_read_s']:.1f} s)", flush=True)
    _summarize(args)


if __name__ == "__main__":
    main()
