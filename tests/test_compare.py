"""Model comparison glue: relation audit and prediction fairness on stored models, and their CLI."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from kgbias_core.cli import main
from kgbias_core.compare import audit_table, model_fairness, occupation_test_facts, sensitive_relations
from kgbias_core.embeddings.config import TrainConfig
from kgbias_core.embeddings.store import save_model
from kgbias_core.embeddings.training import train_model


@pytest.fixture(scope="module")
def distmult(tiny_graph):
    config = TrainConfig(model="distmult", dim=16, epochs=3, batch_size=256, lr=1e-2, seed=1)
    return train_model(tiny_graph, config, name="tiny-distmult")


def test_sensitive_relations_come_from_the_schema(tiny_model) -> None:
    assert list(sensitive_relations(tiny_model)) == ["gender", "nationality", "birthplace"]
    bare = replace(tiny_model, schema=replace(tiny_model.schema, attributes=()))
    found = sensitive_relations(bare)
    assert "nationality" in found and "born_in" in found  # person-headed, few values
    assert "created" not in found  # thousands of tail values: not an attribute


def test_audit_table_covers_relations_measures_models(tiny_model, distmult) -> None:
    table = audit_table([tiny_model, distmult], min_persons=5)
    assert set(table.model) == {"tiny-transe", "tiny-distmult"}
    assert set(table.measure) == {"DPD", "PPD", "TLB"}
    assert table.groupby("model").relation.nunique().eq(3).all()
    assert np.isfinite(table.bias).all() and (table.bias >= 0).all()
    assert table.classifier_accuracy.between(0, 1).all()


def test_fairness_uses_test_occupation_facts_of_persons_with_gender(tiny_model) -> None:
    facts, gender = occupation_test_facts(tiny_model)
    assert len(facts) == len(gender) > 0
    occupation = tiny_model.relation_id(tiny_model.schema.occupation_relation)
    assert (facts[:, 1] == occupation).all()
    report = model_fairness(tiny_model, min_count=5, n_bootstrap=50)
    assert report.n_facts + report.n_dropped_gender == len(facts)
    assert set(report.by_group.index) == {"male", "female"}


def test_audit_and_fairness_commands(tiny_model, distmult, tmp_path) -> None:
    paths = [str(save_model(m, tmp_path)) for m in (tiny_model, distmult)]
    assert main(["audit", "--models", *paths, "--min-persons", "5", "--out", str(tmp_path / "a.csv")]) == 0
    assert set(pd.read_csv(tmp_path / "a.csv").model) == {"tiny-transe", "tiny-distmult"}
    assert main(["fairness", "--models", *paths, "--min-count", "5", "--bootstrap", "20",
                 "--out", str(tmp_path / "f.csv")]) == 0
    frame = pd.read_csv(tmp_path / "f.csv")
    assert {"model", "class", "group", "class_name"} <= set(frame.columns)


def test_link_prediction_is_cached_beside_the_model(tiny_model, tmp_path) -> None:
    from kgbias_core.compare import cached_link_prediction

    path = save_model(tiny_model, tmp_path)
    first = cached_link_prediction(path)
    assert list(first.queries) == ["all", "occupation"] and first.mrr.between(0, 1).all()
    assert (path / "results" / "link_prediction.csv").is_file()
    (path / "results" / "link_prediction.csv").write_text(first.assign(mrr=0.5).to_csv(index=False))
    assert (cached_link_prediction(path).mrr == 0.5).all()  # read from the cache, not recomputed


def test_value_audit_averages_to_the_relation_audit_and_is_cached(tiny_model, tmp_path) -> None:
    from kgbias_core.compare import audit_from_values, cached_value_audit, load_value_audit, model_audit

    path = save_model(tiny_model, tmp_path)
    assert load_value_audit(path, k=5, kind="random_forest", min_persons=5) is None
    values = cached_value_audit(path, min_persons=5)
    assert {"value", "value_name", "n_persons", "accuracy", "balanced_accuracy"} <= set(values.columns)
    pd.testing.assert_frame_equal(audit_from_values(values), model_audit(tiny_model, min_persons=5),
                                  check_dtype=False)
    cached = load_value_audit(path, k=5, kind="random_forest", min_persons=5)
    pd.testing.assert_frame_equal(cached, values, check_dtype=False)
