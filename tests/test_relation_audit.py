"""Keidar et al.'s relation audit (kgbias_core.measures.relation_audit) against hand computations."""

import numpy as np
import pytest
import torch
from pykeen.models import TransE
from pykeen.triples import TriplesFactory

from kgbias_core import errors
from kgbias_core.measures.fisher import fisher_bias
from kgbias_core.measures.relation_audit import (
    OTHER,
    audit_relations,
    cross_validated_predictions,
    demographic_parity_distance,
    entity_feature_matrix,
    occupation_classes,
    person_occupation_labels,
    predictive_parity_distance,
    relation_value_biases,
    train_occupation_classifier,
    translational_likelihood_bias,
)

torch.set_num_threads(1)

# 8 persons, first four s = 1. Class 2 is never predicted; class 5 never occurs at all.
Y_PRED = np.array([0, 0, 1, OTHER, 0, 1, 1, 1])
Y_TRUE = np.array([0, 1, 1, OTHER, 0, 1, 0, 2])
S = np.array([True, True, True, True, False, False, False, False])
CLASSES = np.array([0, 1, 2, OTHER, 5])


def test_demographic_parity_distance_by_hand() -> None:
    result = demographic_parity_distance(y_pred=Y_PRED, sensitive=S, classes=CLASSES)
    # s=1: P(0)=2/4 P(1)=1/4 P(2)=0 P(OTHER)=1/4 P(5)=0; s=0: 1/4, 3/4, 0, 0, 0
    assert result.value == pytest.approx(0.25 + 0.5 + 0 + 0.25 + 0)
    assert result.defined and result.n_undefined_classes == 0 and result.reason is None
    per_class = result.per_class.set_index("class")
    assert per_class.loc[2, "distance"] == 0  # never predicted: defined, contributes 0
    assert per_class.loc[1, "p_s0"] == pytest.approx(0.75)


def test_demographic_parity_distance_empty_group_is_undefined() -> None:
    result = demographic_parity_distance(y_pred=Y_PRED, sensitive=np.ones(8, bool), classes=CLASSES)
    assert result.value is None and not result.defined
    assert result.n_undefined_classes == len(CLASSES)
    assert "has no person" in result.reason
    assert result.per_class["distance"].isna().all() and not result.per_class["defined"].any()


def test_predictive_parity_distance_by_hand() -> None:
    result = predictive_parity_distance(y_true=Y_TRUE, y_pred=Y_PRED, sensitive=S, classes=CLASSES)
    # class 0: s=1 {0: hit} = 1, s=0 {4: hit, 6: miss} = 1/2 -> 1/2
    # class 1: s=1 {1: miss, 2: hit} = 1/2, s=0 {5: hit} = 1 -> 1/2
    # class 2: no y=2 in s=1 -> undefined; OTHER: no y=OTHER in s=0 -> undefined; 5: undefined
    assert result.value == pytest.approx(1.0)
    assert result.defined and result.n_undefined_classes == 3
    per_class = result.per_class.set_index("class")
    assert per_class.loc[0, "p_s1"] == 1.0 and per_class.loc[0, "p_s0"] == 0.5
    assert np.isnan(per_class.loc[2, "p_s1"]) and per_class.loc[2, "p_s0"] == 0.0
    assert list(per_class["defined"]) == [True, True, False, False, False]
    assert "y = a" in result.reason


def test_predictive_parity_distance_all_undefined() -> None:
    result = predictive_parity_distance(y_true=Y_TRUE, y_pred=Y_PRED, sensitive=np.zeros(8, bool), classes=CLASSES)
    assert result.value is None and not result.defined


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


def _synthetic_graph() -> tuple[TriplesFactory, np.ndarray]:
    rng = np.random.default_rng(0)
    rows = []
    for i in range(48):
        rows.append([f"p{i}", "gender", "male" if i % 3 else "female"])
        rows.append([f"p{i}", "job", f"job{rng.integers(0, 4)}"])
        if i % 5:  # some persons lack a nationality: left out of its one-vs-rest
            rows.append([f"p{i}", "nationality", f"nat{i % 3}"])
        rows.append([f"eth{i % 2}", "ethnicity_people", f"p{i}"])
    rows.append(["x", "religion", "y"])  # no classified person has a religion
    return TriplesFactory.from_labeled_triples(np.asarray(rows)), np.asarray(rows)


