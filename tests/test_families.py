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
from tests.conftest import FAMILY_MEMBERS as MEMBERS
from tests.conftest import FAMILY_SEEDS as SEEDS
from tests.conftest import FAMILY_TRAINING, page, texts, use_store


@pytest.fixture(scope="module")
def member_tables(family_store: Path) -> list[pd.DataFrame]:
    return [measures_table(ModelAnalysis(load_model(family_store / m))) for m in MEMBERS]


def test_each_seed_is_an_ordinary_model_with_the_family_record(family_store: Path) -> None:
    for seed, member in zip(SEEDS, MEMBERS, strict=True):
        model = load_model(family_store / member)
        assert replace(model.config, damping=None) == replace(FAMILY_TRAINING, seed=seed)
        assert model.info["family"] == {"name": "fam", "seeds": list(SEEDS), "members": list(MEMBERS)}
    assert family_members(family_store / "fam-s1") == [family_store / m for m in MEMBERS]


def test_family_training_is_deterministic(family_store: Path, tiny_graph: KnowledgeGraph, tmp_path: Path) -> None:
    again = train_family(tiny_graph, FAMILY_TRAINING, name="fam", seeds=SEEDS, store=tmp_path,
                         device=torch.device("cpu"))
    for member, path in zip(MEMBERS, again, strict=True):
        first, second = load_model(family_store / member), load_model(path)
        assert first.weights.keys() == second.weights.keys()
        assert all(torch.equal(first.weights[k], second.weights[k]) for k in first.weights)
        assert torch.equal(first.negatives, second.negatives)
    # different seeds: different models
    s0, s1 = load_model(family_store / "fam"), load_model(family_store / "fam-s1")
    assert not torch.equal(s0.entity_embeddings, s1.entity_embeddings)


def test_seed_band_is_the_spread_of_the_members_own_measures(family_store: Path,
                                                             member_tables: list[pd.DataFrame]) -> None:
    band = family_seed_band(family_store / "fam").set_index("occupation")
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
    rows = member_tables[0].merge(family_seed_band(family_store / "fam"), on="occupation")
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
    members = [out, tmp_path / "store" / "syn-s6"]  # the first seed keeps the plain name
    assert all((m / "config.json").is_file() for m in members)
    assert json.loads((members[1] / "config.json").read_text())["family"]["members"] == ["syn", "syn-s6"]
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


def test_a_default_model_gains_its_siblings_and_keeps_its_cached_results(tiny_graph: KnowledgeGraph,
                                                                        tmp_path: Path) -> None:
    """The naming of issue 24: the first seed's model keeps its plain name, so a graph's default model already in
    the store is the family's first member as it stands (not retrained), and only its siblings are trained."""
    from kgbias_core.embeddings.results import load_result, save_result
    from kgbias_core.embeddings.store import save_model
    from kgbias_core.embeddings.training import train_model
    from kgbias_core.families import family_record

    solo = save_model(train_model(tiny_graph, FAMILY_TRAINING, name="solo", device=torch.device("cpu")), tmp_path)
    before = load_model(solo)
    probe = pd.DataFrame({"x": [1.0]})
    save_result(solo, "probe", probe, params={"p": 1})
    calls = []
    seeds = [FAMILY_TRAINING.seed, FAMILY_TRAINING.seed + 1]
    paths = train_family(tiny_graph, FAMILY_TRAINING, name="solo", seeds=seeds, store=tmp_path,
                         device=torch.device("cpu"), on_member=lambda *call: calls.append(call))
    sibling = tmp_path / f"solo-s{seeds[1]}"
    assert paths == [solo, sibling] and calls == [(sibling.name, 0, 1)]  # one training: the sibling's
    after = load_model(solo)
    assert all(torch.equal(before.weights[k], after.weights[k]) for k in before.weights)
    assert load_result(solo, "probe", params={"p": 1}) is not None  # the record is not part of the fingerprint
    record = family_record("solo", seeds)
    assert record["members"] == ["solo", sibling.name]
    assert after.info["family"] == record == load_model(sibling).info["family"]
    assert family_members(solo) == [solo, sibling]
    # Asked again: nothing to train, nothing changes.
    again = train_family(tiny_graph, FAMILY_TRAINING, name="solo", seeds=seeds, store=tmp_path,
                         device=torch.device("cpu"), on_member=lambda *call: calls.append(call))
    assert again == paths and len(calls) == 1


