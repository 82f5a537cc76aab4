"""Keidar et al.'s bias table: one row per (sensitive relation, measure) (METHODS §7).

Keidar, Zhong, Zhang & Zhang (2021), "Towards automatic bias detection in knowledge graphs",
§3.1 (DPD Eq. 1-2, PPD Eq. 3-4, TLB Eq. 5) and §3.2 (bias_agg, Eq. 6). A classifier predicts each
person's occupation (k most common + OTHER) from the entity embedding; every tail value of every
sensitive relation is taken one-vs-rest and the per-value biases are averaged per relation.

Choices, stated once (the UI repeats them):
- one-vs-rest per value v: persons having v (s = 1) vs persons having any other value of the same
  relation (s = 0); persons without the relation are left out (as the authors' code);
- DPD is the paper's plain sum over classes: NOT divided by (number of values + 1) as in the
  authors' code (mianzg/kgbiasdetec, Measurement.py);
- PPD is computed as the paper writes it, conditioning on y = a: it is a RECALL (true-positive-
  rate) distance, not a precision distance;
- DPD and PPD use cross-validated predictions (every person predicted by a classifier that never
  saw them), so that the distances describe generalisation, not memorised training fits;
- TLB aggregates Fisher's b_p over professions as the mean of |b_p| (a magnitude: the sign of
  each b_p tells the direction, the audit only ranks relations by how much they move scores).
"""

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
import torch
from pykeen.models import ERModel
from sklearn.base import ClassifierMixin
from sklearn.ensemble import RandomForestClassifier
from sklearn.metrics import accuracy_score, balanced_accuracy_score
from sklearn.model_selection import KFold, StratifiedKFold, cross_val_predict, train_test_split
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from kgbias_core.errors import (
    AUDIT_BAD_CLASSIFIER,
    AUDIT_BAD_K,
    AUDIT_SHAPE_MISMATCH,
    AUDIT_TOO_FEW_PERSONS,
    MeasureError,
)
from kgbias_core.measures.fisher import fisher_bias

__all__ = [
    "OTHER",
    "ParityDistance",
    "aggregate_relation_biases",
    "audit_relations",
    "cross_validated_predictions",
    "demographic_parity_distance",
    "entity_feature_matrix",
    "occupation_classes",
    "person_occupation_labels",
    "predictive_parity_distance",
    "relation_value_biases",
    "train_occupation_classifier",
    "translational_likelihood_bias",
]

#: Class label of every occupation outside the k most common ones.
OTHER = -1

ClassifierKind = Literal["random_forest", "mlp"]


def entity_feature_matrix(model: ERModel) -> np.ndarray:
    """All entity embeddings as classifier features, float64 [E, d] (complex: [E, 2d] = Re | Im)."""
    with torch.no_grad():
        embeddings = model.entity_representations[0](indices=None).detach().cpu()
    if embeddings.is_complex():
        embeddings = torch.cat([embeddings.real, embeddings.imag], dim=-1)
    return embeddings.to(torch.float64).numpy()


