"""Default-model sweep (issue 24, part 2): link prediction and exact influence for each training config.

For a graph and a list of training configs (each the data set's default TrainConfig with some fields changed:
``negatives`` (K frozen negatives per triple), ``margin``, ``l2``, ``dim``, ``epochs``, ``lr``, or any other
TrainConfig field by name), each config is

1. trained (or loaded from ``--store``, where a rerun finds it by its fingerprint), after a printed time estimate
   of what the run will still do (:func:`pending_retrains`: no training for a stored model, no retrain for a row
   already in ``--runs``);
2. evaluated: filtered link prediction on the test split
   (:func:`kgbias_core.evaluation.link_prediction.link_prediction`, both sides where that function takes
   ``side="both"``, else tails; the ``lp_side`` column says which);
3. checked as ``experiments/influence_vs_retraining/validate_influence.py`` checks a model: on 3 occupations,
   top / bottom / random removal sets at 2, 8 and 32% of the triples that move the occupation's B_gr (chosen by
   the closed form), each retrained masked from the seed (METHODS §2; Du §4.2); the predicted change by the
   closed form (Du Eq. 3, METHODS §4) and by the exact damped solve (CG over the full Hessian, lambda from the
   spectrum: :func:`kgbias_core.influence.prediction.spectral_damping`) against the retrained change. Pearson r
   of each, and the random-removal noise max |Delta B_gr| over the random sets.

    nice python experiments/default_models/sweep.py --dataset synthetic --synthetic tests \
        --runs experiments/default_models/results/synthetic_sweep.csv \
        --config negatives=1 --config negatives=4 --config negatives=4,l2=5 [--occupations A B C] \
        [--shares 2,8,32] [--store /tmp/kgbias-sweep] [--data-dir ../shared/data] [--threads 1] [--device cpu] \
        [--no-exact] [--kinds random,top,bottom] [--sizes-from OTHER.csv] [--estimate-only] [--summarize-only]

``--kinds`` retrains only those removal sets, in that order: ``random`` first measures the noise bar where a slow
shard (FB13 on a CPU: 15-25 minutes a retrain) will not finish all six sets.

``--sizes-from OTHER.csv`` gives each set the size k of OTHER's row of the same occupation, kind and share (another
config's check, one config's rows), instead of that share of this model's moving triples, and the rows keep OTHER's
share as the label of where the size came from. A random set of k is seeded by k alone over the same training
triples, so both models' random sets remove the very same triples: FB13's one-negative default moves few triples
and its own 32% random sets stay small, where eight negatives' remove 14,514-25,205; this retrains the one-negative
model at eight negatives' sizes (the like-for-like noise of docs/results/default_models.md). Write its rows to their
own ``--runs``.

``--stored-base`` takes a new occupation's base from the stored model instead of a new unmasked retrain, and only
where this config's retrained base rows show the retrain reproduces the stored model (drift exactly 0 on each): on a
2-core CPU that retrain costs 30 minutes on FB15k-237 with 32 negatives. Its base rows say so with a drift of NaN
(not retrained) where a retrained base row has a number.

``--shard I/N`` checks only every N-th occupation from the I-th, so N processes share one GPU: each appends to its
own ``--runs`` (and retrains the unmasked base itself); concatenate them, with the first's RUNS_models.csv, and
``--summarize-only``. ``experiments/gpu/objective_influence.sh`` does that on a device.

Files (resumable: every row is appended when it is done, and a rerun skips the rows already there):
- ``--runs`` (RUNS.csv): one row per masked retrain: config hash, occupation, kind, share, k, predicted change
  by the closed form and by the exact solve, retrained change (kind ``base``: the unmasked retrain, its B_gr
  and its distance from the stored model's);
- RUNS_models.csv: one row per config: its settings, fingerprint, training seconds, final loss, link prediction;
- RUNS_summary.csv (rewritten at the end): per config the link prediction beside the smallest r (closed form,
  exact) over the occupations with at least 3 sets (``r_occupations``) and the largest noise over all occupations
  (an occupation checked with its random sets only counts for the noise).
"""

