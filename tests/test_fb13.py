"""FB13 end to end on a small seeded sample: every command the issue names, with readable names.

The sample keeps FB13's layout (the real slugs, names and schema files) and every triple of 150
persons of each of three professions, so ``--dataset fb13 --data-dir SAMPLE`` reads it exactly as
it reads the full graph. Skipped where the shared data directory holds no FB13.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from kgbias_core.cli import main

REPO = Path(__file__).resolve().parents[1]
DATA = (REPO / os.environ.get("KGBIAS_DATA_DIR", "../shared/data")).resolve()
PROFESSIONS = ("politician", "writer", "actor")

pytestmark = pytest.mark.skipif(not (DATA / "fb13" / "train.txt").is_file(), reason="no FB13 in the data directory")


def _read(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, sep="\t", header=None, names=["h", "r", "t"], dtype=str, keep_default_na=False,
                       quoting=3)


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fb13-sample")
    folder = root / "fb13"
    folder.mkdir()
    train = _read(DATA / "fb13" / "train.txt")
    facts = train[(train.r == "profession") & train.t.isin(PROFESSIONS)]
    persons = set()
    for profession in PROFESSIONS:
        holders = facts[facts.t == profession].h.drop_duplicates()
        persons |= set(holders.sample(n=min(150, len(holders)), random_state=0))
    for split in ("train", "valid", "test"):
        frame = _read(DATA / "fb13" / f"{split}.txt")
        frame[frame.h.isin(persons)].to_csv(folder / f"{split}.txt", sep="\t", header=False, index=False)
    for name in ("entity_names.tsv", "relation_names.tsv", "schema.toml"):
        shutil.copy(DATA / "fb13" / name, folder / name)
    shutil.copytree(DATA / "census", root / "census")
    model = root / "models" / "fb13-sample"
    assert main(["train", "--dataset", "fb13", "--data-dir", str(root), "--dim", "16", "--epochs", "20",
                 "--out", str(model)]) == 0
    return root


def test_fb13_sample_trains_and_every_command_reads_it_with_names(sample: Path, capsys) -> None:
    model, out = str(sample / "models" / "fb13-sample"), sample / "out"
    config = json.loads((sample / "models" / "fb13-sample" / "config.json").read_text())
    assert config["dataset"] == "fb13" and config["schema"]["occupation_relation"] == "profession"

    assert main(["measures", "--model", model, "--out", str(out / "measures.csv")]) == 0
    measures = pd.read_csv(out / "measures.csv").set_index("occupation")
    assert {"Politician", "Writer", "Actor"} <= set(measures.name)
    assert measures.loc["politician", "n_male"] > measures.loc["politician", "n_female"] > 0

    assert main(["individuals", "--model", model, "--occupation", "Writer", "--out", str(out / "persons.csv")]) == 0
    persons = pd.read_csv(out / "persons.csv")
    assert len(persons) == measures.loc["writer", "n_male"] + measures.loc["writer", "n_female"]
    assert persons.name.str.contains(" ").mean() > 0.9  # "Denys Rayner", not "denys_rayner"

    assert main(["influence", "--model", model, "--occupation", "actor", "--top", "10",
                 "--out", str(out / "triples.csv")]) == 0
    triples = pd.read_csv(out / "triples.csv")
    assert len(triples) == 10 and triples.head_name.str.contains(" ").any()

    nationality = pd.read_csv(sample / "fb13" / "train.txt", sep="\t", header=None, names=["h", "r", "t"])
    values = nationality[nationality.r == "nationality"].t.value_counts()
    assert main(["fisher", "--model", model, "--relation", "nationality", "--a", values.index[0],
                 "--b", values.index[1], "--out", str(out / "fisher.csv")]) == 0
    assert len(pd.read_csv(out / "fisher.csv")) > 0

    assert main(["validate", "census", "--model", model, "--data-dir", str(sample),
                 "--out", str(out / "census.csv")]) == 0
    assert (pd.read_csv(out / "census.csv")["n"] >= 3).all()

    assert main(["findings", "--model", model, "--data-dir", str(sample), "--out", str(out / "findings.json")]) == 0
    claims = {row["key"]: row for row in json.loads((out / "findings.json").read_text())["findings"]}
    assert claims["census_group_bias"]["n"] >= 3 and claims["census_group_bias"]["verdict"] != "not measured"
    assert claims["women_in_top_positive"]["n"] > 0
