"""The command line end to end on the synthetic graph, as a batch user would run it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from kgbias_core import tables
from kgbias_core.analysis import ModelAnalysis
from kgbias_core.cli import DEBUG_ENV, main
from kgbias_core.embeddings.store import load_model, read_config
from kgbias_core.errors import FAIRNESS_FEW_CLASSES
from kgbias_core.influence.negatives import EXACT
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
    assert list(frame.columns) == [*MEASURE_COLUMNS, "n_other_gender", "n_unknown_gender", "note"]
    assert "nurse" in set(frame.occupation)
    # The README's promise: persons of a non-binary (or several) gender value are counted per occupation.
    groups = ModelAnalysis(load_model(trained)).groups
    assert frame["n_other_gender"].tolist() == groups.n_other.tolist() and frame["n_other_gender"].sum() > 0


def test_measures_quotes_the_link_prediction_once_cached(trained: Path, tmp_path: Path, capsys) -> None:
    """Issue 24: ``measures`` says how well the model predicts links, with the popularity floor, once that is
    cached; before, that it is not computed (it never waits for it)."""
    from kgbias_core.commands.link_prediction import NOT_CACHED
    from kgbias_core.evaluation.link_prediction import cached_link_prediction, headline

    model = tmp_path / "copy"
    shutil.copytree(trained, model)  # the module's model stays without a cached table
    assert main(["measures", "--model", str(model), "--out", str(tmp_path / "m.csv")]) == 0
    assert NOT_CACHED.format(model=model) in capsys.readouterr().out
    line = headline(cached_link_prediction(model))
    assert main(["measures", "--model", str(model), "--out", str(tmp_path / "m.csv")]) == 0
    printed = capsys.readouterr().out
    assert f"MRR {line['mrr']:.3f}" in printed and f"reaches MRR {line['baseline_mrr']:.3f}" in printed


def test_individuals_and_influence(trained: Path, tmp_path: Path) -> None:
    out = str(tmp_path / "i.csv")
    assert main(["individuals", "--model", str(trained), "--occupation", "nurse", "--out", out]) == 0
    people = pd.read_csv(tmp_path / "i.csv")
    assert list(people.columns) == ["person", "name", "gender", "degree", "individual_bias", "fisher_individual",
                                    "individual_bias_centred", "fisher_individual_centred"]
    assert set(people.gender) == {"male", "female"}
    assert main(["influence", "--model", str(trained), "--occupation", "nurse", "--top", "7",
                 "--out", str(tmp_path / "f.csv")]) == 0
    top = pd.read_csv(tmp_path / "f.csv")
    assert list(top.columns) == ["head", "relation", "tail", "head_name", "tail_name", "person", "person_name",
                                 "person_gender", "person_degree", "influence", "negatives"]
    assert set(top.negatives) == {EXACT}  # trained by kgbias: its own frozen negatives
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


def test_train_replaces_a_model_only_with_force(tmp_path: Path, capsys) -> None:
    out = tmp_path / "quick"
    args = ["train", "--dataset", "synthetic", "--dim", "8", "--epochs", "1", "--out", str(out)]
    assert main(args) == 0
    assert main([*args, "--seed", "5"]) == 2
    assert "already holds a model: pass --force" in capsys.readouterr().err.splitlines()[-1]
    assert read_config(out)["seed"] == 0  # untouched
    assert main([*args, "--seed", "5", "--force"]) == 0
    assert read_config(out)["seed"] == 5
    assert [p.name for p in tmp_path.iterdir()] == ["quick"]  # the old model's scratch directory is gone


def test_fairness_scales_its_default_and_warns_when_few_classes_remain(trained: Path, tmp_path: Path, capsys) -> None:
    out = str(tmp_path / "f.csv")
    assert main(["fairness", "--models", str(trained), "--bootstrap", "10", "--out", out]) == 0
    captured = capsys.readouterr()
    assert "warning" not in captured.err
    frame = pd.read_csv(out)
    assert frame["class_name"].nunique() > 2  # the scaled default leaves occupations of their own besides OTHER
    assert main(["fairness", "--models", str(trained), "--bootstrap", "10", "--min-count", "100000", "--out", out]) == 0
    captured = capsys.readouterr()
    warning = FAIRNESS_FEW_CLASSES.format(model="syn", min_count=100000, n_classes=0)
    assert captured.err.strip().splitlines() == [warning]
    assert "DPG" in captured.out


def test_an_unexpected_error_is_one_line_naming_its_type(
    trained: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args, **kwargs):
        raise RuntimeError("the bootstrap\nfell over")

    monkeypatch.setattr(tables, "measures_table", broken)
    monkeypatch.delenv(DEBUG_ENV, raising=False)
    assert main(["measures", "--model", str(trained), "--out", str(tmp_path / "m.csv")]) == 1
    assert capsys.readouterr().err.splitlines() == [
        "error: RuntimeError: the bootstrap fell over (unexpected: rerun with KGBIAS_DEBUG=1 for the traceback)"
    ]
    monkeypatch.setenv(DEBUG_ENV, "1")
    with pytest.raises(RuntimeError, match="fell over"):
        main(["measures", "--model", str(trained), "--out", str(tmp_path / "m.csv")])


def test_help_exits_0(capsys) -> None:
    assert main(["train", "--help"]) == 0
    assert "--force" in capsys.readouterr().out