def test_a_member_name_holding_another_model_is_refused_before_any_training(tiny_graph: KnowledgeGraph,
                                                                            tmp_path: Path) -> None:
    from kgbias_core.embeddings.store import save_model
    from kgbias_core.embeddings.training import train_model
    from kgbias_core.errors import FAMILY_MEMBER_DIFFERS, ModelStoreError

    other = replace(FAMILY_TRAINING, epochs=2)
    save_model(train_model(tiny_graph, other, name="solo", device=torch.device("cpu")), tmp_path)
    calls = []
    with pytest.raises(ModelStoreError) as error:
        train_family(tiny_graph, FAMILY_TRAINING, name="solo", seeds=[FAMILY_TRAINING.seed, 9], store=tmp_path,
                     device=torch.device("cpu"), on_member=lambda *call: calls.append(call))
    assert str(error.value) == FAMILY_MEMBER_DIFFERS.format(path=tmp_path / "solo", family="solo",
                                                            seed=FAMILY_TRAINING.seed)
    assert calls == [] and not (tmp_path / "solo-s9").exists() and "family" not in load_model(tmp_path / "solo").info


def test_a_whatif_of_a_member_borrows_no_seed_band(family_store: Path, tmp_path: Path) -> None:
    """A what-if copies its base's info, the family record with it: it is no member, and has no band."""
    import shutil

    from kgbias_core.embeddings.store import save_model

    store = tmp_path / "store"
    shutil.copytree(family_store, store)
    base = load_model(store / "fam")
    save_model(replace(base, name="fam-whatif", edit={"kind": "remove", "occupation": "nurse"},
                       info={**base.info, "base_model": "fam"}), store)
    assert load_model(store / "fam-whatif").info["family"]["name"] == "fam"
    assert family_members(store / "fam-whatif") is None and family_seed_band(store / "fam-whatif") is None
    assert family_members(store / "fam") == [store / m for m in MEMBERS]


def test_the_family_task_grows_the_stored_default_model_with_its_own_config(tiny_store: Path, tiny_graph, tmp_path,
                                                                            monkeypatch) -> None:
    """``from_existing`` (prepare, the sidebar): the siblings take the stored model's config, not the defaults."""
    import shutil

    from kgbias_core import tasks
    from kgbias_core.jobs import Progress

    monkeypatch.setattr(tasks.training, "load_graph", lambda dataset, data_dir, **_: tiny_graph)
    monkeypatch.setattr(tasks.training, "train_config", lambda dataset: replace(FAMILY_TRAINING, epochs=1))
    store = tmp_path / "store"
    shutil.copytree(tiny_store, store)
    base = load_model(store / "tiny-transe")
    paths = tasks.train_family_task("synthetic", out=store / "tiny-transe", seeds=3, from_existing=True).run(Progress())
    seed = base.config.seed
    assert [Path(p).name for p in paths] == ["tiny-transe", f"tiny-transe-s{seed + 1}", f"tiny-transe-s{seed + 2}"]
    sibling = load_model(paths[2])
    assert replace(sibling.config, seed=seed) == base.config  # the stored model's 25 epochs, not the 1 of the defaults
    ready, detail = tasks.family_item(store / "tiny-transe", seeds=3)
    assert ready and detail == "3 seeds: " + ", ".join(Path(p).name for p in paths)
    ready, detail = tasks.family_item(store / "tiny-transe", seeds=4)
    assert not ready and detail.endswith(f"; missing tiny-transe-s{seed + 3}")
    assert tasks.family_item(store / "tiny-transe", seeds=1) == (False, "one seed asked for (--seeds 1): no family")


def test_the_report_of_a_member_has_the_seed_band_column(family_store: Path, member_tables, tmp_path: Path) -> None:
    rows = member_tables[0].merge(family_seed_band(family_store / "fam"), on="occupation")
    crossing = _first(rows, crosses=True)
    out = tmp_path / "report.html"
    assert main(["report", "--model", str(family_store / "fam"), "--occupation", crossing, "--out", str(out)]) == 0
    html = out.read_text()
    assert "seed band (min to max)" in html and "No clear lean across seeds" in html
