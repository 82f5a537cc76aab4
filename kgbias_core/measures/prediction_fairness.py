"""Schwertmann et al.'s fairness of link predictions (METHODS §8).

Schwertmann, Kraft & Usbeck (2023), "Model-agnostic bias measurement in link prediction",
§3.2 (top-1 tail = predicted class), §3.3 (Eq. 1-3: DPG, PPG, EOG), §3.4 (Eq. 4-5: three levels
of detail), §4.3 (filtered MRR / Hits@k) and Table 5 (selection rate minus data share).
The model is only asked for scores: any PyKEEN model with ``score_t`` works.
"""

import warnings
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from fairlearn.metrics import MetricFrame
from pykeen.models import Model
from pykeen.nn.modules import TransEInteraction

from kgbias_core.errors import (
    FAIRNESS_BAD_CONFIDENCE,
    FAIRNESS_BAD_GROUPS,
    FAIRNESS_NO_FACTS,
    FAIRNESS_SHAPE_MISMATCH,
    RANKS_EMPTY,
    TRIPLES_BAD_SHAPE,
    MeasureError,
)
from kgbias_core.types import FloatTensor, LongTensor

__all__ = [
    "FairnessReport",
    "NOT_OCCUPATION",
    "OTHER",
    "fairness_report",
    "filtered_ranks",
    "predict_top1_tails",
    "rank_metrics",
]

#: Class of every occupation below the minimum count (Schwertmann §3.5).
OTHER = -1
#: Predicted label of a top-1 tail that is not an occupation at all; never a true class.
NOT_OCCUPATION = -2

METRICS = ("selection_rate", "precision", "recall")
GAPS = {"selection_rate": "DPG", "precision": "PPG", "recall": "EOG"}


def _check_triples(triples: LongTensor, what: str) -> None:
    if triples.ndim != 2 or triples.shape[1] != 3:
        raise MeasureError(TRIPLES_BAD_SHAPE.format(what=what, shape=tuple(triples.shape)))


def tail_scores(model: Model, hr: LongTensor) -> FloatTensor:
    """Scores of (h, r, t) for every entity t. Shapes: hr [b, 2] -> [b, E].

    For TransE with squared L2 (power_norm, p = 2), ||h + r - t||^2 = ||q||^2 - 2 q.t + ||t||^2 with
    q = h + r turns the [b, E, d] broadcast of ``score_t`` into one [b, d] x [d, E] matmul — the
    difference between minutes and seconds on a CPU. Every other model uses its own ``score_t``.
    """
    interaction = getattr(model, "interaction", None)
    if (
        isinstance(interaction, TransEInteraction)
        and interaction.p == 2
        and interaction.power_norm
        and len(model.entity_representations) == 1
        and len(model.relation_representations) == 1
    ):
        entities = model.entity_representations[0](indices=None)  # [E, d]
        q = entities[hr[:, 0]] + model.relation_representations[0](indices=hr[:, 1])  # [b, d]
        return -(q.pow(2).sum(-1, keepdim=True) - 2 * q @ entities.T + entities.pow(2).sum(-1))
    return model.score_t(hr)


def predict_top1_tails(model: Model, *, heads: LongTensor, relation: int, batch_size: int = 64) -> LongTensor:
    """The top-1 tail of (h, relation, ?) over ALL entities: the predicted label (Schwertmann §3.2).

    Shapes: heads [n] -> [n] entity ids (on the model's device). Ties go to the smaller entity
    id (``argmax`` returns the first maximum). Scored in batches of ``batch_size`` heads
    ([batch_size, E] scores at a time; small on purpose: PyKEEN's TransE materialises
    [batch_size, E, d], which is slower, not faster, in large batches on CPU).
    """
    heads = torch.as_tensor(heads, dtype=torch.long, device=model.device).reshape(-1)
    out = torch.empty_like(heads)
    with torch.no_grad():
        for start in range(0, heads.numel(), batch_size):
            chunk = heads[start : start + batch_size]
            hr = torch.stack([chunk, torch.full_like(chunk, relation)], dim=1)  # [b, 2]
            out[start : start + batch_size] = tail_scores(model, hr).argmax(dim=1)  # [b, E]
    return out


