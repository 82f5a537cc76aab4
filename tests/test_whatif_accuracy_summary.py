"""The whatif_accuracy bench's summary (experiments/whatif_accuracy): what the docs' issue-25 table reads."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pandas as pd

SCRIPT = Path(__file__).resolve().parents[1] / "experiments" / "whatif_accuracy" / "whatif_accuracy.py"


def _bench():
    spec = importlib.util.spec_from_file_location("whatif_accuracy_bench", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _row(kind, men, women, point, actual, *, floor=0.05, audit=False, share=2):
    return {"occupation": f"o{men}", "men": men, "women": women, "in_fit": False, "kind": kind, "share": share,
            "newton": point / 0.25, "low": point / 0.25 - 0.01, "high": point / 0.25 + 0.01,
            "old_point": point, "old_low": point - 0.1, "old_high": point + 0.1, "actual": actual,
            "scale": 0.25, "scaled": point, "scaled_low": point - 0.2, "scaled_high": point + 0.2,
            "floor": floor, "in_audit": audit}


def test_summary_leaves_out_the_audited_occupation_and_judges_random_sets_by_coverage_only() -> None:
    runs = pd.DataFrame([
        _row("top", 50, 40, 0.4, 0.45),            # inside both, sign right
        _row("bottom", 3, 2, -0.4, -0.7),          # outside: -0.7 < -0.6
        _row("top", 3, 2, 0.02, -0.03),            # inside the noise: wrong sign, but no claim
        _row("top", 900, 500, 0.4, 9.0, audit=True),  # the audit's own occupation: never counted
        _row("random", 50, 40, 0.0, 0.01),
        _row("random", 3, 2, 0.0, 0.5),
    ])
    frame = _bench().summary_frame(runs)
    scaled = frame[frame["estimator"].str.contains("audit")].set_index("sets")
    assert scaled.loc["targeted", "n"] == 3 and scaled.loc["random", "n"] == 2
    assert math.isclose(scaled.loc["targeted", "coverage"], 2 / 3)
    assert math.isclose(scaled.loc["targeted", "sign"], 2 / 3)
    assert scaled.loc["targeted", "sign_beyond_floor"] == 1.0  # the wrong sign was inside the floor
    assert math.isclose(scaled.loc["targeted", "half_width_large"], 0.2 / 0.4)
    assert scaled.loc["targeted", "small_n"] == 2
    assert scaled.loc["random", "coverage"] == 0.5
    for column in ("half_width", "half_width_large", "sign", "sign_beyond_floor", "ratio"):
        assert math.isnan(scaled.loc["random", column])