from __future__ import annotations

import argparse
import inspect
import math
import os
import sys
import time
from dataclasses import fields, replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.commands.common import append_row, shard
from kgbias_core.data.datasets import load_dataset
from kgbias_core.data.graph import KnowledgeGraph
from kgbias_core.data.synthetic import SyntheticConfig
from kgbias_core.device import resolve_device
from kgbias_core.embeddings.config import TrainConfig, default_train_config
from kgbias_core.embeddings.objective import pseudo_huber_curvature
from kgbias_core.embeddings.store import config_fingerprint, is_model_dir, load_model, save_model
from kgbias_core.embeddings.training import train_model
from kgbias_core.embeddings.training_cost import DISTANCE_FACTORS, estimated_seconds
from kgbias_core.evaluation.link_prediction import link_prediction
from kgbias_core.influence.closed_form import InfluenceContext, triple_influence
from kgbias_core.influence.iterative import conjugate_gradient_solve, group_bias_rhs, influence_from_solution
from kgbias_core.influence.prediction import spectral_damping
from kgbias_core.influence.retraining_check import REMOVAL_KINDS, masked_retrain_bias, removal_set

#: The occupations of the feasibility study (METHODS §2) and of FB13's validation (docs/results).
DEFAULT_OCCUPATIONS = {
    "fb15k237": ("/m/02hrh1q", "/m/0d1pc", "/m/0dxtg"),  # Actor, Model, Screenwriter
    "fb13": ("actor", "politician", "writer"),
}
#: ``--synthetic``: the synthetic data set's default graph, or the tiny graph of tests/conftest.py (TINY_GRAPH).
SYNTHETIC_GRAPHS = {"default": SyntheticConfig(), "tests": SyntheticConfig(n_persons=600, seed=7,
                                                                             other_gender_share=0.02)}
#: Short names a --config may use for TrainConfig fields.
ALIASES = {"negatives": "negatives_per_triple", "k": "negatives_per_triple"}
#: Columns of RUNS_models.csv that hold the link prediction.
LP_COLUMNS = ("n", "mr", "mrr", "hits@1", "hits@3", "hits@10")


def parse_config(text: str, base: TrainConfig) -> TrainConfig:
    """``negatives=4,l2=10``: ``base`` with those fields, each of its field's type; anything else a SystemExit."""
    kinds = {f.name: type(getattr(base, f.name)) for f in fields(TrainConfig)}
    kinds["damping"] = float
    changes = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, _, value = part.partition("=")
        key = ALIASES.get(key.strip(), key.strip())
        if key not in kinds or not value:
            raise SystemExit(f"error: --config {text!r}: {part!r} is not FIELD=VALUE of a TrainConfig field")
        try:
            changes[key] = kinds[key](value) if kinds[key] is not int else int(value)
        except ValueError:
            raise SystemExit(f"error: --config {text!r}: {value!r} is not a {kinds[key].__name__}") from None
    return replace(base, **changes)


def fingerprint(graph: KnowledgeGraph, config: TrainConfig) -> str:
    """The model's config hash (:func:`kgbias_core.embeddings.store.config_fingerprint`) before it is trained."""
    return config_fingerprint({"dataset": graph.name, "data_hash": graph.data_hash, "edit": None,
                               **config.to_dict()})["config_hash"]


def removal_shares(shares: str) -> list[int]:
    return [int(s) for s in shares.split(",")]


def removal_kinds(text: str) -> tuple[str, ...]:
    """``random,top``: those of :data:`REMOVAL_KINDS`, in that order; anything else an argparse error."""
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    unknown = [k for k in kinds if k not in REMOVAL_KINDS]
    if not kinds or unknown or len(set(kinds)) != len(kinds):
        raise argparse.ArgumentTypeError(f"removal kinds are {', '.join(REMOVAL_KINDS)} (each once), not {text!r}")
    return kinds