def filtered_ranks(model: Model, *, triples: LongTensor, known: LongTensor, batch_size: int = 64) -> FloatTensor:
    """Filtered rank of each true tail among all entities (Bordes et al. 2013; Schwertmann §4.3).

    For (h, r, t): every other tail t' with (h, r, t') in ``known`` is removed before ranking
    (pass train + valid + test as ``known``; t itself may be in it). Realistic rank for ties,
    as PyKEEN's default: rank = 1 + #{score > s_t} + #{score == s_t, other entity} / 2.
    Shapes: triples [n, 3], known [m, 3] -> [n] float ranks >= 1 (1 = best). Tail side only.
    """
    triples = torch.as_tensor(triples, dtype=torch.long, device=model.device)
    known = torch.as_tensor(known, dtype=torch.long, device=model.device)
    _check_triples(triples, "triples")
    _check_triples(known, "known")
    n_relations = max(model.num_relations, int(known[:, 1].max()) + 1 if known.numel() else 0)
    # Sorted (h, r) keys let each batch find its known tails by binary search, without a
    # Python dict over all known triples.
    known_keys = known[:, 0] * n_relations + known[:, 1]
    order = torch.argsort(known_keys)
    sorted_keys, sorted_tails = known_keys[order], known[order, 2]
    ranks = torch.empty(triples.shape[0], dtype=torch.float64, device=model.device)
    with torch.no_grad():
        for start in range(0, triples.shape[0], batch_size):
            batch = triples[start : start + batch_size]  # [b, 3]
            scores = tail_scores(model, batch[:, :2]).to(torch.float64)  # [b, E]
            rows = torch.arange(batch.shape[0], device=model.device)
            true_scores = scores[rows, batch[:, 2]].unsqueeze(1)  # [b, 1]
            keys = batch[:, 0] * n_relations + batch[:, 1]
            left = torch.searchsorted(sorted_keys, keys, right=False)
            counts = torch.searchsorted(sorted_keys, keys, right=True) - left  # [b]
            hit_rows = torch.repeat_interleave(rows, counts)  # [k]
            starts = torch.repeat_interleave(left - (torch.cumsum(counts, 0) - counts), counts)
            hit_tails = sorted_tails[starts + torch.arange(hit_rows.numel(), device=model.device)]
            other = hit_tails != batch[hit_rows, 2]
            # NaN compares False with everything: filtered entities are neither better nor tied
            scores[hit_rows[other], hit_tails[other]] = float("nan")
            better = (scores > true_scores).sum(dim=1)
            tied = (scores == true_scores).sum(dim=1) - 1  # minus the true tail itself
            ranks[start : start + batch.shape[0]] = 1.0 + better + 0.5 * tied
    return ranks.to(torch.float32)


def rank_metrics(ranks: FloatTensor | np.ndarray | Sequence[float]) -> dict[str, float]:
    """MR, MRR and Hits@1/3/10 of (filtered) ranks [n]; keys ``n``, ``mr``, ``mrr``, ``hits@k``."""
    ranks = np.asarray(torch.as_tensor(ranks).detach().cpu(), dtype=np.float64).reshape(-1)
    if ranks.size == 0:
        raise MeasureError(RANKS_EMPTY)
    metrics = {"n": float(ranks.size), "mr": float(ranks.mean()), "mrr": float((1.0 / ranks).mean())}
    for k in (1, 3, 10):
        metrics[f"hits@{k}"] = float((ranks <= k).mean())
    return metrics


@dataclass(frozen=True)
class FairnessReport:
    """Schwertmann's fairness of occupation predictions at three levels, with bootstrap CIs.

    Gaps (DPG, PPG, EOG) are |metric(groups[0]) - metric(groups[1])|, unsigned. Undefined
    metrics are NaN with a False ``*_defined`` flag, never 0.
    """

    classes: tuple[int, ...]  # occupation ids with >= min_count facts (most frequent first), OTHER last
    groups: tuple[str, str]  # the two gender labels compared, e.g. ("male", "female")
    n_facts: int  # facts used: gender is one of ``groups``
    n_facts_by_group: dict[str, int]  # facts used per group
    n_dropped_gender: int  # facts left out because their gender is not one of ``groups``
    n_not_occupation: int  # used facts whose top-1 prediction is not an occupation at all
    n_not_occupation_by_group: dict[str, int]  # the same per group
    by_class_group: pd.DataFrame  # level (iii): index (class, group); see fairness_report
    by_class: pd.DataFrame  # per-class gaps: index class; DPG, PPG, EOG and *_defined
    by_group: pd.DataFrame  # level (ii): index group; macro means of the metrics
    by_model: pd.Series  # level (i): DPG, PPG, EOG macro means over classes (+ n_classes_*)
    confidence_intervals: pd.DataFrame  # index (level, measure); estimate, low, high, n_valid
    n_bootstrap: int  # bootstrap replicates drawn
    confidence: float  # e.g. 0.95 for a 95 % percentile interval
    seed: int  # seed of the numpy Generator that resampled the facts


