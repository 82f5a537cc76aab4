"""Keidar et al.'s occupation classifier (kgbias_core.measures.occupation_classifier) on toy data."""

import numpy as np
import pytest
import torch

from kgbias_core import errors
from kgbias_core.measures.occupation_classifier import (
    OTHER,
    classify_occupations,
    cross_validated_predictions,
    occupation_classes,
    person_occupation_labels,
    train_occupation_classifier,
)

torch.set_num_threads(1)


def test_labels_and_classes() -> None:
    pairs = np.array([[1, 10], [1, 11], [2, 11], [3, 10], [3, 11], [3, 11], [4, 12], [6, 14], [6, 15]])
    persons, labels = person_occupation_labels(pairs)
    # frequency (distinct pairs): 10: 2, 11: 3, 12: 1, 14: 1, 15: 1 -> most frequent, ties to smaller id
    assert persons.tolist() == [1, 2, 3, 4, 6]
    assert labels.tolist() == [11, 11, 11, 12, 14]
    classes = occupation_classes(np.array([7, 7, 7, 3, 3, 9, 4, 4]), 2)
    # 3 and 4 tie with two persons each: the smaller id wins
    assert classes.tolist() == [7, 7, 7, 3, 3, OTHER, OTHER, OTHER]
    with pytest.raises(errors.MeasureError, match="at least 1, got 0"):
        occupation_classes(np.array([1]), 0)


def _blobs(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = np.array([[5.0, 0, 0], [0, 5.0, 0], [0, 0, 5.0]])
    y = np.repeat([3, 8, OTHER], 20)
    X = centres[np.repeat([0, 1, 2], 20)] + rng.normal(scale=0.5, size=(60, 3))
    return X, y


@pytest.mark.parametrize("kind", ["random_forest", "mlp"])
def test_classifier_separable_toy(kind: str) -> None:
    X, y = _blobs()
    estimator, accuracy, balanced = train_occupation_classifier(X, y, kind=kind, seed=0)
    assert accuracy == 1.0 and balanced == 1.0
    assert set(estimator.predict(X)) <= {3, 8, OTHER}
    predicted = cross_validated_predictions(X, y, kind=kind, seed=0, n_folds=3)
    assert predicted.shape == y.shape and (predicted == y).mean() == 1.0
    # seeded: the same predictions again
    again = cross_validated_predictions(X, y, kind=kind, seed=0, n_folds=3)
    assert (predicted == again).all()


def test_classifier_errors() -> None:
    X, y = _blobs()
    with pytest.raises(errors.MeasureError, match="unknown occupation classifier 'svm'"):
        train_occupation_classifier(X, y, kind="svm")
    with pytest.raises(errors.MeasureError, match="at least two occupation classes"):
        train_occupation_classifier(X[:3], np.array([1, 1, 1]))


def test_classify_occupations_labels_persons_by_their_entity_rows() -> None:
    X, y = _blobs()
    # persons are entities 100..159 of a 160-row embedding; occupation ids 3 (blob 0) and 8 (blob 1),
    # the third blob holds three rarer occupations that k = 2 maps to OTHER
    embeddings = np.zeros((160, 3))
    embeddings[100:] = X
    occupations = np.where(y == OTHER, 20 + np.arange(60) % 3, y)
    pairs = np.stack([np.arange(100, 160), occupations], axis=1)[::-1]  # any order
    result = classify_occupations(embeddings=embeddings, person_occupations=pairs, k=2, seed=0, n_folds=3)
    assert result.persons.tolist() == list(range(100, 160))
    assert result.y_true.tolist() == y.tolist()
    assert result.classes.tolist() == [OTHER, 3, 8] and result.professions.tolist() == [3, 8]
    np.testing.assert_array_equal(result.y_pred, cross_validated_predictions(X, y, seed=0, n_folds=3))
    assert result.accuracy == 1.0 and result.kind == "random_forest"
