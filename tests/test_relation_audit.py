"""Keidar et al.'s relation audit (kgbias_core.measures.relation_audit) against direct calls, and per stored model."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch
from pykeen.models import TransE
from pykeen.triples import TriplesFactory

from kgbias_core import errors
from kgbias_core.cli import main
from kgbias_core.embeddings.config import TrainConfig
from kgbias_core.embeddings.store import save_model
from kgbias_core.embeddings.training import train_model
from kgbias_core.measures.fisher import fisher_bias
from kgbias_core.measures.occupation_classifier import entity_feature_matrix
from kgbias_core.measures.parity import demographic_parity_distance, parity_counts
from kgbias_core.measures.relation_audit import (
    AUDIT_MEASURES,
    audit_from_values,
    audit_long,
    audit_relations,
    audit_table,
    audit_wide,
    cached_value_audit,
    classifier_table,
    default_min_persons,
    load_value_audit,
    model_audit,
    model_value_audit,
    relation_value_biases,
    relation_values,
    sensitive_relations,
    translational_likelihood_bias,
    value_table,
)

torch.set_num_threads(1)

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
    counts = parity_counts(y_true=y_true[having], y_pred=y_pred[having], group=np.where(sensitive, 0, 1),
                           classes=np.arange(3))
    expected = demographic_parity_distance(counts).value
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


def test_audit_command(tiny_model, distmult, tmp_path) -> None:
    paths = [str(save_model(m, tmp_path)) for m in (tiny_model, distmult)]
    assert main(["audit", "--models", *paths, "--min-persons", "5", "--out", str(tmp_path / "a.csv")]) == 0
    assert set(pd.read_csv(tmp_path / "a.csv").model) == {"tiny-transe", "tiny-distmult"}


def test_value_audit_averages_to_the_relation_audit_and_is_cached(tiny_model, tmp_path) -> None:
    path = save_model(tiny_model, tmp_path)
    assert load_value_audit(path, k=5, kind="random_forest", min_persons=5) is None
    values = cached_value_audit(path, min_persons=5)
    assert {"value", "value_name", "n_persons", "accuracy", "balanced_accuracy"} <= set(values.columns)
    pd.testing.assert_frame_equal(audit_from_values(values), model_audit(tiny_model, min_persons=5),
                                  check_dtype=False)
    cached = load_value_audit(path, k=5, kind="random_forest", min_persons=5)
    pd.testing.assert_frame_equal(cached, values, check_dtype=False)


def test_value_audit_reports_progress_and_stops_between_relations(tiny_model) -> None:
    steps: list[tuple[int, int, str]] = []
    with pytest.raises(errors.CancelledError, match="tiny-transe cancelled by the user after 1 of 3 relations"):
        model_value_audit(tiny_model, min_persons=5, on_step=lambda *step: steps.append(step),
                          should_stop=lambda: len(steps) == 1)
    assert steps == [(0, 3, "gender")]


def test_comparison_tables_of_two_models_value_audits(tiny_model, tmp_path) -> None:
    values = cached_value_audit(save_model(tiny_model, tmp_path), min_persons=5)
    audits = {"one": values, "two": values.assign(bias=values["bias"] * 2)}
    wide = audit_wide(audits)
    assert list(wide["relation"]) == ["gender", "nationality", "birthplace"]
    assert list(wide.columns[1:]) == [f"{m} · {n}" for m in AUDIT_MEASURES for n in ("one", "two")]
    long = audit_from_values(values).set_index(["relation", "measure"])["bias"]
    for relation in wide["relation"]:
        row = wide.set_index("relation").loc[relation]
        for measure in AUDIT_MEASURES:
            assert row[f"{measure} · one"] == pytest.approx(long[(relation, measure)], nan_ok=True)
            assert row[f"{measure} · two"] == pytest.approx(2 * long[(relation, measure)], nan_ok=True)
    assert len(audit_long(audits)) == 2 * len(long)
    gender = value_table(audits, "gender")
    assert set(gender["value"]) == {"male", "female", "nonbinary"}
    assert gender["n_persons"].is_monotonic_decreasing
    assert len(relation_values(audits, "gender")) == 2 * len(values[values["relation"] == "gender"])
    classifiers = classifier_table(audits)
    assert list(classifiers["model"]) == ["one", "two"] and classifiers["accuracy"].between(0, 1).all()
    assert default_min_persons(272_115) == 10 and default_min_persons(3_000) == 5
