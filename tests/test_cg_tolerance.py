"""experiments/whatif_accuracy/cg_tolerance.py (issue 25's cost): each set solved at each CG tolerance against the
tightest solve, on a squared-L2 model and a pseudo-Huber one (each with the analysis's |H| memo)."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

from kgbias_core.embeddings.store import save_model

from .conftest import REPO, load_script, small_distance_model


@pytest.mark.parametrize("distance", ["squared_l2", "pseudo_huber"])
def test_looser_solves_use_fewer_products_and_stay_near_the_tight_one_and_a_rerun_adds_nothing(
        distance: str, tiny_store: Path, tmp_path: Path, monkeypatch) -> None:
    if distance == "squared_l2":
        model_dir = tiny_store / "tiny-transe"
    else:
        save_model(small_distance_model("pseudo_huber"), tmp_path / "store")
        model_dir = tmp_path / "store" / "small"
    monkeypatch.syspath_prepend(str(REPO / "experiments" / "whatif_accuracy"))  # its sibling whatif_accuracy.py
    script = load_script("experiments/whatif_accuracy/cg_tolerance.py", "cg_tolerance_script")
    runs, summary = tmp_path / "runs.csv", tmp_path / "summary.csv"
    argv = ["cg_tolerance.py", "--model", str(model_dir), "--runs", str(runs), "--summary", str(summary),
            "--occupations", "2", "--sets", "16", "--tolerances", "1e-8,1e-2"]
    monkeypatch.setattr(sys, "argv", argv)
    script.main()
    rows = pd.read_csv(runs)
    assert len(rows) == 2 * 2 * 2  # occupations x kinds x tolerances
    tight, loose = rows[rows["tolerance"] == 1e-8], rows[rows["tolerance"] == 1e-2]
    assert (tight["deviation"] == 0).all() and (tight["point"] == tight["reference"]).all()
    assert (loose["deviation"] < 1e-2).all()  # B_gr barely moves; the band is tens of percent wide
    assert (loose["products"].to_numpy() < tight["products"].to_numpy()).all()
    assert not rows["hit_limit"].any()
    frame = pd.read_csv(summary)
    assert list(frame["tolerance"]) == [1e-8, 1e-2] and list(frame["sets"]) == [4, 4]
    script.main()  # resumed: every set is there already
    assert len(pd.read_csv(runs)) == len(rows)
