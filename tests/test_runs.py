"""Judging a what-if: bias change of every occupation, link prediction, the cached noise band."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
import torch

from kgbias_core import tasks
from kgbias_core.analysis import ModelAnalysis
from kgbias_core.data.synthetic import generate_people_graph
from kgbias_core.embeddings.results import load_result
from kgbias_core.embeddings.store import (
    load_model,
    model_fingerprint,
    save_model,
)
from kgbias_core.embeddings.training import train_model
from kgbias_core.evaluation.link_prediction import link_prediction
from kgbias_core.influence.scale import Calibration
from kgbias_core.jobs import Progress
from kgbias_core.whatif import runs as runs_module
from kgbias_core.whatif.edits import make_edit
from kgbias_core.whatif.runs import bias_change, is_stale, noise_band, noise_spread, random_baseline

from .conftest import TINY_GRAPH, TINY_TRAINING


def test_comparison_link_prediction_and_cached_noise_band(tiny_model, tmp_path) -> None:
    path = save_model(tiny_model, tmp_path)
    metrics = link_prediction(tiny_model)
    occupation_metrics = link_prediction(tiny_model, occupation_only=True)
    assert 0 < metrics["mrr"] <= 1 and 0 < occupation_metrics["hits@10"] <= 1
    assert occupation_metrics["n"] < metrics["n"]
    band = noise_band(tiny_model, model_dir=path, seeds=(11,))
    assert (band["spread"].dropna() >= 0).all() and band["spread"].max() > 0
    assert load_result(path, "noise_band", params={"seeds": [11]}) is not None
    assert load_result(path, "noise_band", params={"seeds": [12]}) is None  # other params: recompute
    analysis = ModelAnalysis(tiny_model)
    same = bias_change(analysis, analysis)
    assert (same["change"].dropna() == 0).all()


def test_noise_spread_and_random_baseline_read_the_stored_tables() -> None:
    band = pd.DataFrame({"occupation": ["nurse", "pilot"], "spread": [0.02, float("nan")]})
    assert noise_spread(band, "nurse") == 0.02
    assert noise_spread(band, "judge") is None and noise_spread(None, "nurse") is None
    curve = pd.DataFrame({"strategy": ["IF-REMOVE", "Random-REMOVE", "IF-REMOVE", "Random-REMOVE", "Random-REMOVE"],
                          "k": [0, 0, 20, 20, 50], "group_bias": [0.3, 0.3, 0.1, 0.29, 0.31]})
    k, change = random_baseline(curve, k=40)
    assert k == 50 and change == pytest.approx(0.01)  # the nearest random k
    assert random_baseline(curve, k=0) is None and random_baseline(None, k=5) is None
    assert random_baseline(curve[curve["strategy"] == "IF-REMOVE"], k=5) is None
def test_a_whatif_of_a_base_retrained_on_other_data_is_stale(tiny_graph, tmp_path) -> None:
    base = tmp_path / "base"
    config = replace(TINY_TRAINING, epochs=3)
    save_model(train_model(tiny_graph, config, name="base", device=torch.device("cpu")), tmp_path)
    edit = make_edit(ModelAnalysis(load_model(base)), "nurse", strategy="basket", indices=[1, 2])
    run = Path(tasks.whatif_task(base=base, edit=edit, out=tmp_path / "run").run(Progress()))
    assert load_model(run).edit["base"] == model_fingerprint(base)
    assert not is_stale(run, base)
    calibration = Calibration(scale=0.5, low=0.4, high=0.6, occupations=("a", "b", "c"), per_occupation=(0.4, 0.5, 0.6))
    tasks.store_calibration(base, calibration)  # calibrating the base leaves its weights, and the run, as they were
    assert not is_stale(run, base)
    other = generate_people_graph(replace(TINY_GRAPH, seed=8))  # the same name, retrained on other data
    save_model(train_model(other, config, name="base", device=torch.device("cpu")), tmp_path, overwrite=True)
    assert is_stale(run, base)
    assert is_stale(run, tmp_path / "deleted-base")


def test_a_whatif_of_a_base_retrained_with_another_config_is_stale(tiny_model, tmp_path) -> None:
    base = save_model(tiny_model, tmp_path)
    edit = make_edit(ModelAnalysis(tiny_model), "nurse", strategy="basket", indices=[1, 2])
    run = Path(tasks.whatif_task(base=base, edit=edit, out=tmp_path / "run").run(Progress()))
    assert not is_stale(run, base)
    save_model(replace(tiny_model, config=replace(tiny_model.config, seed=99)), tmp_path, overwrite=True)
    assert is_stale(run, base)
    assert is_stale(base, base)  # not a what-if at all: nothing vouches for it


# --- who is in the group after an edit (issue 28) -------------------------------------------------
def _labelled(model, keep=None) -> list[tuple[str, str, str]]:
    rows = model.triples.tolist()
    return [(model.entity_labels[h], model.relation_labels[r], model.entity_labels[t])
            for i, (h, r, t) in enumerate(rows) if keep is None or i in keep]


def _naive_counts(triples: list[tuple[str, str, str]], schema, occupation: str) -> tuple[int, int]:
    genders: dict[str, set[str]] = {}
    for h, r, t in triples:
        if r == schema.gender_relation:
            genders.setdefault(h, set()).add(t)
    holders = {h for h, r, t in triples if r == schema.occupation_relation and t == occupation}
    return (sum(genders.get(p) == {schema.male} for p in holders),
            sum(genders.get(p) == {schema.female} for p in holders))


def test_an_edit_states_the_persons_it_removes_or_relabels_against_a_naive_count(tiny_model) -> None:
    analysis = ModelAnalysis(tiny_model)
    s, labels, relations = tiny_model.schema, tiny_model.entity_labels, tiny_model.relation_labels
    occupation = "actor"
    rows = tiny_model.triples.tolist()
    facts = [i for i, (h, r, t) in enumerate(rows) if relations[r] == s.occupation_relation and labels[t] == occupation]
    holders = [labels[rows[i][0]] for i in facts]
    # Two persons lose their actor fact; a third keeps it and loses its gender fact (as Carl Reiner's).
    kept_person = holders[2]
    gender_fact = next(i for i, (h, r, t) in enumerate(rows)
                       if labels[h] == kept_person and relations[r] == s.gender_relation)
    removed = (facts[0], facts[1], gender_fact)
    found = membership = runs_module.edit_membership(analysis, occupation, removed=removed)
    assert (membership.n_profession_facts, membership.n_gender_facts) == (2, 1)
    assert (membership.n_removed, membership.n_relabelled) == (2, 1) and membership.changes_groups
    before = _naive_counts(_labelled(tiny_model), s, occupation)
    after = _naive_counts(_labelled(tiny_model, keep=set(range(len(rows))) - set(removed)), s, occupation)
    assert (found.n_male_before, found.n_female_before) == before
    assert (found.n_male_after, found.n_female_after) == after
    assert sum(before) - sum(after) == 3
    untouched = runs_module.edit_membership(analysis, occupation, removed=(0,))  # a city's located_in
    assert not untouched.changes_groups and (untouched.n_male_after, untouched.n_female_after) == before


def test_bias_change_shows_b_gr_after_over_the_original_persons_too(tiny_model) -> None:
    """Same embeddings, triples with profession facts removed: over the edited graph's groups B_gr moves
    (persons left); over the original persons it does not (nothing in the embedding moved)."""
    s, relations = tiny_model.schema, tiny_model.relation_labels
    rows = tiny_model.triples.tolist()
    actor = tiny_model.entity_id("actor")
    facts = [i for i, (h, r, t) in enumerate(rows) if relations[r] == s.occupation_relation and t == actor]
    keep = torch.ones(len(rows), dtype=torch.bool)
    keep[facts[: len(facts) // 2]] = False
    edited = replace(tiny_model, name="edited", triples=tiny_model.triples[keep], negatives=tiny_model.negatives[keep])
    base = ModelAnalysis(tiny_model)
    frame = bias_change(base, ModelAnalysis(edited)).set_index("occupation")
    row = frame.loc["actor"]
    assert row["group_bias_after_original"] == pytest.approx(row["group_bias_before"], abs=1e-6)
    assert abs(row["change"]) > 1e-4 and row["change_original"] == pytest.approx(0, abs=1e-6)
    assert (row["n_male_after"], row["n_female_after"]) == _naive_counts(
        _labelled(tiny_model, keep=set(keep.nonzero().squeeze(-1).tolist())), s, "actor")
    assert "Du" in runs_module.AFTER_GROUPS_CHOICE
