"""experiments/default_models/tradeoff_curve.py (issue 24): the curve of link prediction against influence accuracy,
joined from the committed result files; its front against a sweep over sorted points, its default against the
graph's TrainConfig."""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd
import pytest

from kgbias_core.embeddings.config import default_train_config
from tests.conftest import load_script


@pytest.fixture(scope="module")
def script():
    return load_script("experiments/default_models/tradeoff_curve.py", "tradeoff_curve")


def test_the_committed_curve_is_the_result_files_joined(script) -> None:
    committed = pd.read_csv(script.HERE / "tradeoff_curve.csv", keep_default_na=False, na_values=[""])
    written = io.StringIO()
    script.curve().to_csv(written, index=False)  # the same round trip as the file's
    written.seek(0)
    again = pd.read_csv(written, keep_default_na=False, na_values=[""])
    pd.testing.assert_frame_equal(committed, again)


def test_every_checked_point_carries_its_check_and_each_graph_one_default(script) -> None:
    table = script.curve()
    for graph, part in table.groupby("graph"):
        defaults = part[part["default"] == "yes"]
        assert len(defaults) == 1, graph
        config = default_train_config(graph)
        row = defaults.iloc[0]
        assert (row["distance"], row["negatives"], row["l2"]) == (config.distance, config.negatives_per_triple,
                                                                   config.l2)
        checked = part[part["r_min"].notna()]
        assert (checked["check"] != "").all() and checked["occupations"].ge(1).all()
        assert set(checked["r_bar"]) <= {"yes", "no"} and (part[part["r_min"].isna()]["front"] == "").all()
        assert checked["front"].eq("yes").any()
    # one row per config: a config measured twice (the CPU's checked row and the H200's) is not listed twice
    assert not table.duplicated(["graph", "config_hash"]).any()


def test_the_front_is_every_point_above_all_points_of_higher_mrr(script) -> None:
    generator = np.random.default_rng(7)
    for _ in range(20):
        n = int(generator.integers(2, 12))
        points = pd.DataFrame({"mrr": generator.random(n), "r_min": generator.random(n)})
        points.loc[generator.random(n) < 0.2, "r_min"] = math.nan  # unchecked points are off the front
        flags = script.on_front(points)
        checked = points.dropna().sort_values("mrr", ascending=False)
        best_r = -math.inf
        expected = {}
        for index, row in checked.iterrows():  # by falling MRR, a point is on the front iff its r beats all before
            expected[index] = row["r_min"] > best_r
            best_r = max(best_r, row["r_min"])
        assert {i: bool(flags[i]) for i in checked.index} == expected
        assert not flags[points["r_min"].isna()].any()


def test_a_changed_field_is_named_and_is_not_the_default(script) -> None:
    config = default_train_config("fb15k237").to_dict()
    row = pd.Series({**config, "damping": math.nan})
    assert script.changes_of(row, "fb15k237") == ("", True)
    assert script.changes_of(pd.Series({**row, "l2": 5.0}), "fb15k237") == ("", False)  # l2 is the curve's own axis
    assert script.changes_of(pd.Series({**row, "epochs": 160}), "fb15k237") == ("epochs=160", False)


def test_a_missing_result_file_is_one_line(script, tmp_path) -> None:
    with pytest.raises(SystemExit, match="no_such_models.csv: no such result file"):
        script.curve((script.Source("fb13", tmp_path / "no_such_models.csv"),))


def test_a_check_of_random_sets_only_gives_the_noise_and_stays_off_the_front(script, tmp_path) -> None:
    """A config whose sweep retrained only random sets (no occupation with 3 sets: no r) shows its noise against
    the bar, no r, and no place on the front; a full check beside it keeps its r."""
    default = default_train_config("fb15k237").to_dict()
    models = pd.DataFrame([{**default, "config_hash": "a" * 64, "mrr": 0.30, "hits@10": 0.5},
                           {**default, "config_hash": "b" * 64, "distance": "l1", "mrr": 0.25, "hits@10": 0.4}])
    models_path = tmp_path / "sweep_models.csv"
    models.to_csv(models_path, index=False)
    (tmp_path / "provenance.toml").write_text('["sweep_models.csv"]\nmachine = "cpu-2core"\n', encoding="utf-8")
    summary = pd.DataFrame([
        {"config_hash": "a" * 64, "occupations": 2, "sets": 2, "r_closed_min": math.nan, "noise_max": 0.04,
         "r_occupations": 0},
        {"config_hash": "b" * 64, "occupations": 1, "sets": 6, "r_closed_min": 0.995, "noise_max": 0.005,
         "r_occupations": 1}])
    summary_path = tmp_path / "sweep_summary.csv"
    summary.to_csv(summary_path, index=False)
    table = script.curve((script.Source("fb15k237", models_path, summary_path),)).set_index("config_hash")
    noise_only, full = table.loc["a" * 12], table.loc["b" * 12]
    assert noise_only["check"] == "sweep.py, random sets only" and math.isnan(noise_only["r_min"])
    assert (noise_only["noise_max"], noise_only["noise_bar"], noise_only["r_bar"]) == (0.04, "no", "")
    assert noise_only["occupations"] == 2 and noise_only["front"] == ""
    # the higher MRR without an r does not push the checked point off the front
    assert (full["check"], full["r_bar"], full["noise_bar"], full["front"]) == ("sweep.py, 2/32% sets", "yes", "yes",
                                                                                "yes")
