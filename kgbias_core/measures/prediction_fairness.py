"""Schwertmann et al.'s fairness of link predictions (METHODS §8).

Schwertmann, Kraft & Usbeck (2023), "Model-agnostic bias measurement in link prediction",
§3.2 (top-1 tail = predicted class), §3.3 (Eq. 1-3: DPG, PPG, EOG), §3.4 (Eq. 4-5: three levels
of detail) and Table 5 (selection rate minus data share). The rates and gaps are lookups in one
count table (:mod:`kgbias_core.measures.parity`); the top-1 tails and the filtered MRR / Hits@k
(§4.3) come from :mod:`kgbias_core.evaluation.link_prediction`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from kgbias_core.data.graph import Gender, gender_of
from kgbias_core.embeddings.pykeen_bridge import pykeen_model
from kgbias_core.embeddings.store import StoredModel
from kgbias_core.errors import (
    FAIRNESS_BAD_CONFIDENCE,
    FAIRNESS_BAD_GROUPS,
    FAIRNESS_NO_FACTS,
    FAIRNESS_SHAPE_MISMATCH,
    MeasureError,
)
from kgbias_core.evaluation.link_prediction import known_triples, predict_top1_tails
from kgbias_core.measures.parity import (
    ParityCounts,
    data_share,
    demographic_parity_gap,
    equal_opportunity_gap,
    parity_counts,
    precision,
    predictive_parity_gap,
    recall,
    selection_rate,
)
from kgbias_core.types import LongTensor

__all__ = [
    "DEGENERATE_SHARE",
    "FairnessReport",
    "GAPS",
    "GAP_NAMES",
    "METRICS",
    "NOT_OCCUPATION",
    "OTHER",
    "class_group_table",
    "default_min_count",
    "fairness_report",
    "gap_table",
    "group_table",
    "model_fairness",
    "occupation_test_facts",
]

#: Class of every occupation below the minimum count (Schwertmann §3.5).
OTHER = -1
#: Predicted label of a top-1 tail that is not an occupation at all; never a true class.
NOT_OCCUPATION = -2
#: Schwertmann §3.5: an occupation needs 100 test facts for a class of its own, on FB15k-237, whose
#: test split holds 1,311 occupation facts. A smaller test set gets the same share of its facts.
PAPER_MIN_COUNT, PAPER_N_FACTS = 100, 1311
#: A predictor that gives one tail to more than this share of the facts is degenerate: its gaps
#: compare how often two groups get that one answer, not how fairly the model tells occupations apart.
DEGENERATE_SHARE = 0.8

_RATES = {"selection_rate": selection_rate, "precision": precision, "recall": recall}
METRICS = tuple(_RATES)
GAPS = {"selection_rate": "DPG", "precision": "PPG", "recall": "EOG"}
GAP_NAMES = tuple(GAPS.values())
_GAP_FUNCTIONS = {"DPG": demographic_parity_gap, "PPG": predictive_parity_gap, "EOG": equal_opportunity_gap}
#: Gender label of a test fact's person; a person with several gender values is "other", as everywhere.
GENDER_LABELS = {Gender.MALE: "male", Gender.FEMALE: "female", Gender.OTHER: "other"}


@dataclass(frozen=True)
class FairnessReport:
    """Schwertmann's fairness of occupation predictions at three levels, with bootstrap CIs.

    Gaps (DPG, PPG, EOG) are |metric(groups[0]) - metric(groups[1])|, unsigned. Undefined
    metrics are NaN with a False ``*_defined`` flag, never 0.
    """

    classes: tuple[int, ...]  # occupation ids with >= min_count facts (most frequent first), OTHER last
    min_count: int  # test facts an occupation needed for a class of its own
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
    top_prediction: int  # the tail entity predicted top-1 most often over the used facts (any entity)
    top_prediction_share: float  # the share of the used facts that got it

    @property
    def degenerate(self) -> bool:
        """One answer for most facts (> :data:`DEGENERATE_SHARE`): the gaps say little about fairness."""
        return self.top_prediction_share > DEGENERATE_SHARE


def _class_labels(
    labels: np.ndarray, *, classes: np.ndarray, occupations: np.ndarray, mark_not_occupation: bool
) -> np.ndarray:
    out = np.where(np.isin(labels, classes), labels, OTHER)
    if mark_not_occupation:
        out = np.where(np.isin(labels, occupations), out, NOT_OCCUPATION)
    return out


def default_min_count(n_facts: int) -> int:
    """The paper's minimum count scaled to a test set of ``n_facts`` occupation facts.

    100 on FB15k-237; elsewhere the same share of the facts (7.6%), between 2 and 100, so that a
    small graph's occupations are not all pooled into OTHER.
    """
    return max(2, min(PAPER_MIN_COUNT, round(PAPER_MIN_COUNT * n_facts / PAPER_N_FACTS)))


def _select_classes(y_true: np.ndarray, min_count: int) -> np.ndarray:
    values, counts = np.unique(y_true, return_counts=True)
    kept = counts >= min_count
    order = np.lexsort((values[kept], -counts[kept]))
    return np.concatenate([values[kept][order], [OTHER]]).astype(np.int64)


def _nanmean(values: np.ndarray) -> float:
    """np.nanmean, NaN for all-NaN input without its RuntimeWarning (catch_warnings is not thread-safe)."""
    defined = ~np.isnan(values)
    return float(np.nansum(values) / defined.sum()) if defined.any() else np.nan


def _by_class_group(counts: ParityCounts, groups: tuple[str, str]) -> pd.DataFrame:
    """Level (iii): each metric, its definedness, counts and Table 5's deviation per (class, group)."""
    rates = {m: rate(counts) for m, rate in _RATES.items()}  # each [2, C]
    share = data_share(counts)  # [2, C]
    n_classes = len(counts.classes)
    frame = pd.DataFrame(
        {
            "class": np.tile(counts.classes, len(groups)),  # group-major: every class of groups[0] first
            "group": np.repeat(np.asarray(groups, dtype=object), n_classes),
            **{m: rates[m].ravel() for m in METRICS},
            **{f"{m}_defined": ~np.isnan(rates[m].ravel()) for m in METRICS},
            "n_true": counts.true.ravel().astype(np.int64),
            "n_predicted": counts.predicted.ravel().astype(np.int64),
            "data_share": share.ravel(),
            "selection_deviation": (rates["selection_rate"] - share).ravel(),
        }
    )
    return frame.set_index(["class", "group"])


