"""``kgbias debias-embedding`` and ``kgbias compare-debiasing`` end to end on the tiny graph."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import torch

from kgbias_core.cli import main
from kgbias_core.embeddings.store import load_model, read_config
from kgbias_core.errors import DEBIASED_NO_RETRAIN
from kgbias_core.measures.group_bias import projection_bias
from kgbias_core.measures.groups import occupation_groups
from kgbias_core.whatif.compare import comparison_table


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, tiny_store: Path) -> Path:
    """A copy of the tiny store holding the base, a projected and a regularised model made by the CLI."""
    store = tmp_path_factory.mktemp("debias") / "store"
    shutil.copytree(tiny_store, store)
    base = str(store / "tiny-transe")
    assert main(["debias-embedding", "--model", base, "--method", "project", "--out", str(store / "proj")]) == 0
    assert main(["debias-embedding", "--model", base, "--method", "regularise", "--weight", "10",
                 "--out", str(store / "fair")]) == 0
    return store


def test_debias_embedding_saves_ordinary_models(store: Path) -> None:
    projected, fair = load_model(store / "proj"), load_model(store / "fair")
    assert read_config(store / "proj")["debias"]["method"] == "project"
    assert read_config(store / "fair")["fairness_weight"] == 10.0
    b_wo = projection_bias(entity_embeddings=projected.entity_embeddings, groups=occupation_groups(projected))
    assert float(b_wo.abs().max()) < 1e-5
    assert not torch.equal(fair.entity_embeddings, load_model(store / "tiny-transe").entity_embeddings)


def test_compare_debiasing_writes_the_comparison_table(store: Path, tmp_path: Path) -> None:
    dirs = [store / "tiny-transe", store / "proj", store / "fair"]
    label = occupation_groups(load_model(dirs[0])).labels[0]
    out = tmp_path / "compare.csv"
    assert main(["compare-debiasing", "--models", *map(str, dirs), "--occupations", label, "--out", str(out)]) == 0
    written = pd.read_csv(out)
    expected = comparison_table([load_model(d) for d in dirs], occupations=[label])
    assert list(written.columns) == list(expected.columns)
    assert list(written["method"]) == ["original", "project", "regularise w=10"]
    numeric = expected.columns[2:]
    pd.testing.assert_frame_equal(written[numeric], expected[numeric], check_dtype=False, rtol=1e-9)


def test_bad_debias_input_is_one_line_exit_2(store: Path, tmp_path: Path, capsys) -> None:
    base = str(store / "tiny-transe")
    assert main(["debias-embedding", "--model", base, "--method", "shrink", "--out", str(tmp_path / "x")]) == 2
    assert main(["debias-embedding", "--model", base, "--method", "regularise", "--weight", "-1",
                 "--out", str(tmp_path / "x")]) == 2
    assert main(["debias-embedding", "--model", base, "--method", "project", "--occupations", "no-such-job",
                 "--out", str(tmp_path / "x")]) == 2
    assert not (tmp_path / "x").exists()
    capsys.readouterr()
    assert main(["debias", "--model", str(store / "proj"), "--occupation", "nurse", "--remove-k", "3",
                 "--out", str(tmp_path / "y")]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: " + DEBIASED_NO_RETRAIN.format(model="proj", method="project")]


def test_report_with_compare_shows_the_comparison_section(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    base = store / "tiny-transe"
    assert main(["report", "--model", str(base), "--occupation", "nurse", "--compare", str(store / "proj"),
                 str(store / "fair"), "--out", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert "<h2>Debiasing compared</h2>" in page
    section = page.split("<h2>Debiasing compared</h2>")[1].split("</section>")[0]
    expected = comparison_table([load_model(base), load_model(store / "proj"), load_model(store / "fair")],
                                occupations=["nurse"])
    assert section.count("<tr>") == 1 + len(expected)  # header + one row per model
    for value in expected["mean_abs_group_bias"]:
        assert f"{value:.4f}" in section
    assert "regularise w=10" in section and "<th>group_bias:nurse</th>" in section
