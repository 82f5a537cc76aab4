"""Issue 25: a removal step's cost estimated before it runs (kgbias_core.influence.step_cost)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embeddings.config import DISTANCES
from kgbias_core.influence.prediction import CG_ITERATIONS, L2_CG_ITERATIONS, PREDICTION_TOLERANCE, cg_cap
from kgbias_core.influence.step_cost import TYPICAL_PRODUCTS, removal_step_cost, step_cost
from tests.conftest import record_takes, small_distance_model

RESULTS = Path(__file__).resolve().parents[1] / "experiments" / "whatif_accuracy" / "results"


def _median_products(name: str) -> float:
    summary = pd.read_csv(RESULTS / name)
    return float(summary.loc[summary["tolerance"].sub(PREDICTION_TOLERANCE).abs() < 1e-12, "median_products"].iloc[0])


def test_the_typical_product_counts_are_the_measured_medians_at_the_labs_tolerance() -> None:
    """Each distance's count is its measured median at the lab's tolerance, rounded up; L2's is its cap, which its
    synthetic graphs' medians exceed even uncapped at 200 (l2_conditioning.py, the lab's floor)."""
    assert set(TYPICAL_PRODUCTS) == set(DISTANCES)
    assert TYPICAL_PRODUCTS["squared_l2"] == math.ceil(_median_products("cg_tolerance_fb15k237_summary.csv"))
    assert TYPICAL_PRODUCTS["pseudo_huber"] == math.ceil(_median_products("cg_tolerance_fb15k237_ph_summary.csv"))
    assert TYPICAL_PRODUCTS["l1"] == math.ceil(_median_products("cg_tolerance_synthetic_l1_summary.csv"))
    assert TYPICAL_PRODUCTS["l2"] == cg_cap("l2") == L2_CG_ITERATIONS < CG_ITERATIONS
    for seed in (7, 11):
        conditioning = pd.read_csv(RESULTS / f"l2_conditioning_s{seed}.csv")
        assert float(conditioning.loc[conditioning["floor"] == 0.001, "products_median"].iloc[0]) > CG_ITERATIONS


@pytest.mark.parametrize("distance", DISTANCES)
def test_the_estimate_is_the_build_plus_the_distances_count_of_one_timed_product(distance: str) -> None:
    model = small_distance_model(distance, negatives=8)
    cost = step_cost(model)
    assert cost.products == TYPICAL_PRODUCTS[distance]
    assert cost.build_s > 0 and cost.product_s > 0
    assert cost.seconds == pytest.approx(cost.build_s + cost.products * cost.product_s)


def test_a_given_operator_is_timed_once_and_not_built_again() -> None:
    """removal_step_cost takes the analysis's memoised |H| (the analysis keeps one a model): one product of it, on
    vectors shaped as the embeddings, and nothing built."""
    model = small_distance_model("squared_l2", negatives=8)
    analysis = ModelAnalysis(model)
    memo = analysis.absolute_hvp
    calls = []

    def counted(vector):
        calls.append(tuple(part.shape for part in vector))
        return memo(vector)

    cost = step_cost(model, hvp=counted)
    assert calls == [(tuple(model.entity_embeddings.shape), tuple(model.relation_embeddings.shape))]
    assert cost.build_s < cost.product_s + 1e-3  # nothing built: a check of the argument, no more
    assert removal_step_cost(analysis).products == TYPICAL_PRODUCTS["squared_l2"]
    assert analysis.absolute_hvp is memo  # the memo was used, not replaced


@pytest.mark.parametrize("distance", ["l1", "l2"])
def test_timing_a_product_leaves_no_gather_buffer_with_the_kept_operator(distance: str) -> None:
    """The timed product gathers into the operator's pool (the CPU's term product); the estimate empties it, so a
    step offered and never asked for leaves no [m, d] buffer held with the analysis's |H|."""
    analysis = ModelAnalysis(small_distance_model(distance, negatives=8))
    gather = analysis.absolute_hvp.gather
    assert gather is not None and gather._free == []
    taken = record_takes(gather)
    removal_step_cost(analysis)
    assert len(taken) == 1 and gather._free == []


def test_the_experiment_writes_each_models_estimate(tiny_model, tmp_path: Path) -> None:
    """experiments/whatif_accuracy/step_cost.py: a model's row holds its active pairs (the analysis's count), and an
    estimate that is the build plus the typical count of timed products."""
    from kgbias_core.embeddings.store import save_model
    from tests.conftest import load_script

    script = load_script("experiments/whatif_accuracy/step_cost.py", "step_cost_script")
    row = script.cost_row(save_model(tiny_model, tmp_path), repeats=2)
    assert row["distance"] == "squared_l2" and row["products"] == TYPICAL_PRODUCTS["squared_l2"]
    assert row["active_pairs"] == int(ModelAnalysis(tiny_model).active_terms.sum()) <= row["pairs"]
    assert row["estimate_s"] == pytest.approx(row["build_s"] + row["products"] * row["product_s"])