def _by_group(counts: ParityCounts, groups: tuple[str, str]) -> pd.DataFrame:
    """Level (ii): macro mean over classes of each metric per group, and of Table 5's deviation."""
    deviation = selection_rate(counts) - data_share(counts)  # [2, C]
    rows = {}
    for g, group in enumerate(groups):
        row: dict[str, float] = {}
        for metric, rate in _RATES.items():
            values = rate(counts)[g]  # [C]
            row[metric] = _nanmean(values)
            row[f"n_classes_{metric}"] = int((~np.isnan(values)).sum())
        row["selection_deviation"] = _nanmean(deviation[g])
        row["abs_selection_deviation"] = _nanmean(np.abs(deviation[g]))
        rows[group] = row
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "group"
    return frame


def _by_class(counts: ParityCounts) -> pd.DataFrame:
    """Per-class gaps DPG, PPG, EOG (Eq. 1-3) and whether each is defined."""
    frame = pd.DataFrame(index=pd.Index(counts.classes, name="class"))
    for gap, distance in _GAP_FUNCTIONS.items():
        frame[gap] = distance(counts)
        frame[f"{gap}_defined"] = ~np.isnan(frame[gap].to_numpy())
    return frame


def _by_model(by_class: pd.DataFrame) -> pd.Series:
    """Level (i): macro mean of each gap over the classes where it is defined (Eq. 5)."""
    row: dict[str, float] = {}
    for gap in _GAP_FUNCTIONS:
        row[gap] = _nanmean(by_class[gap].to_numpy())
        row[f"n_classes_{gap}"] = int(by_class[f"{gap}_defined"].sum())
    return pd.Series(row, name="model")


def _summary(counts: ParityCounts, groups: tuple[str, str]) -> dict[tuple[str, str], float]:
    """The level (i) gaps and level (ii) metric means of one table: what the bootstrap resamples."""
    out = {("model", gap): _nanmean(distance(counts)) for gap, distance in _GAP_FUNCTIONS.items()}
    for g, group in enumerate(groups):
        out |= {(group, metric): _nanmean(rate(counts)[g]) for metric, rate in _RATES.items()}
    return out


def _bootstrap_intervals(
    *,
    facts: dict[str, np.ndarray],
    groups: tuple[str, str],
    n_bootstrap: int,
    confidence: float,
    seed: int,
) -> pd.DataFrame:
    """Percentile intervals of :func:`_summary` over resamples of the facts (with replacement).

    ``facts``: the :func:`parity_counts` arguments (y_true, y_pred, group, classes); a resample
    is the same table with each fact weighted by how often it was drawn.
    -> index (level, measure); estimate, low, high, n_valid (replicates where it is defined).
    """
    estimates = _summary(parity_counts(**facts), groups)
    replicates = {key: np.full(n_bootstrap, np.nan) for key in estimates}
    rng = np.random.default_rng(seed)
    n = len(facts["y_true"])
    for b in range(n_bootstrap):
        weights = np.bincount(rng.integers(0, n, size=n), minlength=n).astype(np.float64)
        for key, value in _summary(parity_counts(**facts, weights=weights), groups).items():
            replicates[key][b] = value
    alpha = (1 - confidence) / 2
    rows = []
    for key, estimate in estimates.items():
        valid = replicates[key][~np.isnan(replicates[key])]
        low, high = np.quantile(valid, [alpha, 1 - alpha]) if valid.size else (np.nan, np.nan)
        rows.append((*key, estimate, float(low), float(high), int(valid.size)))
    return pd.DataFrame(rows, columns=["level", "measure", "estimate", "low", "high", "n_valid"]).set_index(
        ["level", "measure"]
    )


