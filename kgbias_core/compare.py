"""Comparing embedding models: Keidar's relation audit and Schwertmann's prediction fairness per model.

Glue between stored models and the measure modules :mod:`kgbias_core.measures.relation_audit` and
:mod:`kgbias_core.measures.prediction_fairness`: which facts are persons' attributes, which test facts are
occupation queries of persons with a gender, and readable labels in the output.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from kgbias_core.embeddings.pykeen_bridge import pykeen_model
from kgbias_core.embeddings.store import StoredModel, load_model, load_result, save_result
from kgbias_core.errors import CancelledError
from kgbias_core.measures.prediction_fairness import FairnessReport, fairness_report, predict_top1_tails
from kgbias_core.measures.relation_audit import (
    OTHER,
    aggregate_relation_biases,
    audit_relations,
    cross_validated_predictions,
    entity_feature_matrix,
    occupation_classes,
    person_occupation_labels,
    relation_value_biases,
    train_occupation_classifier,
)

#: Message of a relation audit stopped by the user between two relations.
AUDIT_CANCELLED = "relation audit of {model} cancelled by the user after {done} of {total} relations"
#: Key of :func:`cached_value_audit`'s table in a model's results folder.
AUDIT_RESULT = "relation_audit"
#: What :func:`cached_link_prediction` evaluates: filtered tail ranks on the test split.
LINK_PREDICTION_PARAMS = {"split": "test", "side": "tail", "filtered": True}


def _all_triples(model: StoredModel) -> torch.Tensor:
    return torch.cat([t.cpu() for t in (model.triples, model.valid_triples, model.test_triples) if t is not None])


def sensitive_relations(model: StoredModel) -> dict[str, tuple[int, bool]]:
    """Candidate sensitive relations: name -> (relation id, person is head). Gender first.

    The schema's attributes where the graph has them; for a graph without declared attributes, every
    relation whose heads are mostly persons (persons = heads of occupation facts) with few tail values.
    """
    schema = model.schema
    relations: dict[str, tuple[int, bool]] = {"gender": (model.relation_id(schema.gender_relation), True)}
    for attribute in schema.attributes:
        if attribute.relation in model.relation_to_id:
            relations[attribute.name] = (model.relation_id(attribute.relation), attribute.person_is_head)
    if len(relations) > 1:
        return relations
    triples = model.triples.cpu()
    occupation = model.relation_id(schema.occupation_relation)
    persons = torch.zeros(model.n_entities, dtype=torch.bool)
    persons[triples[triples[:, 1] == occupation, 0]] = True
    for relation in torch.unique(triples[:, 1]).tolist():
        if relation in (occupation, relations["gender"][0]):
            continue
        facts = triples[triples[:, 1] == relation]
        if persons[facts[:, 0]].float().mean() > 0.9 and torch.unique(facts[:, 2]).numel() <= 200:
            relations[model.relation_labels[relation]] = (relation, True)
    return relations


def model_audit(
    model: StoredModel, *, k: int = 5, kind: str = "random_forest", min_persons: int = 10, seed: int = 0
) -> pd.DataFrame:
    """Keidar et al.'s DPD / PPD / TLB per sensitive relation for one model (METHODS §7).

    Long frame: relation (name), measure, bias, n_values, n_used, n_skipped, n_undefined; ``attrs``
    carries the classifier's accuracy and balanced accuracy.
    """
    module = pykeen_model(model, device="cpu")
    triples = model.triples.cpu()
    occupation = model.relation_id(model.schema.occupation_relation)
    relations = sensitive_relations(model)
    facts = {}
    heads = {}
    for _, (relation, person_is_head) in relations.items():
        rows = triples[triples[:, 1] == relation]
        pairs = rows[:, [0, 2]] if person_is_head else rows[:, [2, 0]]
        facts[relation] = pairs.numpy()
        heads[relation] = person_is_head
    table = audit_relations(
        embeddings=entity_feature_matrix(module),
        person_occupations=triples[triples[:, 1] == occupation][:, [0, 2]].numpy(),
        sensitive_facts=facts, k=k, kind=kind, seed=seed, min_persons=min_persons, model=module,
        occupation_relation=occupation, attribute_person_is_head=heads,
    )
    names = {relation: name for name, (relation, _) in relations.items()}
    table["relation"] = table["relation"].map(names)
    return table


def occupation_test_facts(model: StoredModel) -> tuple[torch.Tensor, np.ndarray]:
    """Test facts (person, occupation, ?) whose person has a gender fact anywhere in the data (METHODS §8).

    -> (facts [n, 3], gender label per fact: the value's readable name, 'male'/'female' for the schema's).
    """
    schema = model.schema
    every = _all_triples(model)
    gender_relation = model.relation_id(schema.gender_relation)
    gender_facts = every[every[:, 1] == gender_relation]
    gender_of = dict(zip(gender_facts[:, 0].tolist(), gender_facts[:, 2].tolist(), strict=True))
    test = model.test_triples.cpu() if model.test_triples is not None else torch.zeros(0, 3, dtype=torch.long)
    test = test[test[:, 1] == model.relation_id(schema.occupation_relation)]
    keep = torch.tensor([h in gender_of for h in test[:, 0].tolist()], dtype=torch.bool)
    test = test[keep]
    male, female = model.entity_id(schema.male), model.entity_id(schema.female)
    labels = {male: "male", female: "female"}
    gender = np.array([labels.get(gender_of[h], model.entity_labels[gender_of[h]]) for h in test[:, 0].tolist()])
    return test, gender


def model_fairness(
    model: StoredModel, *, min_count: int = 100, n_bootstrap: int = 1000, seed: int = 0
) -> FairnessReport:
    """Schwertmann et al.'s DPG / PPG / EOG of the model's top-1 occupation predictions (METHODS §8)."""
    test, gender = occupation_test_facts(model)
    module = pykeen_model(model)
    occupation = model.relation_id(model.schema.occupation_relation)
    predicted = predict_top1_tails(module, heads=test[:, 0], relation=occupation)
    every = _all_triples(model)
    occupations = torch.unique(every[every[:, 1] == model.relation_id(model.schema.occupation_relation), 2])
    return fairness_report(
        y_true=test[:, 2].numpy(), y_pred=predicted.cpu().numpy(), gender=gender,
        occupation_ids=occupations.numpy(), min_count=min_count, n_bootstrap=n_bootstrap, seed=seed,
    )


def audit_table(models: Sequence[StoredModel], **kwargs: object) -> pd.DataFrame:
    """Relations × measures × models: one long frame with a ``model`` column, plus classifier accuracy."""
    frames = []
    for model in models:
        table = model_audit(model, **kwargs)
        table.insert(0, "model", model.name)
        table["classifier_accuracy"] = table.attrs["accuracy"]
        table["classifier_balanced_accuracy"] = table.attrs["balanced_accuracy"]
        frames.append(table)
    return pd.concat(frames, ignore_index=True)


def cached_link_prediction(model_dir: Path | str) -> pd.DataFrame:
    """Filtered MRR and Hits@1/3/10 (tails) on the test split, all queries and occupation queries.

    Computed once per model and cached beside it (:func:`kgbias_core.store.save_result`); -> one row per
    query set: ``queries, n, mr, mrr, hits@1, hits@3, hits@10``.
    """
    from kgbias_core.whatif.runs import link_prediction

    params = LINK_PREDICTION_PARAMS
    cached = load_result(model_dir, "link_prediction", params=params)
    if cached is not None:
        return cached
    model = load_model(model_dir)
    rows = [{"queries": "all", **link_prediction(model)},
            {"queries": "occupation", **link_prediction(model, occupation_only=True)}]
    frame = pd.DataFrame(rows)
    save_result(model_dir, "link_prediction", frame, params=params)
    return frame


def _person_value_pairs(triples: torch.Tensor, relation: int, person_is_head: bool) -> np.ndarray:
    """[n, 2] (person, value) pairs of one relation, person first whatever the direction."""
    rows = triples[triples[:, 1] == relation]
    return (rows[:, [0, 2]] if person_is_head else rows[:, [2, 0]]).numpy()


def model_value_audit(
    model: StoredModel,
    *,
    k: int = 5,
    kind: str = "random_forest",
    min_persons: int = 10,
    seed: int = 0,
    on_step: Callable[[int, int, str], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> pd.DataFrame:
    """Keidar et al.'s DPD / PPD / TLB per sensitive relation *and tail value* for one model (METHODS §7).

    The rows that :func:`model_audit` averages: the same classifier, cross-validated predictions
    and one-vs-rest groups as :func:`kgbias_core.relation_audit.audit_relations`, but run one
    relation at a time so that a job can report progress (``on_step(done, total, relation)``) and
    stop between relations (``should_stop``; raises :class:`CancelledError`). bias_agg(s) is
    :func:`audit_from_values` of this frame.
    Long frame, one row per (relation, value, measure): ``relation`` (name), ``value`` (label),
    ``value_name``, ``measure`` (DPD | PPD | TLB), ``bias`` (NaN when skipped or undefined),
    ``n_persons`` (have the value), ``n_rest`` (have another value only), ``status``
    (ok | skipped | undefined); constant columns ``classifier``, ``k``, ``accuracy``,
    ``balanced_accuracy`` (held-out split), ``n_classified`` (persons with an occupation).
    All measures unsigned: larger = more bias.
    """
    module = pykeen_model(model, device="cpu")
    triples = model.triples.cpu()
    occupation = model.relation_id(model.schema.occupation_relation)
    persons, labels = person_occupation_labels(triples[triples[:, 1] == occupation][:, [0, 2]].numpy())
    X = np.asarray(entity_feature_matrix(module), dtype=np.float64)[persons]  # [J, d]
    y = occupation_classes(labels, k)
    _, accuracy, balanced = train_occupation_classifier(X, y, kind=kind, seed=seed)
    y_pred = cross_validated_predictions(X, y, kind=kind, seed=seed)
    classes = np.unique(y)
    relations = sensitive_relations(model)
    parts = []
    for done, (name, (relation, person_is_head)) in enumerate(relations.items()):
        if should_stop is not None and should_stop():
            raise CancelledError(AUDIT_CANCELLED.format(model=model.name, done=done, total=len(relations)))
        if on_step is not None:
            on_step(done, len(relations), name)
        part = relation_value_biases(
            persons=persons, y_true=y, y_pred=y_pred, classes=classes,
            sensitive_facts={relation: _person_value_pairs(triples, relation, person_is_head)},
            min_persons=min_persons, model=module, occupation_relation=occupation,
            professions=classes[classes != OTHER], attribute_person_is_head={relation: person_is_head},
        )
        parts.append(part.assign(relation=name))
    frame = pd.concat(parts, ignore_index=True)
    values = frame["value"].astype(int)
    frame["value"] = [model.entity_labels[v] for v in values]
    frame.insert(2, "value_name", [model.entity_names[v] for v in values])
    return frame.assign(classifier=kind, k=k, accuracy=accuracy, balanced_accuracy=balanced, n_classified=len(persons))


def audit_from_values(values: pd.DataFrame) -> pd.DataFrame:
    """bias_agg(s) = mean over the tail values of s (Keidar Eq. 6) of a :func:`model_value_audit` frame.

    No division by the number of values (+ 1) as in the authors' code: the paper's normalisation.
    Columns as :func:`kgbias_core.relation_audit.aggregate_relation_biases`, relations in the
    order they first appear.
    """
    table = aggregate_relation_biases(values)
    order = {name: i for i, name in enumerate(values["relation"].drop_duplicates())}
    return table.sort_values(["relation", "measure"], key=lambda s: s.map(order) if s.name == "relation" else s,
                             ignore_index=True)


def cached_value_audit(
    model_dir: Path | str,
    *,
    k: int = 5,
    kind: str = "random_forest",
    min_persons: int = 10,
    seed: int = 0,
    on_step: Callable[[int, int, str], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> pd.DataFrame:
    """:func:`model_value_audit` of a stored model, computed once per parameters and cached beside it."""
    params = audit_params(k=k, kind=kind, min_persons=min_persons, seed=seed)
    cached = load_result(model_dir, AUDIT_RESULT, params=params)
    if cached is not None:
        return cached
    frame = model_value_audit(load_model(model_dir), **params, on_step=on_step, should_stop=should_stop)
    save_result(model_dir, AUDIT_RESULT, frame, params=params)
    return frame


def audit_params(*, k: int, kind: str, min_persons: int, seed: int = 0) -> dict[str, object]:
    """The parameters a cached relation audit is keyed on."""
    return {"k": int(k), "kind": kind, "min_persons": int(min_persons), "seed": int(seed)}


def load_value_audit(model_dir: Path | str, **params: object) -> pd.DataFrame | None:
    """The cached :func:`cached_value_audit` table for these parameters, or None if not computed yet."""
    return load_result(model_dir, AUDIT_RESULT, params=audit_params(**params))


def load_link_prediction(model_dir: Path | str) -> pd.DataFrame | None:
    """The cached :func:`cached_link_prediction` table, or None if not computed yet."""
    return load_result(model_dir, "link_prediction", params=LINK_PREDICTION_PARAMS)