def sizes_from(path: Path | None) -> dict[tuple[str, str, int], int] | None:
    """``--sizes-from``: (occupation, kind, share) -> k of another check's rows; None without the flag. Bad input
    (no such file, no sets, rows of several configs) is one line on stderr and exit 2."""
    if path is None:
        return None
    rows = read(path)
    rows = None if rows is None else rows[rows["kind"] != "base"]
    if rows is None or rows.empty or rows["config_hash"].nunique() != 1:
        why = ("no such file" if rows is None else "no removal sets" if rows.empty
               else f"rows of {rows['config_hash'].nunique()} configs (give one config's)")
        print(f"error: --sizes-from {path}: {why}", file=sys.stderr)
        raise SystemExit(2)
    return {(row.occupation, row.kind, int(row.share)): int(row.k) for row in rows.itertuples()}


def require_sizes(sizes: dict[tuple[str, str, int], int] | None, sets: list[tuple[str, str, int]]) -> None:
    """Refuse (one line on stderr, exit 2) where ``--sizes-from`` has no size for one of ``sets`` (occupation,
    kind, share); nothing without the flag."""
    unsized = [f"{o} {kind} {s}%" for o, kind, s in sets if sizes is not None and (o, kind, s) not in sizes]
    if unsized:
        print(f"error: --sizes-from has no row for {', '.join(unsized)}", file=sys.stderr)
        raise SystemExit(2)


#: Seconds per (extra negative row x dimension) of one step on a quiet 2-core CPU, from whole FB15k-237 trainings
#: with K = 8 (batch 4096, dim 100, 80 epochs, K = 1's part taken off): 1.0e-8 at 2 threads (AMD EPYC, 189-193 s,
#: nothing beside it), 1.5e-8 at 1 thread (Intel Xeon, 322 s beside a 1-thread job); the estimate takes the
#: 1-thread figure. Steps timed at load average 6-7 (other jobs sharing the cores) gave 6.6-7.3e-8: on a loaded
#: machine expect four to five times the estimate.
#: K = 1's step is :func:`estimated_seconds`'s; each further negative of a batch adds this per row and dimension.
SECONDS_PER_NEGATIVE_ROW_DIM = 1.5e-8


def estimate(graph: KnowledgeGraph, config: TrainConfig, *, retrains: int) -> tuple[float, float]:
    """(training, retrains) seconds on a 2-core CPU: :func:`estimated_seconds` (K = 1) plus, per step, (K - 1) x
    batch x dim x :data:`SECONDS_PER_NEGATIVE_ROW_DIM` for the further negatives, both times the distance's
    :data:`~kgbias_core.embeddings.training_cost.DISTANCE_FACTORS`. A guide, not a measurement;
    the printed training time of each config then gives its retrains' time."""
    factory = graph.training
    one = estimated_seconds(n_triples=factory.num_triples, n_entities=factory.num_entities,
                            n_relations=factory.num_relations, dim=config.dim, batch_size=config.batch_size,
                            epochs=config.epochs, distance=config.distance)
    steps = math.ceil(factory.num_triples / config.batch_size) * config.epochs
    rows = min(config.batch_size, factory.num_triples) * (config.negatives_per_triple - 1)
    factor = DISTANCE_FACTORS.get(config.distance, 1.0)  # pseudo-Huber's distance costs more per negative too
    train = one + factor * steps * rows * config.dim * SECONDS_PER_NEGATIVE_ROW_DIM
    return train, train * retrains


def done_keys(done: pd.DataFrame | None) -> set[tuple[str, str, str, int]]:
    """(config hash, occupation, kind, share) of every row RUNS.csv holds: what a rerun does not retrain."""
    if done is None:
        return set()
    return set(zip(done["config_hash"], done["occupation"], done["kind"], done["share"], strict=True))


