"""``kgbias plan`` end to end on the tiny graph: the plan printed and written, --verify, and bad input."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.cli import main
from kgbias_core.commands.plan import AGAIN
from kgbias_core.embeddings.store import list_models, load_model
from kgbias_core.errors import PLAN_TARGET_FORMAT, PLAN_TARGET_NOT_PLANNED, PLAN_UNDEFINED_TARGET
from kgbias_core.evaluation.link_prediction import link_prediction
from kgbias_core.whatif.plan import (
    PlanConfig,
    plan_removal,
    resolve_targets,
)
from kgbias_core.whatif.step_ratio import PLANS, observed_step_ratio, saved_verifications
from tests.conftest import NO_WOMEN


@pytest.fixture
def store(tiny_store: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(tiny_store, tmp_path / "store"))


def test_plan_prints_the_plan_and_writes_its_triples(store: Path, tmp_path: Path, capsys) -> None:
    base = store / "tiny-transe"
    out = tmp_path / "plan.csv"
    argv = ["plan", "--model", str(base), "--occupations", "Journalist", "--tolerance", "0.3", "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    analysis = ModelAnalysis(load_model(base))
    config = PlanConfig(tolerance=0.3)
    expected = plan_removal(analysis, resolve_targets(analysis, ["journalist"], config=config), config=config)
    written = pd.read_csv(out)
    assert written["row"].tolist() == list(expected.removed)
    assert {"order", "row", "in words", "head", "relation", "tail", "influence:journalist"} <= set(written.columns)
    assert f"plan: remove {len(expected.removed)} training triples — meets its bounds" in printed
    (outcome,) = expected.targets
    assert f"Journalist: B_gr {outcome.before:+.4f} -> predicted {outcome.after:+.4f}" in printed
    assert "collateral: 0 of" in printed and "link-prediction proxy" in printed
    assert written["in words"].iloc[0] in printed  # the triples in words
    assert list_models(store) == ["tiny-transe"]  # planning alone retrains and saves nothing


def test_plan_verify_retrains_and_records_predicted_and_actual(store: Path, capsys) -> None:
    base = store / "tiny-transe"
    assert main(["plan", "--model", str(base), "--occupations", "journalist", "--tolerance", "0.3", "--verify"]) == 0
    printed = capsys.readouterr().out
    record = saved_verifications(base)
    assert len(record) == 1 and record["occupation"].iloc[0] == "journalist"
    row = record.iloc[0]
    assert f"verified Journalist: predicted {row['predicted']:+.4f}" in printed
    assert f"actual {row['actual']:+.4f}" in printed
    assert row["run"] in list_models(store) and pd.notna(row["mrr_before"]) and pd.notna(row["mrr_after"])
    # the MRR a model is quoted by: heads and tails pooled, from each model's own link prediction
    for model, column in ((base, "mrr_before"), (store / row["run"], "mrr_after")):
        table = link_prediction(load_model(model), side="both")
        assert row[column] == pytest.approx(table["mrr"], abs=1e-9)
    assert "step scale 1: no retrain of this model" in printed and row["step_scale"] == 1.0
    # a miss says how to plan again; a hit does not
    assert (AGAIN.format(name="Journalist") in printed) == (not bool(row["inside_actual"]))
    # the next plan reads the ratio this retrain showed, and scales its step by it
    ratio = observed_step_ratio(record, use=PLANS)
    assert main(["plan", "--model", str(base), "--occupations", "journalist", "--tolerance", "0.3"]) == 0
    printed = capsys.readouterr().out
    assert (f"step scale {ratio.value:.3f}: the retrained/predicted ratio of the latest of 1 retrain(s) in this "
            "model's verified plans of this occupation") in printed  # journalist's own verified plan
    assert f"x {ratio.value:.2f} (the retrained/predicted ratio" in printed
    assert main(["plan", "--model", str(base), "--occupations", "journalist", "--tolerance", "0.3",
                 "--step-scale", "1"]) == 0
    assert "step scale" not in capsys.readouterr().out.split("plan:")[0]  # given: nothing read


@pytest.mark.parametrize("extra, message", [
    (["--occupations", "nurse", "--target", "nurse=low:0.1"], PLAN_TARGET_FORMAT.format(text="nurse=low:0.1")),
    (["--occupations", "nurse", "--target", "nurse=0.2:0.1"], PLAN_TARGET_FORMAT.format(text="nurse=0.2:0.1")),
    (["--occupations", "nurse", "--target", "teacher=-0.1:0.1"], PLAN_TARGET_NOT_PLANNED.format(occupations="teacher")),
    (["--occupations", NO_WOMEN], PLAN_UNDEFINED_TARGET.format(occupation=NO_WOMEN, n_male=0, n_female=0)[-45:]),
    (["--occupations", "no-such-job"], "no-such-job"),
    (["--occupations", "nurse", "--max-triples", "0"], "--max-triples"),
    (["--occupations", "nurse", "--max-link-share", "2"], "--max-link-share"),
    (["--occupations", "nurse", "--step-scale", "-1"], "--step-scale"),
])
def test_bad_plan_input_is_one_line_exit_2(store: Path, tmp_path: Path, capsys, extra: list[str],
                                           message: str) -> None:
    out = tmp_path / "plan.csv"
    assert main(["plan", "--model", str(store / "tiny-transe"), *extra, "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]
    assert not out.exists() and list_models(store) == ["tiny-transe"]
