"""experiments/default_models/objective_shift.py (issue 24): B_gr under two objectives, in seed-band units."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import load_script

REPO = Path(__file__).resolve().parents[1]


def _shift():
    return load_script("experiments/default_models/objective_shift.py", "objective_shift")


def _family(bias: list[float], low: list[float], high: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"occupation": ["a", "b", "c", "small"], "name": ["A", "B", "C", "S"],
                         "n_male": [40, 30, 20, 50], "n_female": [10, 12, 8, 2], "group_bias": bias,
                         "group_bias_seed_min": low, "group_bias_seed_max": high})


def test_the_shift_is_b_minus_a_judged_against_both_seed_bands() -> None:
    module = _shift()
    one = _family([0.10, -0.24, 0.05, 0.9], [0.08, -0.26, 0.01, 0.8], [0.12, -0.20, 0.09, 1.0])
    eight = _family([0.11, 0.20, -0.03, 0.1], [0.05, 0.15, -0.06, 0.0], [0.13, 0.30, 0.01, 0.2])
    table = module.shift_table(one, eight, minimum=5).set_index("occupation")
    assert "small" not in table.index  # 2 women: below the minimum
    assert table.loc["a", "shift"] == pytest.approx(0.01) and not table.loc["a", "apart"]
    assert table.loc["b", "shift"] == pytest.approx(0.44)
    assert table.loc["b", "shift_in_range"] == pytest.approx(0.44 / 0.15)  # the wider band: 0.30 - 0.15
    assert table.loc["b", "apart"] and table.loc["b", "opposite"]  # -0.26..-0.20 against 0.15..0.30
    assert table.loc["c", "apart"] == False and table.loc["c", "opposite"] == False  # noqa: E712 (both touch 0)
    assert table.index[0] == "b"  # largest shift in band units first
    summary = module.summary(table.reset_index()).iloc[0]
    assert summary["occupations"] == 3 and summary["apart"] == 1 and summary["opposite"] == 1
    assert summary["shift_abs_max"] == pytest.approx(0.44)
    # Each family's median seed band over the 3 kept occupations: one 0.04, 0.06, 0.08; eight 0.08, 0.15, 0.07.
    assert summary["band_median_a"] == pytest.approx(0.06) and summary["band_median_b"] == pytest.approx(0.08)


def test_summarize_only_rewrites_the_summary_from_the_stored_table(tmp_path: Path) -> None:
    module = _shift()
    one = _family([0.10, -0.24, 0.05, 0.9], [0.08, -0.26, 0.01, 0.8], [0.12, -0.20, 0.09, 1.0])
    eight = _family([0.11, 0.20, -0.03, 0.1], [0.05, 0.15, -0.06, 0.0], [0.13, 0.30, 0.01, 0.2])
    out = tmp_path / "shift.csv"
    module.shift_table(one, eight, minimum=5).to_csv(out, index=False)
    assert module.main(["--out", str(out), "--summarize-only"]) == 0
    written = pd.read_csv(tmp_path / "shift_summary.csv").iloc[0]
    assert written["occupations"] == 3 and written["band_median_b"] == pytest.approx(0.08)
    with pytest.raises(SystemExit, match="does not exist"):
        module.main(["--out", str(tmp_path / "missing.csv"), "--summarize-only"])
