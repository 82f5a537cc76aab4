"""experiments/default_models/head_dependence.py (issue 24): whether a model's link prediction reads the head, and
the popularity baseline, each against a loop over the entities."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kgbias_core.embeddings.pykeen_bridge import pykeen_model
from kgbias_core.evaluation.baseline import PopularityScorer, modal_share
from kgbias_core.evaluation.link_prediction import link_prediction, link_prediction_sides
from tests.conftest import load_script


@pytest.fixture(scope="module")
def script():
    return load_script("experiments/default_models/head_dependence.py", "head_dependence")


def test_the_study_writes_a_row_per_side_and_the_count_per_graph(script, tiny_model) -> None:
    rows, per_relation = script.side_rows("tiny", pykeen_model(tiny_model), tiny_model, per_relation=True)
    assert [row["side"] for row in rows] == ["head", "tail", "both"]
    tail = rows[1]
    assert tail["mrr"] == pytest.approx(link_prediction(tiny_model)["mrr"])
    relations = tiny_model.test_triples[:, 1].unique()
    assert len(per_relation) == len(relations)
    assert sum(row["queries"] for row in per_relation) == len(tiny_model.test_triples)
    count = PopularityScorer(tiny_model.triples, n_entities=tiny_model.n_entities, n_relations=tiny_model.n_relations)
    baseline = script.side_rows("count", count, tiny_model, per_relation=False)[0]
    assert baseline[1]["modal_top1_share"] == 1.0  # the count never reads the head
    assert baseline[1]["mrr"] == pytest.approx(link_prediction_sides(tiny_model)["tail"]["baseline_mrr"])


def test_a_model_whose_heads_are_zero_answers_every_query_of_a_relation_alike(script, tiny_model) -> None:
    """Rows of persons at 0 (the limit of a strong L2 term): psi(h, r, t) = ||r - t||^2 for every person h, so
    each relation's tail queries share one top-1; the trained model's do not."""
    test = tiny_model.test_triples
    trained = script.top1(pykeen_model(tiny_model), test, "tail")
    entities = tiny_model.entity_embeddings.clone()
    entities[test[:, 0].unique()] = 0
    flat = replace(tiny_model, weights={**tiny_model.weights, "entity_embeddings": entities})
    zeroed = script.top1(pykeen_model(flat), test, "tail")
    assert modal_share(zeroed, test[:, 1]) == 1.0
    assert zeroed.unique().numel() <= test[:, 1].unique().numel()
    assert modal_share(trained, test[:, 1]) < 1.0
    # the top-1 is the argmin over all entities of psi, here by a plain loop over the first queries
    for i in range(5):
        h, r, _ = test[i].tolist()
        q = entities[h] + tiny_model.relation_embeddings[r]
        assert int(zeroed[i]) == min(range(len(entities)), key=lambda e: float(((q - entities[e]) ** 2).sum()))
