"""Debiasing edits (Du §4.3): exact Add and Remove edits, make_edit's strategies, faithful retraining."""

from __future__ import annotations

import pytest
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embeddings.store import load_model, save_model
from kgbias_core.errors import LAB_K_TOO_LARGE, UNKNOWN_EDIT_STRATEGY, MeasureError
from kgbias_core.influence.closed_form import debiasing_removal
from kgbias_core.influence.retraining_check import removal_set
from kgbias_core.tables import measures_table
from kgbias_core.whatif.edits import add_edit, make_edit, remove_edit, retrain


def pick_occupation(model) -> str:
    table = measures_table(ModelAnalysis(model), n_resamples=50)
    table = table[(table.n_male >= 5) & (table.n_female >= 5)]
    return table.loc[table.group_bias.abs().idxmax(), "occupation"]


def test_add_edit_adds_exactly_the_dummies(tiny_model) -> None:
    occupation = pick_occupation(tiny_model)
    row = measures_table(ModelAnalysis(tiny_model), n_resamples=50).set_index("occupation").loc[occupation]
    edit = add_edit(tiny_model, occupation, c=0.5)
    expected = round(0.5 * abs(row.n_male - row.n_female))
    assert len(edit.added_entities) == expected and len(edit.added_triples) == 2 * expected
    s = tiny_model.schema
    gender = tiny_model.entity_id(s.female if row.n_male > row.n_female else s.male)
    for i, (h, r, t) in enumerate(edit.added_triples):
        assert h == tiny_model.n_entities + i // 2
        assert (r, t) == ((tiny_model.relation_id(s.gender_relation), gender) if i % 2 == 0 else
                          (tiny_model.relation_id(s.occupation_relation), tiny_model.entity_id(occupation)))
    what_if = retrain(tiny_model, edit, name="add")
    assert what_if.triples.shape[0] == tiny_model.triples.shape[0] + 2 * expected
    assert torch.equal(what_if.triples[: tiny_model.triples.shape[0]], tiny_model.triples)
    assert what_if.n_entities == tiny_model.n_entities + expected
    # The dummies now count as persons of the occupation.
    after = measures_table(ModelAnalysis(what_if), n_resamples=50).set_index("occupation").loc[occupation]
    assert after.n_male + after.n_female == row.n_male + row.n_female + expected


def test_remove_edit_trains_on_exactly_the_rest_and_reloads(tiny_model, tmp_path) -> None:
    removed = torch.tensor([5, 1, 99, 5])
    edit = remove_edit(tiny_model, "nurse", removed, strategy="basket")
    assert edit.removed == (1, 5, 99)
    what_if = retrain(tiny_model, edit, name="rm")
    keep = torch.ones(tiny_model.triples.shape[0], dtype=torch.bool)
    keep[[1, 5, 99]] = False
    assert torch.equal(what_if.triples, tiny_model.triples[keep])
    assert torch.equal(what_if.negatives, tiny_model.negatives[keep])
    loaded = load_model(save_model(what_if, tmp_path))
    assert loaded.edit["removed"] == [1, 5, 99] and loaded.edit["mode"] == "scratch"
    assert loaded.info["base_model"] == tiny_model.name


def test_bad_edits_have_clear_messages(tiny_model) -> None:
    with pytest.raises(MeasureError, match="nothing to remove"):
        remove_edit(tiny_model, "nurse", torch.tensor([], dtype=torch.long), strategy="x")
    with pytest.raises(MeasureError, match="outside the model's"):
        remove_edit(tiny_model, "nurse", torch.tensor([10**7]), strategy="x")
    with pytest.raises(MeasureError, match="adds no dummy"):
        add_edit(tiny_model, pick_occupation(tiny_model), c=0.0)
    with pytest.raises(MeasureError, match="is not an occupation"):
        add_edit(tiny_model, "male")


def test_make_edit_builds_each_strategy_from_its_parts(tiny_model) -> None:
    occupation = pick_occupation(tiny_model)
    analysis = ModelAnalysis(tiny_model)
    influence = analysis.influence(occupation)
    bias = float(analysis.group_bias(occupation))

    removing = make_edit(analysis, occupation, strategy="if", k=7)
    assert removing.removed == tuple(sorted(debiasing_removal(influence, bias=bias, k=7).tolist()))
    assert removing.strategy == "if-remove k=7" and removing.kind == "remove"
    assert bias * float(influence[list(removing.removed)].sum()) < 0  # every pick moves B_gr towards 0

    random = make_edit(analysis, occupation, strategy="random", k=7, seed=3)
    assert random.removed == tuple(sorted(removal_set(influence, kind="random", k=7, seed=3).tolist()))
    assert random.strategy == "random-remove k=7"

    basket = make_edit(analysis, occupation, strategy="basket", indices=[9, 2, 9])
    assert basket.removed == (2, 9) and basket.strategy == "basket k=2"

    assert make_edit(analysis, occupation, strategy="add", c=0.5, cap=3) == add_edit(tiny_model, occupation, c=0.5,
                                                                                    cap=3)


def test_make_edit_refuses_a_too_large_k_and_an_unknown_strategy(tiny_model) -> None:
    analysis = ModelAnalysis(tiny_model)
    n = tiny_model.triples.shape[0]
    with pytest.raises(MeasureError) as info:
        make_edit(analysis, "nurse", strategy="random", k=n + 1)
    assert str(info.value) == LAB_K_TOO_LARGE.format(k=n + 1, n=n, model=tiny_model.name)
    with pytest.raises(MeasureError) as info:
        make_edit(analysis, "nurse", strategy="drop", k=1)  # type: ignore[arg-type]
    assert str(info.value) == UNKNOWN_EDIT_STRATEGY.format(strategy="drop", known="add, if, random, basket")


@pytest.mark.slow
def test_if_remove_moves_bias_towards_zero_more_than_random(tiny_model) -> None:
    occupation = pick_occupation(tiny_model)
    analysis = ModelAnalysis(tiny_model)
    before = float(analysis.group_bias(occupation))
    k = 20
    chosen = debiasing_removal(analysis.influence(occupation), bias=before, k=k)
    random = torch.randperm(tiny_model.triples.shape[0], generator=torch.Generator().manual_seed(0))[:k]
    results = {}
    for strategy, removed in (("if-remove", chosen), ("random-remove", random)):
        what_if = retrain(tiny_model, remove_edit(tiny_model, occupation, removed, strategy=strategy),
                          name=strategy)
        results[strategy] = float(ModelAnalysis(what_if).group_bias(occupation))
    assert abs(results["if-remove"]) < abs(before) - 0.02
    assert abs(results["if-remove"]) < abs(results["random-remove"])