def test_audit_runs_and_is_finite() -> None:
    factory, _ = _synthetic_graph()
    model = TransE(
        triples_factory=factory,
        embedding_dim=8,
        scoring_fct_norm=2,
        power_norm=True,
        entity_constrainer=None,
        random_seed=1,
    )
    r2i = factory.relation_to_id
    triples = factory.mapped_triples.numpy()

    def pairs(name: str, person_first: bool = True) -> np.ndarray:
        chosen = triples[triples[:, 1] == r2i[name]]
        return chosen[:, [0, 2]] if person_first else chosen[:, [2, 0]]

    facts = {
        r2i["gender"]: pairs("gender"),
        r2i["nationality"]: pairs("nationality"),
        r2i["ethnicity_people"]: pairs("ethnicity_people", person_first=False),
        r2i["religion"]: pairs("religion"),
    }
    table = audit_relations(
        embeddings=entity_feature_matrix(model),
        person_occupations=pairs("job"),
        sensitive_facts=facts,
        k=3,
        seed=0,
        n_folds=3,
        min_persons=3,
        model=model,
        occupation_relation=r2i["job"],
        attribute_person_is_head={r2i["ethnicity_people"]: False},
    )
    assert set(table["measure"]) == {"DPD", "PPD", "TLB"}
    real = table[table["relation"] != r2i["religion"]]
    assert len(real) == 9 and np.isfinite(real["bias"]).all()
    assert (real["n_used"] == real["n_values"]).all()
    religion = table[table["relation"] == r2i["religion"]]
    assert religion["bias"].isna().all() and (religion["n_values"] == 0).all()
    assert 0 <= table.attrs["accuracy"] <= 1 and table.attrs["n_persons"] == 48
    assert len(table.attrs["classes"]) == 4  # 3 occupations + OTHER


def test_one_vs_rest_and_tlb_agree_with_direct_calls() -> None:
    factory, _ = _synthetic_graph()
    model = TransE(triples_factory=factory, embedding_dim=8, random_seed=2)
    r2i = factory.relation_to_id
    triples = factory.mapped_triples.numpy()
    nationality = triples[triples[:, 1] == r2i["nationality"]][:, [0, 2]]
    jobs = triples[triples[:, 1] == r2i["job"]]
    persons = np.unique(jobs[:, 0])
    rng = np.random.default_rng(3)
    y_true = rng.integers(0, 3, size=len(persons))
    y_pred = rng.integers(0, 3, size=len(persons))
    professions = np.unique(jobs[:, 2])
    per_value = relation_value_biases(
        persons=persons,
        y_true=y_true,
        y_pred=y_pred,
        classes=np.arange(3),
        sensitive_facts={r2i["nationality"]: nationality},
        min_persons=1,
        model=model,
        occupation_relation=r2i["job"],
        professions=professions,
    )
    value = int(nationality[0, 1])
    # persons without a nationality are left out; s = 1 for those having `value`
    having = np.isin(persons, nationality[:, 0])
    sensitive = np.isin(persons[having], nationality[nationality[:, 1] == value, 0])
    expected = demographic_parity_distance(y_pred=y_pred[having], sensitive=sensitive, classes=np.arange(3)).value
    row = per_value[(per_value["value"] == value) & (per_value["measure"] == "DPD")].iloc[0]
    assert row["bias"] == pytest.approx(expected)
    assert row["n_persons"] == sensitive.sum() and row["n_rest"] == (~sensitive).sum()

    others = np.setdiff1d(np.unique(nationality[:, 1]), [value])
    b_p = fisher_bias(
        model,
        persons=torch.as_tensor(persons[having]),
        attribute_relation=r2i["nationality"],
        value_a=value,
        value_b=None,
        other_values=torch.as_tensor(others),
        occupation_relation=r2i["job"],
        professions=torch.as_tensor(professions),
    )
    tlb = per_value[(per_value["value"] == value) & (per_value["measure"] == "TLB")].iloc[0]
    assert tlb["bias"] == pytest.approx(float(b_p.abs().mean()), rel=1e-5)

    # 38 persons with a nationality: min_persons = 100 skips every value
    skipped = translational_likelihood_bias(
        model,
        person_values=nationality,
        attribute_relation=r2i["nationality"],
        occupation_relation=r2i["job"],
        professions=professions,
        min_persons=100,
    )
    assert skipped["skipped"].all() and skipped["tlb"].isna().all()
