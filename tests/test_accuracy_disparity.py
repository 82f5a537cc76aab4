"""Accuracy against disparity (issue 28): MRR from the cached link prediction, mean |B_gr| by a naive loop."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch

from kgbias_core.accuracy_disparity import accuracy_disparity_table, mean_abs_group_bias
from kgbias_core.analysis import ModelAnalysis
from kgbias_core.evaluation.link_prediction import cached_link_prediction

from .conftest import naive_group_bias, naive_groups


def test_mean_abs_group_bias_over_the_large_enough_occupations_matches_a_naive_loop(tiny_model) -> None:
    analysis = ModelAnalysis(tiny_model)
    groups, _ = naive_groups(tiny_model)
    large = [o for o, (men, women) in groups.items() if len(men) >= 5 and len(women) >= 5]
    value, n = mean_abs_group_bias(analysis, minimum=5)
    assert n == len(large) > 0
    assert value == pytest.approx(sum(abs(naive_group_bias(tiny_model, o)) for o in large) / len(large), rel=1e-4)


def test_every_model_is_a_row_with_its_mrr_and_kind(tiny_model, tmp_path) -> None:
    from kgbias_core.embeddings.store import save_model

    path = save_model(tiny_model, tmp_path)
    prediction = cached_link_prediction(path)
    run = replace(tiny_model, name="run", edit={"kind": "remove", "strategy": "if-remove k=5", "occupation": "nurse"})
    table = accuracy_disparity_table({"tiny": ModelAnalysis(tiny_model), "run": ModelAnalysis(run)},
                                     {"tiny": prediction, "run": None})
    tiny, what_if = table.set_index("model").loc["tiny"], table.set_index("model").loc["run"]
    assert tiny["kind"] == "base" and what_if["kind"] == "what-if" and what_if["edit"] == "if-remove k=5"
    both = prediction[prediction["side"] == "both"].set_index("queries")  # heads and tails pooled
    assert tiny["mrr"] == pytest.approx(float(both.loc["all", "mrr"]))
    assert tiny["occupation_mrr"] == pytest.approx(float(both.loc["occupation", "mrr"]))
    assert math.isnan(what_if["mrr"])  # not computed yet: shown as missing, never as 0


def _naive_prediction_gaps(model) -> dict[str, float]:
    """Schwertmann's model-level EOG and DPG (Eq. 1, 3, 5) by plain loops: genders from every split, top-1 tails
    by scanning every entity's squared distance in float64, classes counted, recalls and selection rates per
    class and gender, the macro mean of the defined gaps."""
    labels, rels, s = model.entity_labels, model.relation_labels, model.schema
    splits = [model.triples, model.valid_triples, model.test_triples]
    every = [(labels[h], rels[r], labels[t]) for split in splits if split is not None for h, r, t in split.tolist()]
    genders: dict[str, set[str]] = {}
    for h, r, t in every:
        if r == s.gender_relation:
            genders.setdefault(h, set()).add(t)
    occupations = {t for _, r, t in every if r == s.occupation_relation}
    facts = [(labels[h], labels[t]) for h, r, t in model.test_triples.tolist()
             if rels[r] == s.occupation_relation and labels[h] in genders]
    min_count = max(2, min(100, round(100 * len(facts) / 1311)))  # Schwertmann §3.5 scaled to this test set
    count: dict[str, int] = {}
    for _, occupation in facts:
        count[occupation] = count.get(occupation, 0) + 1
    classes = {o for o, n in count.items() if n >= min_count} | {"OTHER"}
    E = model.entity_embeddings.double()
    r_p = model.relation_embeddings.double()[model.relation_id(s.occupation_relation)]
    rows = []  # (gender, true class, predicted class)
    for person, occupation in facts:
        gender = {frozenset({s.male}): "male", frozenset({s.female}): "female"}.get(frozenset(genders[person]))
        if gender is None:
            continue
        distances = ((E[model.entity_id(person)] + r_p - E) ** 2).sum(dim=1)
        top = labels[int(torch.argmin(distances))]
        predicted = top if top in classes else "OTHER" if top in occupations else "no occupation"
        rows.append((gender, occupation if occupation in classes else "OTHER", predicted))
    eog, dpg = [], []
    for c in classes:
        recall, selection = {}, {}
        for gender in ("male", "female"):
            mine = [(t, p) for g, t, p in rows if g == gender]
            true = [p for t, p in mine if t == c]
            if true:
                recall[gender] = sum(p == c for p in true) / len(true)
            if mine:
                selection[gender] = sum(p == c for _, p in mine) / len(mine)
        if len(recall) == 2:
            eog.append(abs(recall["male"] - recall["female"]))
        if len(selection) == 2:
            dpg.append(abs(selection["male"] - selection["female"]))
    return {"eog": sum(eog) / len(eog), "dpg": sum(dpg) / len(dpg), "n_classes": len(eog)}


def test_the_fairness_gaps_are_schwertmanns_eog_and_dpg_computed_by_hand(tiny_model) -> None:
    """Issue 28's "fairness gap" beside mean |B_gr|: the model-level EOG and DPG of the top-1 occupation
    predictions, against plain loops over the synthetic graph's test facts."""
    table = accuracy_disparity_table({"tiny": ModelAnalysis(tiny_model)}, {"tiny": None})
    row = table.set_index("model").loc["tiny"]
    expected = _naive_prediction_gaps(tiny_model)
    assert expected["n_classes"] >= 2  # more than OTHER alone: the gap compares occupations
    assert row["eog"] == pytest.approx(expected["eog"], abs=1e-9)
    assert row["dpg"] == pytest.approx(expected["dpg"], abs=1e-9)
    assert row["n_fairness_classes"] == expected["n_classes"]
    assert 0 <= row["ppg"] <= 1 and not row["degenerate_predictor"]


def test_a_model_without_test_facts_has_no_gap_rather_than_zero(tiny_model) -> None:
    bare = replace(tiny_model, name="bare", test_triples=None)
    row = accuracy_disparity_table({"bare": ModelAnalysis(bare)}, {"bare": None}).iloc[0]
    assert math.isnan(row["eog"]) and math.isnan(row["dpg"]) and row["n_fairness_classes"] == 0
    assert not math.isnan(row["mean_abs_group_bias"])  # B_gr needs no test split


def test_a_debiased_model_is_its_own_kind(tiny_model) -> None:
    from kgbias_core.whatif.projection import projected_model

    projected = projected_model(tiny_model, name="tiny-projected")
    row = accuracy_disparity_table({"p": ModelAnalysis(projected)}, {"p": None}).iloc[0]
    assert row["kind"] == "debiased" and row["edit"] == "project"
