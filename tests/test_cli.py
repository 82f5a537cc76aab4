"""The command line end to end on the synthetic graph, as a batch user would run it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from kgbias_core.cli import main
from kgbias_core.tables import MEASURE_COLUMNS

from .conftest import REPO


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cli") / "syn"
    code = main(["train", "--dataset", "synthetic", "--dim", "16", "--epochs", "5", "--seed", "1", "--calibrate",
                 "--out", str(out)])
    assert code == 0
    return out


def test_train_writes_a_model_directory(trained: Path) -> None:
    assert (trained / "model.safetensors").is_file() and (trained / "config.json").is_file()
    assert json.loads((trained / "config.json").read_text())["influence_scale"] > 0


def test_measures_has_the_documented_columns(trained: Path, tmp_path: Path) -> None:
    assert main(["measures", "--model", str(trained), "--out", str(tmp_path / "m.csv")]) == 0
    frame = pd.read_csv(tmp_path / "m.csv")
    assert list(frame.columns[: len(MEASURE_COLUMNS)]) == list(MEASURE_COLUMNS)
    assert "nurse" in set(frame.occupation)


def test_individuals_and_influence(trained: Path, tmp_path: Path) -> None:
    out = str(tmp_path / "i.csv")
    assert main(["individuals", "--model", str(trained), "--occupation", "nurse", "--out", out]) == 0
    people = pd.read_csv(tmp_path / "i.csv")
    assert list(people.columns) == ["person", "name", "gender", "degree", "individual_bias", "fisher_individual"]
    assert set(people.gender) == {"male", "female"}
    assert main(["influence", "--model", str(trained), "--occupation", "nurse", "--top", "7",
                 "--out", str(tmp_path / "f.csv")]) == 0
    top = pd.read_csv(tmp_path / "f.csv")
    assert list(top.columns) == ["head", "relation", "tail", "head_name", "tail_name", "influence"]
    assert len(top) == 7 and top.influence.abs().is_monotonic_decreasing


def test_fisher_for_gender_and_one_vs_rest(trained: Path, tmp_path: Path) -> None:
    assert main(["fisher", "--model", str(trained), "--relation", "gender", "--a", "male", "--b", "female",
                 "--out", str(tmp_path / "g.csv")]) == 0
    assert len(pd.read_csv(tmp_path / "g.csv")) > 5
    assert main(["fisher", "--model", str(trained), "--relation", "nationality", "--a", "Aland",
                 "--min-count", "3", "--out", str(tmp_path / "n.csv")]) == 0


def test_user_errors_are_one_line_not_a_traceback(trained: Path, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kgbias_core", "influence", "--model", str(trained), "--occupation", "astronaut",
         "--out", str(tmp_path / "x.csv")],
        capture_output=True, text=True, cwd=REPO,
    )
    assert result.returncode == 2
    assert result.stderr.strip() == "error: unknown entity 'astronaut': it does not occur in the model's graph"
    result = subprocess.run(
        [sys.executable, "-m", "kgbias_core", "measures", "--model", str(tmp_path / "none"), "--out", "x.csv"],
        capture_output=True, text=True, cwd=REPO,
    )
    assert result.returncode == 2 and "no model at" in result.stderr and "Traceback" not in result.stderr