def pending_retrains(done: pd.DataFrame | None, config_hash: str, occupations: list[str] | None, *,
                     n_occupations: int, kinds: tuple[str, ...], shares: list[int], stored_base: bool) -> int:
    """The masked retrains a run still has to do for one config: the sets of ``occupations`` x ``kinds`` x
    ``shares`` that RUNS.csv (``done``) lacks, plus the unmasked base retrain where one of their occupations has no
    base row and ``stored_base`` (``--stored-base``) is off, as :func:`influence_check` decides. Where the model
    chooses the occupations (None), every set of ``n_occupations`` counts, and the base."""
    if occupations is None:
        return 1 + n_occupations * len(kinds) * len(shares)
    seen = done_keys(done)
    needed = [o for o in occupations for kind in kinds for s in shares if (config_hash, o, kind, s) not in seen]
    if not needed:
        return 0
    base_missing = any((config_hash, o, "base", 0) not in seen for o in needed)
    return len(needed) + int(base_missing and not stored_base)


def link_prediction_both(model) -> tuple[str, dict[str, float]]:
    """Filtered link prediction on the test split, both sides where link_prediction offers ``side``, else tails."""
    if "side" in inspect.signature(link_prediction).parameters:
        return "both", link_prediction(model, side="both")
    return "tail", link_prediction(model)


def chosen_occupations(analysis: ModelAnalysis, dataset: str, given: list[str] | None) -> list[str]:
    """The given labels; else the data set's study occupations; else the 3 with the most persons of the rarer
    gender (with a defined B_gr)."""
    if given:
        return given
    if dataset in DEFAULT_OCCUPATIONS:
        return list(DEFAULT_OCCUPATIONS[dataset])
    groups = analysis.groups
    smaller = torch.minimum(groups.n_male, groups.n_female)
    order = sorted(range(len(groups.labels)), key=lambda i: (-int(smaller[i]), groups.labels[i]))
    return [groups.labels[i] for i in order[:3]]


def append(path: Path, row: dict) -> None:
    append_row(row, path)


def read(path: Path) -> pd.DataFrame | None:
    return pd.read_csv(path) if path.exists() else None


def store_name(graph: KnowledgeGraph, config_hash: str) -> str:
    """The folder name of a config's model in ``--store``, where a rerun (and the estimate) finds it."""
    return f"{graph.name}-sweep-{config_hash[:12]}"


def trained_model(graph: KnowledgeGraph, config: TrainConfig, *, store: Path, name: str, device: torch.device):
    """The config's model from ``store`` where a run saved it, else trained now and saved there."""
    path = store / name
    if is_model_dir(path):
        print(f"  loaded {path} (trained before)", flush=True)
        model = load_model(path, device=device)
        return model, float(model.info.get("train_seconds") or math.nan)  # the time it took then
    started = time.perf_counter()
    model = train_model(graph, config, name=name, device=device)
    seconds = time.perf_counter() - started
    save_model(model, store)
    return model, seconds


