"""Keidar et al.'s occupation classifier: who does which job, predicted from the entity embedding (METHODS §7).

Keidar, Zhong, Zhang & Zhang (2021) §3.1 and §4: each person with an occupation gets one label,
mapped to the k most common occupations + OTHER; a classifier (random forest or MLP) on the
person's embedding predicts it. :mod:`kgbias_core.measures.relation_audit` measures how those
predictions differ between the groups of each sensitive relation.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Literal

import numpy as np
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

__all__ = [
    "OTHER",
    "ClassifierKind",
    "OccupationPredictions",
    "classify_occupations",
    "cross_validated_predictions",
    "entity_feature_matrix",
    "occupation_classes",
    "person_occupation_labels",
    "train_occupation_classifier",
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
        # Trees are fitted in parallel threads; the seeded trees make the forest the same for any n_jobs.
        return RandomForestClassifier(n_estimators=100, random_state=seed, n_jobs=-1)
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
class OccupationPredictions:
    """Every classified person's true and cross-validated predicted occupation class."""

    persons: np.ndarray  # [J] entity ids of the persons with an occupation, ascending
    y_true: np.ndarray  # [J] true class: one of the k most common occupations or OTHER
    y_pred: np.ndarray  # [J] class predicted by a classifier that did not train on the person
    classes: np.ndarray  # [C] the classes present in y_true, ascending (OTHER first when present)
    kind: ClassifierKind  # the classifier
    accuracy: float  # held-out accuracy of the classifier fitted on a seeded split
    balanced_accuracy: float  # the same, balanced over classes

    @property
    def professions(self) -> np.ndarray:
        """The k occupation entity ids among the classes (OTHER left out): [C'] (TLB's professions)."""
        return self.classes[self.classes != OTHER]


def classify_occupations(
    *,
    embeddings: np.ndarray,
    person_occupations: np.ndarray,
    k: int = 5,
    kind: ClassifierKind = "random_forest",
    seed: int = 0,
    n_folds: int = 5,
) -> OccupationPredictions:
    """Label, classify and predict every person with an occupation (Keidar §3.1, §4; METHODS §7).

    1. One label per person (:func:`person_occupation_labels`) from (person, occupation) pairs
       [n, 2], mapped to the k most common + OTHER (:func:`occupation_classes`).
    2. A classifier on the persons' rows of ``embeddings`` [E, d] (:func:`entity_feature_matrix`)
       fitted on a seeded split for the reported accuracy (:func:`train_occupation_classifier`),
       and every person predicted by cross-validation (:func:`cross_validated_predictions`).
    """
    persons, labels = person_occupation_labels(person_occupations)
    X = np.asarray(embeddings, dtype=np.float64)[persons]  # [J, d]
    y = occupation_classes(labels, k)
    _, accuracy, balanced = train_occupation_classifier(X, y, kind=kind, seed=seed)
    y_pred = cross_validated_predictions(X, y, kind=kind, seed=seed, n_folds=n_folds)
    return OccupationPredictions(
        persons=persons, y_true=y, y_pred=y_pred, classes=np.unique(y), kind=kind,
        accuracy=accuracy, balanced_accuracy=balanced,
    )