def person_occupation_labels(person_occupations: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One occupation label per person from (person, occupation) pairs [n, 2].

    Rule for persons with several occupations: the one that is most frequent in the whole of
    ``person_occupations`` (so that a politician-lawyer counts where the classes are best
    populated); ties go to the smaller occupation id. Returns (persons [J], labels [J]), persons
    sorted ascending.
    """
    pairs = np.unique(np.asarray(person_occupations, dtype=np.int64).reshape(-1, 2), axis=0)
    occupations, counts = np.unique(pairs[:, 1], return_counts=True)
    frequency = dict(zip(occupations.tolist(), counts.tolist(), strict=True))
    pair_frequency = np.asarray([frequency[o] for o in pairs[:, 1].tolist()], dtype=np.int64)
    # lexsort: last key is primary -> person asc, frequency desc, occupation id asc
    order = np.lexsort((pairs[:, 1], -pair_frequency, pairs[:, 0]))
    ordered = pairs[order]
    first = np.ones(len(ordered), dtype=bool)
    first[1:] = ordered[1:, 0] != ordered[:-1, 0]
    return ordered[first, 0], ordered[first, 1]


def occupation_classes(labels: np.ndarray, k: int) -> np.ndarray:
    """Map labels to the k most common occupations, every other label to OTHER (-1).

    Ties in frequency go to the smaller occupation id. Shape [J] -> [J].
    """
    if k < 1:
        raise MeasureError(AUDIT_BAD_K.format(k=k))
    labels = np.asarray(labels, dtype=np.int64)
    values, counts = np.unique(labels, return_counts=True)
    top = values[np.lexsort((values, -counts))][:k]
    return np.where(np.isin(labels, top), labels, OTHER)


def _classifier(kind: ClassifierKind, seed: int) -> ClassifierMixin:
    if kind == "random_forest":
        return RandomForestClassifier(n_estimators=100, random_state=seed, n_jobs=1)
    if kind == "mlp":
        # embeddings of different models live on different scales: standardise for the MLP
        return make_pipeline(
            StandardScaler(), MLPClassifier(hidden_layer_sizes=(100,), max_iter=500, random_state=seed)
        )
    raise MeasureError(AUDIT_BAD_CLASSIFIER.format(kind=kind))


def _check_xy(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.int64)
    if len(X) != len(y):
        raise MeasureError(AUDIT_SHAPE_MISMATCH.format(what="labels y", expected=len(X), found=len(y)))
    _, counts = np.unique(y, return_counts=True)
    if len(counts) < 2 or np.sort(counts)[-2] < 2:
        raise MeasureError(AUDIT_TOO_FEW_PERSONS.format(n_persons=len(y), n_classes=len(counts)))
    return X, y


def train_occupation_classifier(
    X: np.ndarray,
    y: np.ndarray,
    *,
    kind: ClassifierKind = "random_forest",
    seed: int = 0,
    test_size: float = 0.25,
) -> tuple[ClassifierMixin, float, float]:
    """Fit the occupation classifier on a seeded split; report held-out accuracy (Keidar §4).

    X [J, d] person embeddings, y [J] occupation classes. The split is stratified by class when
    every class has at least two persons, else plain (seeded either way). Returns
    (estimator fitted on the training part, accuracy, balanced accuracy on the test part).
    DPD/PPD do not use this estimator's predictions: see :func:`cross_validated_predictions`.
    """
    X, y = _check_xy(X, y)
    _, counts = np.unique(y, return_counts=True)
    stratify = y if counts.min() >= 2 else None
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=test_size, random_state=seed, stratify=stratify)
    estimator = _classifier(kind, seed).fit(X_train, y_train)
    predicted = estimator.predict(X_test)
    with warnings.catch_warnings():
        # a class predicted but absent from the small test part is not an error here
        warnings.simplefilter("ignore", UserWarning)
        balanced = balanced_accuracy_score(y_test, predicted)
    return estimator, float(accuracy_score(y_test, predicted)), float(balanced)


def cross_validated_predictions(
    X: np.ndarray,
    y: np.ndarray,
    *,
    kind: ClassifierKind = "random_forest",
    seed: int = 0,
    n_folds: int = 5,
) -> np.ndarray:
    """Occupation prediction for every person from a model that did not train on them.

    ``sklearn.model_selection.cross_val_predict`` with seeded, shuffled (stratified when the
    classes allow it) folds: DPD and PPD are then measured on held-out predictions, not on
    training fits that a random forest reproduces almost perfectly. Shapes: X [J, d], y [J]
    -> [J].
    """
    X, y = _check_xy(X, y)
    _, counts = np.unique(y, return_counts=True)
    n_splits = max(2, min(n_folds, len(y)))
    if counts.max() >= n_splits:
        folds: KFold | StratifiedKFold = StratifiedKFold(n_splits, shuffle=True, random_state=seed)
    else:
        folds = KFold(n_splits, shuffle=True, random_state=seed)
    with warnings.catch_warnings():
        # "the least populated class has only n members": rare classes are expected (OTHER absorbs most)
        warnings.simplefilter("ignore", UserWarning)
        return cross_val_predict(_classifier(kind, seed), X, y, cv=folds).astype(np.int64)


@dataclass(frozen=True)
class ParityDistance:
    """A DPD or PPD value with its per-class terms.

    value: the sum of the per-class distances over the classes where both probabilities are
    defined; None when no class is defined (then ``defined`` is False and ``reason`` says why).
    per_class: columns ``class``, ``p_s1``, ``p_s0``, ``distance``, ``defined``; probabilities
    and distance are NaN exactly where ``defined`` is False.
    """

    value: float | None  # the distance, or None when undefined
    defined: bool  # False: no class had both probabilities defined
    per_class: pd.DataFrame  # one row per class
    n_undefined_classes: int  # classes left out of the sum
    reason: str | None  # why undefined classes are undefined (None when all are defined)


def _parity(
    *, hits: np.ndarray, conditions: np.ndarray, sensitive: np.ndarray, classes: np.ndarray, reason: str
) -> ParityDistance:
    # hits[c, i]: person i counts as a "hit" for class c; conditions[c, i]: i is in the
    # conditioning population of class c. p_s = mean of hits over conditions & s.
    rows = []
    for c, class_id in enumerate(classes.tolist()):
        probabilities = []
        for group in (sensitive, ~sensitive):
            population = conditions[c] & group
            n = int(population.sum())
            probabilities.append(float(hits[c][population].mean()) if n else np.nan)
        defined = not np.isnan(probabilities).any()
        distance = abs(probabilities[0] - probabilities[1]) if defined else np.nan
        rows.append((class_id, *probabilities, distance, defined))
    per_class = pd.DataFrame(rows, columns=["class", "p_s1", "p_s0", "distance", "defined"])
    n_undefined = int((~per_class["defined"]).sum())
    any_defined = bool(per_class["defined"].any())
    return ParityDistance(
        value=float(per_class.loc[per_class["defined"], "distance"].sum()) if any_defined else None,
        defined=any_defined,
        per_class=per_class,
        n_undefined_classes=n_undefined,
        reason=reason if n_undefined else None,
    )


def demographic_parity_distance(*, y_pred: np.ndarray, sensitive: np.ndarray, classes: np.ndarray) -> ParityDistance:
    """Demographic parity distance DPD (Keidar §3.1, Eq. 1-2; METHODS §7).

    DPD = sum_a |P(ŷ = a | s = 1) - P(ŷ = a | s = 0)| over the given classes.
    Shapes: y_pred [J] predicted classes, sensitive [J] bool (s = 1), classes [C]. A class never
    predicted contributes 0. Undefined (value None) when either group is empty. Not divided by
    the number of values + 1 (the authors' code does; the paper does not). Range [0, 2];
    unsigned: 0 = predictions independent of s.
    """
    y_pred = np.asarray(y_pred, dtype=np.int64)
    sensitive = np.asarray(sensitive, dtype=bool)
    classes = np.asarray(classes, dtype=np.int64)
    hits = y_pred[None, :] == classes[:, None]  # [C, J]
    conditions = np.ones_like(hits)
    return _parity(
        hits=hits,
        conditions=conditions,
        sensitive=sensitive,
        classes=classes,
        reason="one of the groups s = 1, s = 0 has no person",
    )


def predictive_parity_distance(
    *, y_true: np.ndarray, y_pred: np.ndarray, sensitive: np.ndarray, classes: np.ndarray
) -> ParityDistance:
    """Keidar's "predictive parity distance" PPD as the paper writes it (Keidar Eq. 3-4; METHODS §7).

    PPD = sum_a |P(ŷ = a | y = a, s = 1) - P(ŷ = a | y = a, s = 0)|.
    NOTE: this conditions on the TRUE class, so each term is a gap in RECALL (true-positive rate,
    i.e. an equal-opportunity distance), not in precision as the paper's prose says.
    Shapes: y_true, y_pred [J], sensitive [J] bool, classes [C]. A class is undefined (left out
    of the sum, counted in ``n_undefined_classes``) when no person of it is in one of the groups.
    Unsigned; range [0, C].
    """
    y_true = np.asarray(y_true, dtype=np.int64)
    y_pred = np.asarray(y_pred, dtype=np.int64)
    sensitive = np.asarray(sensitive, dtype=bool)
    classes = np.asarray(classes, dtype=np.int64)
    return _parity(
        hits=y_pred[None, :] == classes[:, None],
        conditions=y_true[None, :] == classes[:, None],
        sensitive=sensitive,
        classes=classes,
        reason="the class has no person with y = a in one of the groups s = 1, s = 0",
    )


def _value_groups(person_values: np.ndarray, persons: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Persons of ``persons`` having the relation, its values, and the membership [V, J'] matrix."""
    pairs = np.unique(np.asarray(person_values, dtype=np.int64).reshape(-1, 2), axis=0)
    pairs = pairs[np.isin(pairs[:, 0], persons)]
    members = np.unique(pairs[:, 0])
    values = np.unique(pairs[:, 1])
    has = np.zeros((len(values), len(members)), dtype=bool)
    has[np.searchsorted(values, pairs[:, 1]), np.searchsorted(members, pairs[:, 0])] = True
    return members, values, has


def translational_likelihood_bias(
    model: ERModel,
    *,
    person_values: np.ndarray,
    attribute_relation: int,
    occupation_relation: int,
    professions: np.ndarray,
    persons: np.ndarray | None = None,
    min_persons: int = 10,
    attribute_person_is_head: bool = True,
    step: float = 0.01,
    batch_size: int = 16,
) -> pd.DataFrame:
    """Translational likelihood bias per tail value, one-vs-rest (Keidar Eq. 5; METHODS §6-7).

    For each value v of the relation: b_p(v) = Fisher's b_p (:func:`kgbias_core.fisher.fisher_bias`)
    with a = v and, one-vs-rest, b = the mean over all other values of the relation; the mean is
    over the persons having the relation (restricted to ``persons`` when given).
    TLB(v) = (1 / P) * sum_p |b_p(v)|  (mean magnitude over the professions [P]).
    Values held by fewer than ``min_persons`` persons, or with no other value to compare with,
    are skipped (``skipped`` True, ``tlb`` NaN).
    person_values: [n, 2] (person, value) pairs, already oriented person-first even for relations
    stored value -> person (say so with ``attribute_person_is_head=False``).
    Columns: ``value``, ``n_persons`` (have v), ``n_rest`` (have another value only), ``tlb``,
    ``skipped``. Unsigned: larger = the value moves profession scores more.
    """
    candidates = np.unique(np.asarray(person_values, dtype=np.int64)[:, 0]) if persons is None else persons
    members, values, has = _value_groups(person_values, np.asarray(candidates, dtype=np.int64))
    rows = []
    for v, value in enumerate(values.tolist()):
        n_persons = int(has[v].sum())
        n_rest = len(members) - n_persons
        others = np.delete(values, v)
        if n_persons < min_persons or len(others) == 0:
            rows.append((value, n_persons, n_rest, np.nan, True))
            continue
        bias = fisher_bias(
            model,
            persons=torch.as_tensor(members),
            attribute_relation=attribute_relation,
            value_a=value,
            value_b=None,
            other_values=torch.as_tensor(others),
            occupation_relation=occupation_relation,
            professions=torch.as_tensor(np.asarray(professions, dtype=np.int64)),
            step=step,
            attribute_person_is_head=attribute_person_is_head,
            batch_size=batch_size,
        )
        rows.append((value, n_persons, n_rest, float(bias.abs().mean()), False))
    return pd.DataFrame(rows, columns=["value", "n_persons", "n_rest", "tlb", "skipped"])


def relation_value_biases(
    *,
    persons: np.ndarray,
    y_true: np.ndarray,
    y_pred: np.ndarray,
    classes: np.ndarray,
    sensitive_facts: Mapping[int, np.ndarray],
    min_persons: int = 10,
    model: ERModel | None = None,
    occupation_relation: int | None = None,
    professions: np.ndarray | None = None,
    attribute_person_is_head: Mapping[int, bool] | None = None,
    step: float = 0.01,
    batch_size: int = 16,
) -> pd.DataFrame:
    """DPD, PPD (and TLB when a model is given) for every tail value of every relation.

    persons, y_true, y_pred: [J] aligned (classified persons, true and cross-validated predicted
    class). sensitive_facts: relation id -> [n, 2] (person, value) pairs. Each value is one-vs-rest
    among the persons having the relation; values held by fewer than ``min_persons`` of them are
    skipped. Long frame, one row per (relation, value, measure): ``relation``, ``value``,
    ``measure`` ("DPD" | "PPD" | "TLB"), ``bias`` (NaN when skipped or undefined), ``n_persons``,
    ``n_rest``, ``status`` ("ok" | "skipped" | "undefined").
    """
    persons = np.asarray(persons, dtype=np.int64)
    y_true, y_pred = np.asarray(y_true, dtype=np.int64), np.asarray(y_pred, dtype=np.int64)
    for what, array in (("y_true", y_true), ("y_pred", y_pred)):
        if len(array) != len(persons):
            raise MeasureError(AUDIT_SHAPE_MISMATCH.format(what=what, expected=len(persons), found=len(array)))
    directions = dict(attribute_person_is_head or {})
    position = {p: i for i, p in enumerate(persons.tolist())}
    rows: list[tuple] = []
    for relation, facts in sensitive_facts.items():
        members, values, has = _value_groups(facts, persons)
        index = np.asarray([position[m] for m in members.tolist()], dtype=np.int64)
        for v, value in enumerate(values.tolist()):
            n_persons = int(has[v].sum())
            n_rest = len(members) - n_persons
            if n_persons < min_persons:
                rows += [(relation, value, m, np.nan, n_persons, n_rest, "skipped") for m in ("DPD", "PPD")]
                continue
            dpd = demographic_parity_distance(y_pred=y_pred[index], sensitive=has[v], classes=classes)
            ppd = predictive_parity_distance(
                y_true=y_true[index], y_pred=y_pred[index], sensitive=has[v], classes=classes
            )
            for name, result in (("DPD", dpd), ("PPD", ppd)):
                status = "ok" if result.defined else "undefined"
                bias = result.value if result.value is not None else np.nan
                rows.append((relation, value, name, bias, n_persons, n_rest, status))
        if model is not None and occupation_relation is not None and professions is not None:
            tlb = translational_likelihood_bias(
                model,
                person_values=facts,
                attribute_relation=relation,
                occupation_relation=occupation_relation,
                professions=professions,
                persons=persons,
                min_persons=min_persons,
                attribute_person_is_head=directions.get(relation, True),
                step=step,
                batch_size=batch_size,
            )
            for row in tlb.itertuples(index=False):
                status = "skipped" if row.skipped else "ok"
                rows.append((relation, row.value, "TLB", row.tlb, row.n_persons, row.n_rest, status))
    columns = ["relation", "value", "measure", "bias", "n_persons", "n_rest", "status"]
    return pd.DataFrame(rows, columns=columns)


def aggregate_relation_biases(per_value: pd.DataFrame) -> pd.DataFrame:
    """bias_agg(s) = mean over the tail values of s of bias(s = t_i) (Keidar §3.2, Eq. 6).

    Only values with status "ok" enter the mean. Columns: ``relation``, ``measure``, ``bias``
    (NaN when no value is usable), ``n_values`` (all values among the persons), ``n_used``,
    ``n_skipped`` (fewer than min_persons persons), ``n_undefined`` (a group or every class
    undefined). Sorted by relation, then measure.
    """
    rows = []
    for (relation, measure), group in per_value.groupby(["relation", "measure"], sort=True):
        used = group[group["status"] == "ok"]
        rows.append(
            (
                relation,
                measure,
                float(used["bias"].mean()) if len(used) else np.nan,
                len(group),
                len(used),
                int((group["status"] == "skipped").sum()),
                int((group["status"] == "undefined").sum()),
            )
        )
    columns = ["relation", "measure", "bias", "n_values", "n_used", "n_skipped", "n_undefined"]
    return pd.DataFrame(rows, columns=columns)


def audit_relations(
    *,
    embeddings: np.ndarray,
    person_occupations: np.ndarray,
    sensitive_facts: Mapping[int, np.ndarray],
    k: int = 5,
    kind: ClassifierKind = "random_forest",
    seed: int = 0,
    n_folds: int = 5,
    min_persons: int = 10,
    model: ERModel | None = None,
    occupation_relation: int | None = None,
    attribute_person_is_head: Mapping[int, bool] | None = None,
    step: float = 0.01,
    batch_size: int = 16,
) -> pd.DataFrame:
    """Keidar et al.'s relation bias table: bias_agg per (relation, measure) (METHODS §7).

    1. Each person with an occupation gets one label (:func:`person_occupation_labels`), mapped to
       the k most common + OTHER (:func:`occupation_classes`).
    2. A classifier on their embeddings (embeddings [E, d]; complex models: Re | Im, see
       :func:`entity_feature_matrix`) is fitted on a seeded split for the reported accuracy, and
       predicts every person by cross-validation for DPD / PPD.
    3. Every value of every relation in ``sensitive_facts`` (relation id -> [n, 2] (person, value)
       pairs), one-vs-rest among persons having the relation: DPD, PPD, and with a ``model`` and
       an ``occupation_relation`` TLB over the k class occupations (:func:`relation_value_biases`).
    4. bias_agg = mean over values (:func:`aggregate_relation_biases`); paper normalisation, no
       division by (values + 1).
    Returns the long frame of :func:`aggregate_relation_biases` (pivot with
    ``frame.pivot(index="relation", columns="measure", values="bias")``); ``frame.attrs`` holds
    ``accuracy``, ``balanced_accuracy``, ``n_persons`` and ``classes``. All measures unsigned:
    larger = more bias.
    """
    persons, labels = person_occupation_labels(person_occupations)
    embeddings = np.asarray(embeddings, dtype=np.float64)
    X = embeddings[persons]  # [J, d]
    y = occupation_classes(labels, k)
    _, accuracy, balanced = train_occupation_classifier(X, y, kind=kind, seed=seed)
    y_pred = cross_validated_predictions(X, y, kind=kind, seed=seed, n_folds=n_folds)
    classes = np.unique(y)
    per_value = relation_value_biases(
        persons=persons,
        y_true=y,
        y_pred=y_pred,
        classes=classes,
        sensitive_facts=sensitive_facts,
        min_persons=min_persons,
        model=model,
        occupation_relation=occupation_relation,
        professions=classes[classes != OTHER],
        attribute_person_is_head=attribute_person_is_head,
        step=step,
        batch_size=batch_size,
    )
    table = aggregate_relation_biases(per_value)
    measures = ["DPD", "PPD"] + (["TLB"] if model is not None and occupation_relation is not None else [])
    # a relation that none of the classified persons has still gets its (empty) rows
    full = pd.MultiIndex.from_product([list(sensitive_facts), measures], names=["relation", "measure"])
    table = table.set_index(["relation", "measure"]).reindex(full).reset_index()
    table = table.fillna({"n_values": 0, "n_used": 0, "n_skipped": 0, "n_undefined": 0})
    table = table.astype({c: "int64" for c in ["n_values", "n_used", "n_skipped", "n_undefined"]})
    table.attrs.update(
        accuracy=accuracy,
        balanced_accuracy=balanced,
        n_persons=len(persons),
        classes=classes.tolist(),
    )
    return table