def curvature_diagonal(context: InfluenceContext, damping: float) -> torch.Tensor:
    """``--alpha curvature``: Du's diagonal with the pseudo_huber distance's own curvature, per coordinate. [E, d].

    Du's alpha_e = max(N_e - 2|G|/|E|, 0) + lambda is the expected diagonal of the squared-L2 Hessian (d^2 psi = 2 I
    a slot, halved with the rest of Eq. 3). pseudo_huber's d^2 psi is diag(delta^2 / (u_i^2 + delta^2)^1.5): stiff
    (1 / delta) on the coordinates a triple fits to within delta, soft on the others. Here alpha is the margin
    part's own Hessian diagonal, with the same halving:
    alpha_{e,i} = max((1 / 2K) [sum_{active (z, j), e in z} psi''_i(u_z) - sum_{active (z, j), e in z'_j}
    psi''_i(u_{z'_j})], 0) + lambda.
    """
    n_active = context.active.shape[0]
    everything = torch.arange(n_active, device=context.device)
    positive = pseudo_huber_curvature(context.residuals_of(everything, torch.zeros(n_active, dtype=torch.bool)))
    negative = pseudo_huber_curvature(context.residuals_of(everything, torch.ones(n_active, dtype=torch.bool)))
    half = 0.5 / context.n_negatives
    total = torch.zeros_like(context.entity_embeddings)
    slots = context.slots
    ends = ((slots[:, 0] != slots[:, 1]).unsqueeze(-1), (slots[:, 2] != slots[:, 3]).unsqueeze(-1))  # h = t: u lacks e
    for column, curvature, sign in ((0, positive, 1.0), (1, positive, 1.0), (2, negative, -1.0), (3, negative, -1.0)):
        total.index_add_(0, slots[:, column], sign * half * curvature * ends[column // 2])
    return total.clamp_min(0.0) + damping


def closed_form_of(analysis: ModelAnalysis, alpha: str):
    """occupation -> its triples' closed-form changes [|G|]: Du's (``du``, the product's) or ``curvature``'s."""
    if alpha == "du":
        return analysis.influence
    if analysis.model.config.distance != "pseudo_huber":
        raise SystemExit(f"error: --alpha curvature is for pseudo_huber models, not {analysis.model.config.distance}")
    context = replace(analysis.context, alpha=curvature_diagonal(analysis.context, analysis.damping))
    return lambda occupation: triple_influence(context, analysis.groups.index(occupation))


def base_row(config_hash: str, occupation: str, actual: float, *, drift: float) -> dict:
    """RUNS.csv's base row of one occupation: the unedited B_gr and its distance from the stored model's (NaN: read
    from the stored model, ``--stored-base``)."""
    return {"config_hash": config_hash, "occupation": occupation, "kind": "base", "share": 0, "k": 0,
            "closed_form": math.nan, "exact": math.nan, "actual": actual, "drift": drift, "retrain_s": math.nan}


def influence_check(model, analysis: ModelAnalysis, *, config_hash: str, occupations: list[str], shares: list[int],
                    runs: Path, exact: bool, alpha: str = "du", kinds: tuple[str, ...] = REMOVAL_KINDS,
                    sizes: dict[tuple[str, str, int], int] | None = None, stored_base: bool = False) -> None:
    """Append the missing rows of RUNS.csv for one model (module docstring, step 3), the sets chosen and predicted
    by the closed form of ``alpha`` (:func:`closed_form_of`); of ``kinds`` only, in their order (``--kinds
    random`` measures the random-removal noise first, where a shard will not finish); of the sizes in ``sizes``
    (:func:`sizes_from`) where given, checked before any retrain; ``stored_base``: the module docstring's
    ``--stored-base``."""
    closed_form = closed_form_of(analysis, alpha)
    done = read(runs)
    seen = done_keys(done)
    needed = [(o, kind, s) for o in occupations for kind in kinds for s in shares
              if (config_hash, o, kind, s) not in seen]
    if not needed:
        return
    require_sizes(sizes, needed)  # occupations chosen by the model are known only here
    groups = analysis.groups
    # A resumed run reads the unmasked retrain's B_gr back from its base rows: the retrain is deterministic (drift 0
    # in every run so far), and on FB13 it costs 15-26 minutes a resume.
    recorded = {} if done is None else {
        row.occupation: row.actual for row in done.itertuples()
        if row.config_hash == config_hash and row.kind == "base"}
    if all(o in recorded for o, _, _ in needed):
        base_of = recorded.__getitem__
        print("  unmasked retrain: its B_gr read back from the base rows", flush=True)
    elif stored_base:
        drifts = [] if done is None else [row.drift for row in done.itertuples()  # NaN: a stored base, not retrained
                                          if row.config_hash == config_hash and row.kind == "base"
                                          and not math.isnan(row.drift)]
        if not drifts or any(d != 0.0 for d in drifts):
            raise SystemExit("error: --stored-base needs this config's retrained base rows, each with drift 0; "
                             f"found {drifts or 'none'}")
        stored = analysis.group_bias()
        for occupation in sorted({o for o, _, _ in needed} - set(recorded)):
            recorded[occupation] = float(stored[groups.index(occupation)])
            append(runs, base_row(config_hash, occupation, recorded[occupation], drift=math.nan))
        base_of = recorded.__getitem__
        print(f"  unmasked retrain skipped: the stored model's B_gr ({len(drifts)} retrained base rows at drift 0)",
              flush=True)
    else:
        started = time.perf_counter()
        base = masked_retrain_bias(model, removed=None, groups=groups)
        print(f"  unmasked retrain {time.perf_counter() - started:.1f} s", flush=True)
        stored = analysis.group_bias()
        for occupation in occupations:
            if (config_hash, occupation, "base", 0) not in seen:
                index = groups.index(occupation)
                append(runs, base_row(config_hash, occupation, float(base[index]),
                                      drift=float(base[index] - stored[index])))

        def base_of(occupation: str) -> float:
            return float(base[groups.index(occupation)])
    damping = spectral_damping(model) if exact else math.nan
    if exact:
        print(f"  exact solve: lambda = {damping:.3f} (spectral)", flush=True)
    for occupation in occupations:
        index = groups.index(occupation)
        mine = [(kind, s) for o, kind, s in needed if o == occupation]
        if not mine:
            continue
        closed = closed_form(occupation)
        solved = None
        if exact:
            solution = conjugate_gradient_solve(model, group_bias_rhs(analysis.context, index), damping=damping,
                                                iterations=200)
            solved = influence_from_solution(analysis.context, model, solution)
        moving = int((closed != 0).sum())
        for kind, share in mine:
            k = max(1, moving * share // 100) if sizes is None else sizes[(occupation, kind, share)]
            removed = removal_set(closed, kind=kind, k=k)
            t = time.perf_counter()
            actual = float(masked_retrain_bias(model, removed=removed, groups=groups)[index]) - base_of(occupation)
            row = {"config_hash": config_hash, "occupation": occupation, "kind": kind, "share": share, "k": k,
                   "closed_form": float(closed[removed].sum()),
                   "exact": float(solved[removed].sum()) if solved is not None else math.nan,
                   "actual": actual, "drift": math.nan, "retrain_s": time.perf_counter() - t}
            append(runs, row)
            print(f"  {occupation:14s} {kind:6s} {share:2d}% k={k:5d}: closed {row['closed_form']:+.4f} exact "
                  f"{row['exact']:+.4f} actual {actual:+.4f} ({row['retrain_s']:.1f} s)", flush=True)


def _r(x: np.ndarray, y: np.ndarray) -> float:
    ok = ~(np.isnan(x) | np.isnan(y))
    if ok.sum() < 3 or np.ptp(x[ok]) == 0 or np.ptp(y[ok]) == 0:
        return math.nan
    return float(np.corrcoef(x[ok], y[ok])[0, 1])


def summarize(models: pd.DataFrame, runs: pd.DataFrame | None) -> pd.DataFrame:
    """Per config: link prediction, min r (closed form, exact) over the occupations with an r (``r_occupations``) and
    max random-removal noise over all occupations."""
    rows = []
    for _, model in models.iterrows():
        row = {k: model[k] for k in ("config", "config_hash", "lp_side", "mrr", "hits@1", "hits@10", "train_s")}
        mine = None if runs is None else runs[(runs["config_hash"] == model["config_hash"]) & (runs["kind"] != "base")]
        if mine is not None and len(mine):
            per = []
            for _, part in mine.groupby("occupation"):
                random = part[part["kind"] == "random"]
                per.append((_r(part["closed_form"].to_numpy(float), part["actual"].to_numpy(float)),
                            _r(part["exact"].to_numpy(float), part["actual"].to_numpy(float)),
                            float(random["actual"].abs().max()) if len(random) else math.nan, len(part)))
            # An occupation with fewer than 3 sets (its random sets only: the noise) has no r; it counts for the
            # noise, not for r_occupations. pandas skips NaN here, where Python's min() keeps a NaN it meets first.
            per = pd.DataFrame(per, columns=["r_closed", "r_exact", "noise", "sets"])
            row.update(occupations=len(per), sets=int(per["sets"].sum()), r_closed_min=per["r_closed"].min(),
                       r_exact_min=per["r_exact"].min(), noise_max=per["noise"].max(),
                       r_occupations=int(per["r_closed"].notna().sum()))
            base = runs[(runs["config_hash"] == model["config_hash"]) & (runs["kind"] == "base")]
            row["retrain_drift_max"] = float(base["drift"].abs().max()) if len(base) else math.nan
        rows.append(row)
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True, help="fb15k237, fb13, synthetic, or a user graph's path")
    parser.add_argument("--data-dir", default=os.environ.get("KGBIAS_DATA_DIR"))
    parser.add_argument("--synthetic", choices=sorted(SYNTHETIC_GRAPHS), default="default",
                        help="synthetic data set only: the default graph (3000 persons) or the tests' (600 persons)")
    parser.add_argument("--config", action="append", required=True,
                        help="FIELD=VALUE[,FIELD=VALUE...] over the data set's default TrainConfig (repeatable)")
    parser.add_argument("--runs", required=True, type=Path, help="CSV of the retrains (RUNS.csv), appended")
    parser.add_argument("--occupations", nargs="+", help="labels (default: the data set's 3 study occupations)")
    parser.add_argument("--shard", type=shard, default=(0, 1), metavar="I/N",
                        help="check only every N-th of the occupations from the I-th (N processes on one GPU)")
    parser.add_argument("--shares", default="2,8,32", help="removal sizes in %% of the moving triples")
    parser.add_argument("--store", type=Path, default=Path("/tmp/kgbias-sweep-store"), help="where models are kept")
    parser.add_argument("--device", default="cpu", help="cpu, cuda, auto (training, retrains, measures)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--no-exact", action="store_true", help="skip the exact (CG) influence")
    parser.add_argument("--kinds", type=removal_kinds, default=REMOVAL_KINDS, metavar="KIND,...",
                        help="removal sets to retrain, in this order (default: top,bottom,random)")
    parser.add_argument("--sizes-from", type=Path, metavar="OTHER.csv",
                        help="each set's size k from OTHER's row of the same occupation, kind and share (module "
                             "docstring), not the share of this model's moving triples")
    parser.add_argument("--no-influence", action="store_true", help="link prediction only (no retrains)")
    parser.add_argument("--stored-base", action="store_true",
                        help="a new occupation's base from the stored model, where the retrained base rows show "
                             "drift 0 (module docstring), not a new unmasked retrain")
    parser.add_argument("--alpha", choices=("du", "curvature"), default="du",
                        help="the closed form's diagonal: Du's (the product's) or, for pseudo_huber, its own "
                             "curvature's (curvature_diagonal; write its rows to their own --runs)")
    parser.add_argument("--estimate-only", action="store_true", help="print the time estimates and stop")
    parser.add_argument("--summarize-only", action="store_true",
                        help="only write RUNS_summary.csv from RUNS.csv and RUNS_models.csv (no data read)")
    args = parser.parse_args()
    if args.summarize_only:
        _write_summary(args.runs)
        return
    torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    shares = removal_shares(args.shares)
    sizes = sizes_from(args.sizes_from)
    print(f"torch threads {args.threads}, device {device}; load average {os.getloadavg()[0]:.2f} at start",
          flush=True)
    graph = load_dataset(args.dataset, data_dir=args.data_dir, synthetic=SYNTHETIC_GRAPHS[args.synthetic])
    base = default_train_config(graph.name)
    configs = [(text, parse_config(text, base)) for text in args.config]
    named = args.occupations or DEFAULT_OCCUPATIONS.get(graph.name)
    if named:  # before any training: a refused run costs nothing
        require_sizes(sizes, [(o, kind, share) for o in named[args.shard[0]::args.shard[1]] for kind in args.kinds
                              for share in shares])
    n_occupations = len(range(args.shard[0], len(args.occupations) if args.occupations else 3, args.shard[1]))
    print(f"graph {graph.name}: {graph.training.num_triples} training triples, {graph.training.num_entities} "
          f"entities", flush=True)
    # The estimate prices what this run will still do: a stored model is not trained again, and the rows already
    # in RUNS.csv (or a base read back or taken from the stored model) are not retrained again.
    done = read(args.runs)
    total = 0.0
    pending: dict[str, int] = {}
    for text, config in configs:
        config_hash = fingerprint(graph, config)
        retrains = 0 if args.no_influence else pending_retrains(
            done, config_hash, None if not named else list(named[args.shard[0]::args.shard[1]]),
            n_occupations=n_occupations, kinds=args.kinds, shares=shares, stored_base=args.stored_base)
        pending[config_hash] = retrains
        stored = is_model_dir(args.store / store_name(graph, config_hash))
        train, again = estimate(graph, config, retrains=retrains)
        train = 0.0 if stored else train
        total += train + again
        print(f"estimate {text}: training {'0 s (stored)' if stored else f'{train:.0f} s'} + {retrains} retrains "
              f"{again:.0f} s (quiet 2-core CPU: SECONDS_PER_NEGATIVE_ROW_DIM)", flush=True)
    print(f"estimate, all {len(configs)} configs: {total / 3600:.2f} h (before link prediction and exact solves)",
          flush=True)
    if args.estimate_only:
        return
    args.runs.parent.mkdir(parents=True, exist_ok=True)
    models_csv = args.runs.with_name(args.runs.stem + "_models.csv")
    for text, config in configs:
        config_hash = fingerprint(graph, config)
        name = store_name(graph, config_hash)
        print(f"config {text} ({config_hash[:12]})", flush=True)
        done = read(models_csv)
        model, seconds = trained_model(graph, config, store=args.store, name=name, device=device)
        if done is None or config_hash not in set(done["config_hash"]):
            started = time.perf_counter()
            side, metrics = link_prediction_both(model)
            lp_seconds = time.perf_counter() - started
            append(models_csv, {"config": text, "config_hash": config_hash, **config.to_dict(),
                                "damping_used": model.damping, "train_s": seconds,
                                "final_loss": model.info.get("final_loss"), "lp_side": side,
                                **{k: metrics.get(k, math.nan) for k in LP_COLUMNS}, "lp_s": lp_seconds})
            print(f"  trained {seconds:.1f} s; link prediction ({side}): MRR {metrics.get('mrr', math.nan):.4f}, "
                  f"Hits@10 {metrics.get('hits@10', math.nan):.4f} ({lp_seconds:.1f} s)", flush=True)
            if seconds == seconds and pending[config_hash]:  # not NaN
                print(f"  the {pending[config_hash]} retrains at this training's time: about "
                      f"{seconds * pending[config_hash] / 60:.1f} min",
                      flush=True)
        if not args.no_influence:
            analysis = ModelAnalysis(model)
            occupations = chosen_occupations(analysis, graph.name, args.occupations)[args.shard[0]::args.shard[1]]
            influence_check(model, analysis, config_hash=config_hash, occupations=occupations, shares=shares,
                            runs=args.runs, exact=not args.no_exact, alpha=args.alpha, kinds=args.kinds,
                            sizes=sizes, stored_base=args.stored_base)
    _write_summary(args.runs)


def _write_summary(runs: Path) -> None:
    """RUNS_summary.csv from RUNS.csv and RUNS_models.csv (:func:`summarize`), printed too."""
    summary = summarize(read(runs.with_name(runs.stem + "_models.csv")), read(runs))
    summary.to_csv(runs.with_name(runs.stem + "_summary.csv"), index=False)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(summary.to_string(index=False, float_format=lambda v: f"{v:.4f}"))


if __name__ == "__main__":
    main()