def _checked_inputs(
    y_true: np.ndarray | LongTensor,
    y_pred: np.ndarray | LongTensor,
    gender: np.ndarray | Sequence[str],
    *,
    groups: tuple[str, str],
    confidence: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The report's inputs as flat numpy arrays, or one MeasureError naming what is wrong with them."""
    if len(groups) != 2 or groups[0] == groups[1]:
        raise MeasureError(FAIRNESS_BAD_GROUPS.format(groups=groups))
    if not 0 < confidence < 1:
        raise MeasureError(FAIRNESS_BAD_CONFIDENCE.format(confidence=confidence))
    y_true = np.asarray(torch.as_tensor(y_true).cpu(), dtype=np.int64).reshape(-1)
    y_pred = np.asarray(torch.as_tensor(y_pred).cpu(), dtype=np.int64).reshape(-1)
    gender = np.asarray(gender, dtype=object).reshape(-1)
    if not len(y_true) == len(y_pred) == len(gender):
        raise MeasureError(FAIRNESS_SHAPE_MISMATCH.format(n_true=len(y_true), n_pred=len(y_pred), n_gender=len(gender)))
    return y_true, y_pred, gender


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

    Per class t and group s (level iii, ``by_class_group``, from one :class:`ParityCounts` table):
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
    replicates where they are defined (each replicate recounts the same facts, weighted by how
    often they were drawn: a MetricFrame per replicate would be ~1000x slower).
    Sign: gaps are unsigned; ``selection_deviation`` is signed.
    """
    y_true, y_pred, gender = _checked_inputs(y_true, y_pred, gender, groups=groups, confidence=confidence)
    occupations = np.asarray(sorted(int(o) for o in occupation_ids), dtype=np.int64)
    classes = _select_classes(y_true, min_count)
    used = np.isin(gender, list(groups))
    if not used.any():
        raise MeasureError(FAIRNESS_NO_FACTS.format(groups=groups))
    true_class = _class_labels(y_true[used], classes=classes, occupations=occupations, mark_not_occupation=False)
    pred_class = _class_labels(y_pred[used], classes=classes, occupations=occupations, mark_not_occupation=True)
    gender_used = gender[used]
    groups = tuple(groups)
    facts = {"y_true": true_class, "y_pred": pred_class, "group": np.where(gender_used == groups[0], 0, 1),
             "classes": classes}
    counts = parity_counts(**facts)
    by_class = _by_class(counts)
    not_occupation = pred_class == NOT_OCCUPATION
    predicted, times = np.unique(y_pred[used], return_counts=True)
    return FairnessReport(
        classes=tuple(int(c) for c in classes),
        min_count=min_count,
        groups=groups,
        n_facts=int(used.sum()),
        n_facts_by_group={group: int((gender_used == group).sum()) for group in groups},
        n_dropped_gender=int((~used).sum()),
        n_not_occupation=int(not_occupation.sum()),
        n_not_occupation_by_group={group: int((not_occupation & (gender_used == group)).sum()) for group in groups},
        by_class_group=_by_class_group(counts, groups),
        by_class=by_class,
        by_group=_by_group(counts, groups),
        by_model=_by_model(by_class),
        confidence_intervals=_bootstrap_intervals(
            facts=facts, groups=groups, n_bootstrap=n_bootstrap, confidence=confidence, seed=seed
        ),
        n_bootstrap=n_bootstrap,
        confidence=confidence,
        seed=seed,
        top_prediction=int(predicted[np.argmax(times)]),
        top_prediction_share=float(times.max() / used.sum()),
    )


def occupation_test_facts(model: StoredModel) -> tuple[LongTensor, np.ndarray]:
    """Test facts (person, occupation, ?) whose person has a gender fact anywhere in the data (METHODS §8).

    Gender is read by the one reader :func:`kgbias_core.data.graph.gender_of` over train + valid +
    test (the paper's "anywhere in the data"): a person with several gender values, e.g. both male
    and female, is 'other' here as in :class:`kgbias_core.measures.groups.OccupationGroups`.
    -> (facts [n, 3], gender label per fact: 'male', 'female' or 'other').
    """
    schema = model.schema
    gender = gender_of(
        known_triples(model), gender_relation=model.relation_id(schema.gender_relation),
        male=model.entity_id(schema.male), female=model.entity_id(schema.female), n_entities=model.n_entities,
    )  # [E] Gender codes
    test = model.test_triples.cpu() if model.test_triples is not None else torch.zeros(0, 3, dtype=torch.long)
    test = test[test[:, 1] == model.relation_id(schema.occupation_relation)]
    test = test[gender[test[:, 0]] != Gender.UNKNOWN]
    labels = np.array([GENDER_LABELS[Gender(code)] for code in gender[test[:, 0]].tolist()], dtype=object)
    return test, labels


def model_fairness(
    model: StoredModel, *, min_count: int | None = None, n_bootstrap: int = 1000, seed: int = 0
) -> FairnessReport:
    """Schwertmann et al.'s DPG / PPG / EOG of the model's top-1 occupation predictions (METHODS §8).

    :func:`fairness_report` of :func:`occupation_test_facts` and their top-1 tails
    (:func:`kgbias_core.evaluation.link_prediction.predict_top1_tails`); occupations are the tails of
    occupation facts anywhere in the data. ``min_count`` None: :func:`default_min_count` of the facts.
    """
    test, gender = occupation_test_facts(model)
    if min_count is None:
        min_count = default_min_count(len(test))
    occupation = model.relation_id(model.schema.occupation_relation)
    predicted = predict_top1_tails(pykeen_model(model), heads=test[:, 0], relation=occupation)
    every = known_triples(model)
    occupations = torch.unique(every[every[:, 1] == occupation, 2])
    return fairness_report(
        y_true=test[:, 2].numpy(), y_pred=predicted.cpu().numpy(), gender=gender,
        occupation_ids=occupations.numpy(), min_count=min_count, n_bootstrap=n_bootstrap, seed=seed,
    )


# --- several models' reports side by side -----------------------------------------------------
def _interval(estimate: float, low: float, high: float) -> str:
    """"0.123 [0.100, 0.150]"; the estimate alone without an interval; "undefined" for NaN."""
    if pd.isna(estimate):
        return "undefined"
    return f"{estimate:.3f} [{low:.3f}, {high:.3f}]" if not pd.isna(low) else f"{estimate:.3f}"


def gap_table(reports: Mapping[str, FairnessReport]) -> pd.DataFrame:
    """Level (i), one row per model (name -> report): DPG, PPG, EOG with their bootstrap interval
    (``*_low``, ``*_high`` and a readable ``* (95% CI)``), the classes defining each, the facts counted."""
    rows = []
    for name, report in reports.items():
        row: dict[str, object] = {"model": name}
        for gap in GAP_NAMES:
            ci = report.confidence_intervals.loc[("model", gap)]
            row |= {gap: report.by_model[gap], f"{gap}_low": ci["low"], f"{gap}_high": ci["high"],
                    f"{gap} (95% CI)": _interval(report.by_model[gap], ci["low"], ci["high"]),
                    f"n_classes_{gap}": int(report.by_model[f"n_classes_{gap}"])}
        rows.append(row | {"n_facts": report.n_facts, "n_not_occupation": report.n_not_occupation,
                           "n_classes": len(report.classes) - 1})
    return pd.DataFrame(rows)


def group_table(reports: Mapping[str, FairnessReport]) -> pd.DataFrame:
    """Level (ii), one row per model and gender: the macro mean of each metric with its interval, and
    Table 5's selection-rate deviation."""
    rows = []
    for name, report in reports.items():
        for group, values in report.by_group.iterrows():
            row: dict[str, object] = {"model": name, "group": group, "n_facts": report.n_facts_by_group[group],
                                      "n_not_occupation": report.n_not_occupation_by_group[group]}
            for metric in METRICS:
                ci = report.confidence_intervals.loc[(group, metric)]
                row |= {metric: values[metric], f"{metric} (95% CI)": _interval(values[metric], ci["low"], ci["high"])}
            row |= {"selection_deviation": values["selection_deviation"],
                    "abs_selection_deviation": values["abs_selection_deviation"]}
            rows.append(row)
    return pd.DataFrame(rows)


def class_group_table(reports: Mapping[str, FairnessReport], names: Mapping[str, Sequence[str]]) -> pd.DataFrame:
    """Level (iii), one row per model, occupation class and gender: each metric, the class's gaps and
    the selection-rate deviation. ``names``: model name -> its entity names (the classes' names)."""
    parts = []
    for model, report in reports.items():
        frame = report.by_class_group.reset_index().merge(report.by_class.reset_index(), on="class")
        frame.insert(0, "model", model)
        frame.insert(2, "class_name", ["OTHER" if c == OTHER else names[model][c] for c in frame["class"]])
        parts.append(frame)
    columns = ["model", "class", "class_name", "group", *METRICS, "n_true", "n_predicted", "data_share",
               "selection_deviation", *GAP_NAMES]
    return pd.concat(parts, ignore_index=True)[columns]
