"""experiments/drift/drift.py (issue 24): the drift of B_gr between two models in units of the seed band."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from kgbias_core.families import seed_band
from tests.conftest import load_script

REPO = Path(__file__).resolve().parents[1]


def _drift():
    return load_script("experiments/drift/drift.py", "drift")


def _measures(values: list[float], n_female: int = 9) -> pd.DataFrame:
    return pd.DataFrame({"occupation": ["a", "b"], "name": ["A", "B"], "n_male": [10, 10],
                         "n_female": [n_female, 2], "group_bias": values})


def test_drift_is_b_minus_a_in_units_of_the_seed_std_and_range() -> None:
    drift = _drift()
    members = [_measures([0.1, 0.5]), _measures([0.3, 0.0]), _measures([0.2, 0.1])]
    band = seed_band(members, measures=("group_bias",))
    table = drift.drift_table(_measures([0.1, 0.5]), _measures([0.25, 0.4]), band, minimum=5)
    assert list(table["occupation"]) == ["a"]  # b has 2 women: below the minimum
    row = table.iloc[0]
    assert row["drift"] == pytest.approx(0.15)
    assert row["drift_in_std"] == pytest.approx(0.15 / pd.Series([0.1, 0.3, 0.2]).std())
    assert row["drift_in_range"] == pytest.approx(0.15 / 0.2)
    assert list(table.columns) == list(drift.COLUMNS)
    assert "1 occupations" in drift.summary(table)


def test_a_reference_from_another_machine_replaces_b_on_the_occupations_it_names() -> None:
    drift = _drift()
    measured = _measures([0.1, 0.5])
    reference = pd.DataFrame({"name": ["A"], "group_bias": [0.12]})
    other = drift.reference_table(measured, reference)
    assert list(other["name"]) == ["A"] and other["group_bias"].iloc[0] == pytest.approx(0.12)
    band = seed_band([_measures([0.1, 0.5]), _measures([0.3, 0.0]), _measures([0.2, 0.1])], measures=("group_bias",))
    table = drift.drift_table(measured, other, band, minimum=5)
    assert table["drift"].iloc[0] == pytest.approx(0.02)
    with pytest.raises(SystemExit, match="Nurse"):  # a name the model lacks: one line, not a silent skip
        drift.reference_table(measured, pd.DataFrame({"name": ["Nurse"], "group_bias": [0.0]}))
