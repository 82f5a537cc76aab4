"""Seed families (issue 24): N seeds of one config as ordinary models, the seed band of every measure against
the members' own tables, readings that state a lean only when the bootstrap interval and the band exclude 0."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
import torch

from kgbias_core import readings
from kgbias_core.analysis import ModelAnalysis
from kgbias_core.cli import main
from kgbias_core.data.graph import KnowledgeGraph
from kgbias_core.embeddings.store import load_model
from kgbias_core.families import (
    SEED_BAND_MEASURES,
    family_members,
    family_seed_band,
    seed_band,
    train_family,
)
from kgbias_core.tables import measures_table
from tests.conftest import TINY_TRAINING, page, texts, use_store

#: Few epochs: three seeds train in about a second and their B_gr spread widely (a band that often crosses 0).
FAMILY_TRAINING = replace(TINY_TRAINING, epochs=6)
SEEDS = (0, 1, 2)


@pytest.fixture(scope="module")
def family_store(tmp_path_factory: pytest.TempPathFactory, tiny_graph: KnowledgeGraph) -> Path:
    """A store holding the family ``fam`` of 3 seeds (read-only for tests)."""
    store = tmp_path_factory.mktemp("family")
    train_family(tiny_graph, FAMILY_TRAINING, name="fam", seeds=SEEDS, store=store, device=torch.device("cpu"))
    return store


@pytest.fixture(scope="module")
def member_tables(family_store: Path) -> list[pd.DataFrame]:
    return [measures_table(ModelAnalysis(load_model(family_store / f"fam-s{s}"))) for s in SEEDS]


def test_each_seed_is_an_ordinary_model_with_the_family_record(family_store: Path) -> None:
    for seed in SEEDS:
        model = load_model(family_store / f"fam-s{seed}")
        assert replace(model.config, damping=None) == replace(FAMILY_TRAINING, seed=seed)
        assert model.info["family"] == {"name": "fam", "seeds": list(SEEDS),
                                        "members": ["fam-s0", "fam-s1", "fam-s2"]}
    assert family_members(family_store / "fam-s1") == [family_store / f"fam-s{s}" for s in SEEDS]


def test_family_training_is_deterministic(family_store: Path, tiny_graph: KnowledgeGraph, tmp_path: Path) -> None:
    again = train_family(tiny_graph, FAMILY_TRAINING, name="fam", seeds=SEEDS, store=tmp_path,
                         device=torch.device("cpu"))
    for seed, path in zip(SEEDS, again, strict=True):
        first, second = load_model(family_store / f"fam-s{seed}"), load_model(path)
        assert first.weights.keys() == second.weights.keys()
        assert all(torch.equal(first.weights[k], second.weights[k]) for k in first.weights)
        assert torch.equal(first.negatives, second.negatives)
    # different seeds: different models
    s0, s1 = load_model(family_store / "fam-s0"), load_model(family_store / "fam-s1")
    assert not torch.equal(s0.entity_embeddings, s1.entity_embeddings)


def test_seed_band_is_the_spread_of_the_members_own_measures(family_store: Path,
                                                             member_tables: list[pd.DataFrame]) -> None:
    band = family_seed_band(family_store / "fam-s0").set_index("occupation")
    assert set(band["family"]) == {"fam"}
    for occupation in band.index:
        for measure in SEED_BAND_MEASURES:
            values = [float(t.set_index("occupation").loc[occupation, measure]) for t in member_tables]
            values = [v for v in values if v == v]  # NaN (no woman or no man) is skipped
            if len(values) < 2:
                continue
            assert band.loc[occupation, f"{measure}_seed_min"] == min(values)
            assert band.loc[occupation, f"{measure}_seed_max"] == max(values)
            mean = sum(values) / len(values)
            std = (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5
            assert band.loc[occupation, f"{measure}_seed_std"] == pytest.approx(std, rel=1e-9, abs=1e-12)
    assert band.loc["mathematician", "n_seeds"] == 0  # no woman in any seed: B_gr undefined, no band


def test_seed_band_of_hand_made_tables() -> None:
    def table(value: float) -> pd.DataFrame:
        return pd.DataFrame({"occupation": ["a", "b"], "group_bias": [value, float("nan")]})

    band = seed_band([table(1.0), table(-0.5), table(2.0)], measures=("group_bias",)).set_index("occupation")
    assert (band.loc["a", "group_bias_seed_min"], band.loc["a", "group_bias_seed_max"]) == (-0.5, 2.0)
    assert band.loc["a", "group_bias_seed_std"] == pytest.approx(pd.Series([1.0, -0.5, 2.0]).std())
    assert band.loc["b", "n_seeds"] == 0 and pd.isna(band.loc["b", "group_bias_seed_min"])


def test_a_model_of_no_family_has_no_band(tiny_store: Path) -> None:
    assert family_members(tiny_store / "tiny-transe") is None
    assert family_seed_band(tiny_store / "tiny-transe") is None


def test_a_sentence_states_a_lean_only_when_interval_and_band_exclude_zero() -> None:
    crossing = readings.sentence("group_bias", 0.3, 0.1, 0.5, seed_min=-0.05, seed_max=0.4, n_seeds=3)
    assert crossing.startswith("No clear lean across seeds") and "leans male" not in crossing
    assert "-0.050 to +0.400" in crossing and "3 seeds" in crossing
    agreeing = readings.sentence("group_bias", 0.3, 0.1, 0.5, seed_min=0.2, seed_max=0.4, n_seeds=3)
    assert agreeing.startswith(readings.SENTENCES["group_bias"][0][:-1]) and "+0.200 to +0.400 over 3 seeds" in agreeing
    # without a family, the interval alone decides, as before
    assert readings.sentence("group_bias", 0.3, 0.1, 0.5) == readings.sentence("group_bias", 0.3, 0.1, 0.5,
                                                                                 seed_min=None, seed_max=None)
    assert readings.lean(0.3, 0.1, 0.5, seed_min=-0.05, seed_max=0.4) == "none"
    assert readings.lean(0.3, 0.1, 0.5, seed_min=0.05, seed_max=0.4) == "male"
    row = {"group_bias": 0.3, "group_bias_low": 0.1, "group_bias_high": 0.5, "group_bias_seed_min": -0.1,
           "group_bias_seed_max": 0.4, "n_seeds": 3, "projection_bias": 0.0, "fisher_bp": float("nan"),
           "individual_bias_vanilla": float("nan"), "individual_bias_weighted": float("nan")}
    parts = readings.agreement(row).split(":**", 1)[1].split(". Undefined")[0].split("; ")
    assert "B_gr" in next(part for part in parts if "no clear lean" in part)
    assert not any("male" in part for part in parts)


def _first(band_rows: pd.DataFrame, *, crosses: bool) -> str:
    """An occupation whose B_gr interval excludes 0 and whose seed band crosses 0 (or excludes it too)."""
    interval_excludes = (band_rows["group_bias_low"] > 0) | (band_rows["group_bias_high"] < 0)
    band_crosses = (band_rows["group_bias_seed_min"] <= 0) & (band_rows["group_bias_seed_max"] >= 0)
    chosen = band_rows[interval_excludes & (band_crosses if crosses else ~band_crosses)
                       & (band_rows["n_seeds"] >= 2)]
    assert len(chosen), "the tiny family has no such occupation"
    return str(chosen["occupation"].iloc[0])


def test_explorer_headline_is_silent_where_the_seed_band_crosses_zero(family_store: Path, member_tables,
                                                                      monkeypatch, tmp_path: Path) -> None:
    use_store(family_store, monkeypatch, tmp_path)
    rows = member_tables[0].merge(family_seed_band(family_store / "fam-s0"), on="occupation")
    crossing, agreeing = _first(rows, crosses=True), _first(rows, crosses=False)
    app = page("occupation_explorer").run()
    assert not app.exception
    app.selectbox(key="occupation").set_value(crossing).run()
    assert not app.exception
    shown = texts(app.caption)
    assert "No clear lean across seeds" in shown
    assert not any(sentence[:40] in shown for sentence in readings.SENTENCES["group_bias"])
    assert "one of 3 seeds of family" in texts(app.info)
    app.selectbox(key="occupation").set_value(agreeing).run()
    assert "Every seed of its family agrees" in texts(app.caption)


def test_overview_of_a_family_member_shows_the_seed_band_columns(family_store: Path, monkeypatch,
                                                                  tmp_path: Path) -> None:
    use_store(family_store, monkeypatch, tmp_path)
    app = page("overview").run()
    assert not app.exception
    assert "one of 3 seeds of family" in texts(app.info)
    ranked = app.dataframe[0].value
    assert {"B_gr seed min", "B_gr seed max", "B_gr seed std"} <= set(ranked.columns)


def test_cli_trains_a_family_and_measures_carry_its_band(tmp_path: Path, monkeypatch) -> None:
    from kgbias_core import tasks

    monkeypatch.setattr(tasks.training, "train_config", lambda dataset: FAMILY_TRAINING)
    out = tmp_path / "store" / "syn"
    assert main(["train", "--dataset", "synthetic", "--seeds", "2", "--seed", "5", "--out", str(out)]) == 0
    members = [tmp_path / "store" / "syn-s5", tmp_path / "store" / "syn-s6"]
    assert all((m / "config.json").is_file() for m in members) and not out.exists()
    assert json.loads((members[1] / "config.json").read_text())["family"]["members"] == ["syn-s5", "syn-s6"]
    csv = tmp_path / "m.csv"
    assert main(["measures", "--model", str(members[0]), "--out", str(csv)]) == 0
    frame = pd.read_csv(csv)
    tables = [measures_table(ModelAnalysis(load_model(m))) for m in members]
    expected = seed_band(tables).set_index("occupation")
    got = frame.set_index("occupation")
    pd.testing.assert_series_equal(got["group_bias_seed_max"], expected["group_bias_seed_max"], check_names=False)
    assert (got["family"] == "syn").all()
    assert main(["train", "--dataset", "synthetic", "--seeds", "1", "--out", str(out)]) == 2
    assert main(["train", "--dataset", "synthetic", "--seeds", "2", "--calibrate", "--out", str(out)]) == 2
