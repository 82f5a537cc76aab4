"""kgbias_core.commands.common.append_row: the experiments' resumable run files take each finished row under the
file's own header (a plain append once shifted a row under a header that had gained a column, 2026-11-29)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from kgbias_core.commands.common import append_row


def test_rows_land_under_the_files_own_header(tmp_path: Path) -> None:
    runs = tmp_path / "deep" / "runs.csv"
    append_row({"occupation": "nurse", "k": 5, "actual": 0.25}, runs)
    frame = pd.read_csv(runs)
    frame.insert(1, "name", ["Nurse"])  # what whatif_accuracy.py --summarize-only does to a run file
    frame.to_csv(runs, index=False)
    append_row({"occupation": "engineer", "k": 7, "actual": -0.5}, runs)
    append_row({"actual": 1.5, "occupation": "pilot"}, runs)  # another order, a column missing
    rows = pd.read_csv(runs)
    assert rows.columns.tolist() == ["occupation", "name", "k", "actual"]
    assert rows["occupation"].tolist() == ["nurse", "engineer", "pilot"]
    assert rows["k"].tolist()[:2] == [5, 7] and pd.isna(rows["k"].iloc[2])
    assert rows["actual"].tolist() == [0.25, -0.5, 1.5]
    assert rows["name"].iloc[0] == "Nurse" and rows["name"].iloc[1:].isna().all()


def test_a_row_with_a_column_the_header_lacks_is_refused_and_the_file_kept(tmp_path: Path) -> None:
    runs = tmp_path / "runs.csv"
    append_row({"occupation": "nurse", "actual": 0.25}, runs)
    before = runs.read_text()
    with pytest.raises(ValueError, match="columns its header lacks \\(scale\\)"):
        append_row({"occupation": "pilot", "actual": 1.0, "scale": 0.9}, runs)
    assert runs.read_text() == before