def _class_labels(
    labels: np.ndarray, *, classes: np.ndarray, occupations: np.ndarray, mark_not_occupation: bool
) -> np.ndarray:
    out = np.where(np.isin(labels, classes), labels, OTHER)
    if mark_not_occupation:
        out = np.where(np.isin(labels, occupations), out, NOT_OCCUPATION)
    return out


def _select_classes(y_true: np.ndarray, min_count: int) -> np.ndarray:
    values, counts = np.unique(y_true, return_counts=True)
    kept = counts >= min_count
    order = np.lexsort((values[kept], -counts[kept]))
    return np.concatenate([values[kept][order], [OTHER]]).astype(np.int64)


def _class_indices(
    *, true_class: np.ndarray, pred_class: np.ndarray, classes: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Column index of each fact's true and predicted class; -1 for NOT_OCCUPATION predictions."""
    order = np.argsort(classes)
    true_index = order[np.searchsorted(classes[order], true_class)]
    position = np.searchsorted(classes[order], pred_class).clip(max=len(classes) - 1)
    pred_index = np.where(classes[order][position] == pred_class, order[position], -1)
    return true_index.astype(np.int64), pred_index.astype(np.int64)


def _counts(
    *,
    true_index: np.ndarray,
    pred_index: np.ndarray,
    group: np.ndarray,
    n_classes: int,
    weights: np.ndarray | None,
) -> dict[str, np.ndarray]:
    """(Weighted) counts [2, C] per group and class: predicted, true, true positives; facts [2]."""
    is_pred = pred_index >= 0  # NOT_OCCUPATION is no class

    def count(mask: np.ndarray, index: np.ndarray) -> np.ndarray:
        codes = group[mask] * n_classes + index[mask]
        w = None if weights is None else weights[mask]
        return np.bincount(codes, weights=w, minlength=2 * n_classes).reshape(2, n_classes)

    return {
        "facts": np.bincount(group, weights=weights, minlength=2).astype(np.float64),
        "predicted": count(is_pred, pred_index),
        "true": count(np.ones_like(is_pred), true_index),
        "tp": count(is_pred & (pred_index == true_index), true_index),
    }


def _metrics_from_counts(counts: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Selection rate, precision, recall, data share [2, C]; NaN where the denominator is 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        facts = counts["facts"][:, None]
        return {
            "selection_rate": np.where(facts > 0, counts["predicted"] / facts, np.nan),
            "precision": np.where(counts["predicted"] > 0, counts["tp"] / counts["predicted"], np.nan),
            "recall": np.where(counts["true"] > 0, counts["tp"] / counts["true"], np.nan),
            "data_share": np.where(facts > 0, counts["true"] / facts, np.nan),
        }


def _nanmean(values: np.ndarray, axis: int) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slice -> NaN, on purpose
        return np.nanmean(values, axis=axis)


def _summaries(metrics: dict[str, np.ndarray]) -> dict[tuple[str, str], float]:
    """Level (i) gaps and level (ii) macro means of one set of [2, C] metrics."""
    out: dict[tuple[str, str], float] = {}
    for metric, gap in GAPS.items():
        out[("model", gap)] = float(_nanmean(np.abs(metrics[metric][0] - metrics[metric][1]), axis=0))
    return out


def _metric_frame(*, y_true: np.ndarray, y_pred: np.ndarray, gender: np.ndarray, classes: np.ndarray) -> pd.DataFrame:
    """Per group x class selection rate, precision, recall via fairlearn's MetricFrame."""

    def selection_rate(c: int):
        return lambda t, p: float(np.mean(np.asarray(p) == c)) if len(p) else np.nan

    def precision(c: int):
        def metric(t: np.ndarray, p: np.ndarray) -> float:
            # sklearn's precision_score would give 0 where nothing is predicted: undefined is NaN
            predicted = np.asarray(p) == c
            return float(np.mean(np.asarray(t)[predicted] == c)) if predicted.any() else np.nan

        return metric

    def recall(c: int):
        def metric(t: np.ndarray, p: np.ndarray) -> float:
            actual = np.asarray(t) == c
            return float(np.mean(np.asarray(p)[actual] == c)) if actual.any() else np.nan

        return metric

    makers = {"selection_rate": selection_rate, "precision": precision, "recall": recall}
    metrics = {f"{name}|{c}": maker(c) for name, maker in makers.items() for c in classes.tolist()}
    frame = MetricFrame(metrics=metrics, y_true=y_true, y_pred=y_pred, sensitive_features=gender)
    return frame.by_group


def fairness_report(
    *,
    y_true: np.ndarray | LongTensor,
    y_pred: np.ndarray | LongTensor,
    gender: np.ndarray | Sequence[str],
    occupation_ids: Collection[int] | np.ndarray,
    min_count: int = 100,
    groups: tuple[str, str] = ("male", "female"),
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> FairnessReport:
    """Fairness of top-1 occupation predictions by gender (Schwertmann §3.3-3.4, Eq. 1-5; METHODS §8).

    Per class t and group s (level iii, ``by_class_group``, computed with fairlearn's MetricFrame):
      SelR(s, t) = P(ŷ = t | s),  Prec(s, t) = P(y = t | ŷ = t, s),  Rec(s, t) = P(ŷ = t | y = t, s);
      data_share(s, t) = P(y = t | s);  selection_deviation = SelR - data_share (Table 5:
      positive = t predicted for more persons of s than the data holds).
    Per class (``by_class``): DPG, PPG, EOG = |metric(groups[0]) - metric(groups[1])| (Eq. 1-3).
    Per group (level ii, ``by_group``): macro mean of each metric over classes (Eq. 4).
    Per model (level i, ``by_model``): macro mean of each gap over classes (Eq. 5).
    Macro means skip undefined (NaN) entries; ``n_classes_*`` says how many entered.

    Inputs, aligned [n]: y_true (true occupation of each test fact), y_pred (top-1 tail entity),
    gender (a label per fact's person). Facts whose gender is not in ``groups`` are dropped and
    counted. Classes: occupations with at least ``min_count`` facts among the given y_true
    (counted before dropping genders, as Schwertmann counts the test set), the rest OTHER (-1);
    a predicted occupation outside the classes is OTHER too. A prediction that is not in
    ``occupation_ids`` becomes NOT_OCCUPATION (-2): counted, in every selection-rate
    denominator, never equal to a true class (so it is a wrong prediction).
    Undefined, NaN and flagged ``*_defined = False``: precision of a class a group never got
    predicted; recall of a class absent from a group's truth; everything of an empty group.
    Bootstrap: ``n_bootstrap`` resamples of the facts (with replacement, numpy Generator seeded
    by ``seed``), classes fixed; percentile intervals of the level (i) and (ii) numbers over the
    replicates where they are defined (the bootstrap uses counts, equal to the MetricFrame values
    on the original sample, because a MetricFrame per replicate is ~1000x slower).
    Sign: gaps are unsigned; ``selection_deviation`` is signed.
    """
    if len(groups) != 2 or groups[0] == groups[1]:
        raise MeasureError(FAIRNESS_BAD_GROUPS.format(groups=groups))
    if not 0 < confidence < 1:
        raise MeasureError(FAIRNESS_BAD_CONFIDENCE.format(confidence=confidence))
    y_true = np.asarray(torch.as_tensor(y_true).cpu(), dtype=np.int64).reshape(-1)
    y_pred = np.asarray(torch.as_tensor(y_pred).cpu(), dtype=np.int64).reshape(-1)
    gender = np.asarray(gender, dtype=object).reshape(-1)
    if not len(y_true) == len(y_pred) == len(gender):
        raise MeasureError(FAIRNESS_SHAPE_MISMATCH.format(n_true=len(y_true), n_pred=len(y_pred), n_gender=len(gender)))
    occupations = np.asarray(sorted(int(o) for o in occupation_ids), dtype=np.int64)
    classes = _select_classes(y_true, min_count)
    used = np.isin(gender, list(groups))
    if not used.any():
        raise MeasureError(FAIRNESS_NO_FACTS.format(groups=groups))
    true_class = _class_labels(y_true[used], classes=classes, occupations=occupations, mark_not_occupation=False)
    pred_class = _class_labels(y_pred[used], classes=classes, occupations=occupations, mark_not_occupation=True)
    gender_used = gender[used]
    group_index = np.where(gender_used == groups[0], 0, 1)

    by_group_raw = _metric_frame(y_true=true_class, y_pred=pred_class, gender=gender_used, classes=classes)
    by_group_raw = by_group_raw.reindex(list(groups))  # an empty group becomes a row of NaN
    true_index, pred_index = _class_indices(true_class=true_class, pred_class=pred_class, classes=classes)
    count_args = {"true_index": true_index, "pred_index": pred_index, "group": group_index}
    counts = _counts(**count_args, n_classes=len(classes), weights=None)
    share = _metrics_from_counts(counts)["data_share"]  # [2, C]

    rows = []
    for g, group in enumerate(groups):
        for c, class_id in enumerate(classes.tolist()):
            values = {m: float(by_group_raw.loc[group, f"{m}|{class_id}"]) for m in METRICS}
            rows.append(
                {
                    "class": class_id,
                    "group": group,
                    **values,
                    **{f"{m}_defined": not np.isnan(values[m]) for m in METRICS},
                    "n_true": int(counts["true"][g, c]),
                    "n_predicted": int(counts["predicted"][g, c]),
                    "data_share": float(share[g, c]),
                    "selection_deviation": values["selection_rate"] - float(share[g, c]),
                }
            )
    by_class_group = pd.DataFrame(rows).set_index(["class", "group"])
    metric_array = {
        m: np.stack([by_class_group.xs(group, level="group")[m].to_numpy() for group in groups]) for m in METRICS
    }  # each [2, C]

    by_class = pd.DataFrame(index=pd.Index(classes, name="class"))
    for metric, gap in GAPS.items():
        by_class[gap] = np.abs(metric_array[metric][0] - metric_array[metric][1])
        by_class[f"{gap}_defined"] = ~np.isnan(by_class[gap].to_numpy())

    group_rows = {}
    for g, group in enumerate(groups):
        row: dict[str, float] = {}
        for metric in METRICS:
            row[metric] = float(_nanmean(metric_array[metric][g], axis=0))
            row[f"n_classes_{metric}"] = int((~np.isnan(metric_array[metric][g])).sum())
        deviation = metric_array["selection_rate"][g] - share[g]
        row["selection_deviation"] = float(_nanmean(deviation, axis=0))
        row["abs_selection_deviation"] = float(_nanmean(np.abs(deviation), axis=0))
        group_rows[group] = row
    by_group = pd.DataFrame.from_dict(group_rows, orient="index")
    by_group.index.name = "group"

    model_level: dict[str, float] = {}
    for gap in GAPS.values():
        model_level[gap] = float(_nanmean(by_class[gap].to_numpy(), axis=0))
        model_level[f"n_classes_{gap}"] = int(by_class[f"{gap}_defined"].sum())
    by_model = pd.Series(model_level, name="model")

    estimates = {("model", gap): model_level[gap] for gap in GAPS.values()}
    estimates |= {(group, m): group_rows[group][m] for group in groups for m in METRICS}
    replicates = {key: np.full(n_bootstrap, np.nan) for key in estimates}
    rng = np.random.default_rng(seed)
    n = len(true_class)
    for b in range(n_bootstrap):
        weights = np.bincount(rng.integers(0, n, size=n), minlength=n).astype(np.float64)
        sample = _metrics_from_counts(_counts(**count_args, n_classes=len(classes), weights=weights))
        for key, value in _summaries(sample).items():
            replicates[key][b] = value
        for g, group in enumerate(groups):
            for m in METRICS:
                replicates[(group, m)][b] = _nanmean(sample[m][g], axis=0)
    alpha = (1 - confidence) / 2
    ci_rows = []
    for key, estimate in estimates.items():
        valid = replicates[key][~np.isnan(replicates[key])]
        low, high = np.quantile(valid, [alpha, 1 - alpha]) if valid.size else (np.nan, np.nan)
        ci_rows.append((*key, estimate, float(low), float(high), int(valid.size)))
    confidence_intervals = pd.DataFrame(
        ci_rows, columns=["level", "measure", "estimate", "low", "high", "n_valid"]
    ).set_index(["level", "measure"])

    return FairnessReport(
        classes=tuple(int(c) for c in classes),
        groups=tuple(groups),
        n_facts=int(used.sum()),
        n_facts_by_group={group: int((gender_used == group).sum()) for group in groups},
        n_dropped_gender=int((~used).sum()),
        n_not_occupation=int((pred_class == NOT_OCCUPATION).sum()),
        n_not_occupation_by_group={
            group: int(((pred_class == NOT_OCCUPATION) & (gender_used == group)).sum()) for group in groups
        },
        by_class_group=by_class_group,
        by_class=by_class,
        by_group=by_group,
        by_model=by_model,
        confidence_intervals=confidence_intervals,
        n_bootstrap=n_bootstrap,
        confidence=confidence,
        seed=seed,
    )
