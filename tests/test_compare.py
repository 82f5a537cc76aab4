"""The debiasing comparison table: each entry equals its measure computed on its own, for the original,
an IF-REMOVE and an Add what-if, the projection and the fairness-regularised model."""

from __future__ import annotations

import math

import pytest
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.data.graph import Gender
from kgbias_core.embeddings.pykeen_bridge import pykeen_model
from kgbias_core.embeddings.store import StoredModel
from kgbias_core.errors import COMPARE_NO_MODELS, COMPARE_OTHER_GRAPH, MeasureError
from kgbias_core.evaluation.link_prediction import link_prediction
from kgbias_core.measures.fisher import fisher_bias
from kgbias_core.measures.group_bias import group_bias
from kgbias_core.measures.groups import occupation_groups
from kgbias_core.measures.prediction_fairness import model_fairness
from kgbias_core.measures.relation_audit import translational_likelihood_bias
from kgbias_core.whatif.compare import SUMMARY_COLUMNS, comparison_table
from kgbias_core.whatif.edits import make_edit, retrain
from kgbias_core.whatif.projection import projected_model
from kgbias_core.whatif.regularised import regularised_model

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def models(tiny_model: StoredModel) -> list[StoredModel]:
    analysis = ModelAnalysis(tiny_model)
    target = occupation_groups(tiny_model).labels[1]
    if_remove = retrain(tiny_model, make_edit(analysis, target, strategy="if", k=30), name="tiny-if")
    add = retrain(tiny_model, make_edit(analysis, target, strategy="add", c=0.5), name="tiny-add")
    return [tiny_model, if_remove, add, projected_model(tiny_model, name="tiny-projected"),
            regularised_model(tiny_model, name="tiny-fair", weight=10.0, device=CPU)]


def test_table_entries_equal_the_measures_computed_one_by_one(models: list[StoredModel]) -> None:
    targets = list(occupation_groups(models[0]).labels[:2])
    table = comparison_table(models, occupations=targets)
    assert list(table["model"]) == [m.name for m in models]
    assert list(table["method"]) == ["original", "if-remove k=30", models[2].edit["strategy"], "project",
                                     "regularise w=10"]
    assert list(table.columns[-len(SUMMARY_COLUMNS):]) == list(SUMMARY_COLUMNS)
    for model, row in zip(models, table.to_dict("records"), strict=True):
        groups = occupation_groups(model)
        bias = group_bias(entity_embeddings=model.entity_embeddings, relation_embeddings=model.relation_embeddings,
                          groups=groups)
        defined = bias[~torch.isnan(bias)]
        assert row["mean_abs_group_bias"] == pytest.approx(float(defined.abs().mean()), rel=1e-6)
        module = pykeen_model(model, device="cpu")
        binary = ((groups.gender == Gender.MALE) | (groups.gender == Gender.FEMALE)).nonzero().squeeze(-1)
        b_p = fisher_bias(module, persons=binary, attribute_relation=groups.gender_relation, value_a=groups.male,
                          value_b=groups.female, occupation_relation=groups.occupation_relation,
                          professions=groups.occupations)
        for label in targets:
            i = groups.index(label)
            assert row[f"group_bias:{label}"] == pytest.approx(float(bias[i]), rel=1e-6, abs=1e-7)
            assert row[f"fisher_bp:{label}"] == pytest.approx(float(b_p[i]), rel=1e-3, abs=1e-6)
        assert row["mean_abs_fisher_bp"] == pytest.approx(float(b_p.abs().mean()), rel=1e-3)
        pairs = model.triples[model.triples[:, 1] == groups.gender_relation][:, [0, 2]].numpy()
        tlb = translational_likelihood_bias(module, person_values=pairs, attribute_relation=groups.gender_relation,
                                            occupation_relation=groups.occupation_relation,
                                            professions=groups.occupations.numpy())
        assert row["tlb_gender"] == pytest.approx(float(tlb.loc[~tlb["skipped"], "tlb"].mean()), rel=1e-9)
        fairness = model_fairness(model, n_bootstrap=20)  # a bootstrap: the estimates do not depend on it
        for column, measure in (("dpg", "DPG"), ("ppg", "PPG"), ("eog", "EOG")):
            expected = float(fairness.by_model[measure])
            assert (math.isnan(row[column]) and math.isnan(expected)) or row[column] == pytest.approx(expected)
        links = link_prediction(model, side="both")  # heads and tails pooled, as the comparison quotes it
        assert row["mrr"] == pytest.approx(links["mrr"]) and row["hits@10"] == pytest.approx(links["hits@10"])
    edited = [len(m.edit["removed"]) + m.edit["n_added_triples"] if m.edit else 0 for m in models]
    assert list(table["triples_edited"]) == edited
    assert edited[1] == 30 and edited[2] > 0 and edited[3] == edited[4] == 0
    assert table["seconds"].iloc[0] == 0 and (table["seconds"].iloc[1:] > 0).all()


def test_regularised_row_has_the_lowest_mean_absolute_group_bias(models: list[StoredModel]) -> None:
    table = comparison_table(models)
    assert table["mean_abs_group_bias"].idxmin() == 4


def test_bad_model_lists_are_refused_in_one_line(models: list[StoredModel], two_gender_model: StoredModel) -> None:
    with pytest.raises(MeasureError) as error:
        comparison_table([])
    assert str(error.value) == COMPARE_NO_MODELS
    with pytest.raises(MeasureError) as error:
        comparison_table([models[0], two_gender_model])
    assert str(error.value) == COMPARE_OTHER_GRAPH.format(
        model="two-genders", found="two-genders", found_hash=two_gender_model.data_hash[:12],
        expected=models[0].dataset, expected_hash=models[0].data_hash[:12])
