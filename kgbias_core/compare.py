"""Comparing embedding models: Keidar's relation audit and Schwertmann's prediction fairness per model.

Glue between stored models and the measure modules :mod:`kgbias_core.relation_audit` and
:mod:`kgbias_core.link_fairness`: which facts are persons' attributes, which test facts are
occupation queries of persons with a gender, and readable labels in the output.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from kgbias_core.link_fairness import FairnessReport, fairness_report, predict_top1_tails
from kgbias_core.models import pykeen_model
from kgbias_core.relation_audit import audit_relations, entity_feature_matrix
from kgbias_core.store import StoredModel


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
    from kgbias_core.store import load_model, load_result, save_result
    from kgbias_core.whatif import link_prediction

    params = {"split": "test", "side": "tail", "filtered": True}
    cached = load_result(model_dir, "link_prediction", params=params)
    if cached is not None:
        return cached
    model = load_model(model_dir)
    rows = [{"queries": "all", **link_prediction(model)},
            {"queries": "occupation", **link_prediction(model, occupation_only=True)}]
    frame = pd.DataFrame(rows)
    save_result(model_dir, "link_prediction", frame, params=params)
    return frame
