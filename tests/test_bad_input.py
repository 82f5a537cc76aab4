"""The bad-input corpus: every user error of the command line is one line and exit 2, and destroys nothing.

Each case runs the CLI in-process (``kgbias_core.cli.main``) against a copy of the tiny model store
and a folder of deliberately broken files, and asserts: exit status 2, exactly one line of output,
no traceback, the message's text, nothing written at ``{out}``, and every model of the store
still listed and loading. Nothing here trains a model: every case is refused before that.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from kgbias_core.cli import main
from kgbias_core.data.text import MAX_ID_LENGTH
from kgbias_core.embeddings.store import list_models, load_model

from .conftest import REPO

#: A tiny graph in Wikidata ids that satisfies SCHEMA: the good base that each bad file breaks.
GOOD_TRIPLES = "Q1\tP21\tQ6581097\nQ2\tP21\tQ6581072\nQ1\tP106\tQ33999\nQ2\tP106\tQ33999\n"
SCHEMA = 'gender_relation = "P21"\nmale = "Q6581097"\nfemale = "Q6581072"\noccupation_relation = "P106"\n'
SCHEMA_JSON = {"gender_relation": "P21", "male": "Q6581097", "female": "Q6581072", "occupation_relation": "P106"}
LATIN1 = b"Q1\tP21\tQ6581097\nQ2\tP21\tQ6581072\nQ3\tP106\tJos\xe9\n"
LONG_ID = "Q" * (MAX_ID_LENGTH + 1)
CENSUS = "Census year,Occupation,Total Weight,Female,Male\n2015,Nurses,100,0.9,0.1\n2010,Nurses,90,0.9,0.1\n"

#: name -> content (str or bytes) of the bad and good files every case may point at as {files}/NAME.
FILES: dict[str, str | bytes] = {
    "good.tsv": GOOD_TRIPLES,
    "schema.toml": SCHEMA,
    "latin1.tsv": LATIN1,
    "two_columns.tsv": GOOD_TRIPLES + "Q3\tP21\n",
    "four_columns.tsv": GOOD_TRIPLES + "Q3\tP21\tQ6581097\textra\n",
    "empty_field.tsv": GOOD_TRIPLES + "Q3\t\tQ6581097\n",
    "empty.tsv": "",
    "blank_lines.tsv": "\n\n  \n",
    "long_id.tsv": GOOD_TRIPLES + f"{LONG_ID}\tP21\tQ6581097\n",
    # 1.1 MB of one "id": numpy's fixed-width str arrays once asked for 68 GiB for such a file.
    "huge_id.tsv": GOOD_TRIPLES + "Q" * 1_100_000 + "\tP21\tQ6581097\n",
    "long_relation.tsv": GOOD_TRIPLES + f"Q3\t{LONG_ID}\tQ6581097\n",
    "names_latin1.tsv": b"Q1\tJos\xe9\n",
    "names_three.tsv": "Q1\tAda\tLovelace\n",
    "names_long_id.tsv": f"{LONG_ID}\tsomeone\n",
    "schema_list.json": json.dumps([SCHEMA_JSON]),
    "schema_string.json": json.dumps("P21"),
    "schema_invalid.json": '{"gender_relation": "P21",',
    "schema_invalid.toml": "gender_relation = ",
    "schema_missing.toml": 'gender_relation = "P21"\n',
    "schema_number.json": json.dumps({**SCHEMA_JSON, "male": 5}),
    "schema_empty_value.json": json.dumps({**SCHEMA_JSON, "female": ""}),
    "schema_typo.json": json.dumps({**{k: v for k, v in SCHEMA_JSON.items() if k != "gender_relation"},
                                    "gender_relaton": "P21"}),
    "schema_attributes_table.json": json.dumps({**SCHEMA_JSON, "attributes": {"relation": "P27"}}),
    "schema_attribute_no_relation.json": json.dumps({**SCHEMA_JSON, "attributes": [{"name": "citizenship"}]}),
    "schema_attribute_head.json": json.dumps({**SCHEMA_JSON, "attributes": [{"relation": "P27",
                                                                             "person_is_head": "yes"}]}),
    "schema_attribute_key.json": json.dumps({**SCHEMA_JSON, "attributes": [{"relation": "P27", "colour": "red"}]}),
    "schema_latin1.toml": SCHEMA.encode() + b'# Jos\xe9\n',
    "schema_other_relation.toml": SCHEMA.replace('"P106"', '"P999"'),
    "schema_other_male.toml": SCHEMA.replace('"Q6581097"', '"Q42"'),
    "schema_no_gender_facts.toml": SCHEMA.replace('"Q6581097"', '"Q1"').replace('"Q6581072"', '"Q2"'),
    "indices_word.txt": "1\nfive\n",
    "indices_latin1.txt": b"1\n2 # Jos\xe9\n",
    "indices_negative.txt": "-3\n",
    "indices_huge.txt": "99999999\n",
    "indices_empty.txt": "# nothing chosen\n",
    "indices_float.txt": "1.5\n",
    "census_latin1.csv": CENSUS.encode() + b"2015,Jos\xe9,10,0.5,0.5\n",
    "census_columns.csv": "year,occupation,women\n2015,Nurses,0.9\n",
    "census_share.csv": CENSUS + "2015,Pilots,10,1.5,0.1\n",
    "census_year.csv": CENSUS + "twenty,Pilots,10,0.5,0.5\n",
    "census_empty.csv": "Census year,Occupation,Total Weight,Female,Male\n",
    "census_duplicate.csv": CENSUS + "2015,Nurses,100,0.9,0.1\n",
    # schemas whose roles coincide or whose attributes read the wrong facts (issue 30, item 8)
    "schema_same_gender.json": json.dumps({**SCHEMA_JSON, "female": "Q6581097"}),
    "schema_occupation_is_gender.json": json.dumps({**SCHEMA_JSON, "occupation_relation": "P21"}),
    "schema_attribute_gender.json": json.dumps({**SCHEMA_JSON, "attributes": [{"name": "gender", "relation": "P27"}]}),
    "schema_attribute_gender_relation.json": json.dumps({**SCHEMA_JSON, "attributes": [{"name": "sex",
                                                                                        "relation": "P21"}]}),
    "schema_attribute_twice.json": json.dumps({**SCHEMA_JSON, "attributes": [
        {"name": "citizenship", "relation": "P27"}, {"name": "citizenship", "relation": "P106"}]}),
    "schema_attribute_absent.json": json.dumps({**SCHEMA_JSON, "attributes": [{"name": "citizenship",
                                                                               "relation": "P27"}]}),
}

#: Bad model directories: name -> how a copy of the tiny model is broken (run on its directory).


def _config(path: Path, **changes: object) -> None:
    config = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps({**config, **changes}))


def _weights(path: Path, key: str, value: float) -> None:
    weights = load_file(path / "model.safetensors")
    weights[key][0, 0] = value
    save_file(weights, path / "model.safetensors")


def _tensor(path: Path, key: str, change) -> None:
    weights = load_file(path / "model.safetensors")
    weights[key] = change(weights[key])
    save_file(weights, path / "model.safetensors")


def _linked(path: Path, file: str) -> None:
    """``file`` replaced by a symlink to an identical copy outside the model (e.g. another model's)."""
    shared = path.parent / f"{path.name}-{file}"
    shutil.copy(path / file, shared)
    (path / file).unlink()
    (path / file).symlink_to(shared)


def _linked_config(path: Path) -> None:
    """config.json linked to another model's (the issue's case): a copy with another seed."""
    other = path.parent / f"{path.name}-other-config.json"
    other.write_text(json.dumps({**json.loads((path / "config.json").read_text()), "seed": 99}))
    (path / "config.json").unlink()
    (path / "config.json").symlink_to(other)


def _duplicate_label(path: Path, file: str) -> None:
    lines = (path / file).read_text().splitlines()
    first, second = lines[1].split("\t"), lines[2].split("\t")
    lines[2] = "\t".join([second[0], first[1], *second[2:]])
    (path / file).write_text("\n".join(lines) + "\n")


def _training(path: Path, **tensors: torch.Tensor) -> None:
    save_file({**load_file(path / "training.safetensors"), **tensors}, path / "training.safetensors")


BAD_MODELS = {
    "no_training": lambda p: (p / "training.safetensors").unlink(),
    "config_invalid": lambda p: (p / "config.json").write_text("{not json"),
    "config_list": lambda p: (p / "config.json").write_text("[1, 2]"),
    "config_latin1": lambda p: (p / "config.json").write_bytes(b'{"name": "Jos\xe9"}'),
    "config_kind": lambda p: _config(p, model="transformer"),
    "config_dim_text": lambda p: _config(p, dim="sixteen"),
    "config_epochs_bool": lambda p: _config(p, epochs=True),
    "config_lr_nan": lambda p: (p / "config.json").write_text(
        (p / "config.json").read_text().replace('"lr": 0.01', '"lr": NaN')),
    "config_no_schema": lambda p: _config(p, schema=None),
    "config_schema_types": lambda p: _config(p, schema={**SCHEMA_JSON, "male": 5}),
    "config_scale": lambda p: _config(p, influence_scale=-1),
    "config_edit": lambda p: _config(p, edit="remove everything"),
    "config_calibration_list": lambda p: _config(p, calibration=[0.3]),
    "config_calibration_scale": lambda p: _config(p, influence_scale=0.5, calibration={
        "scale": 0.3, "low": 0.2, "high": 0.4, "occupations": ["a", "b"], "per_occupation": [0.2, 0.4]}),
    "config_calibration_order": lambda p: _config(p, influence_scale=0.3, calibration={
        "scale": 0.3, "low": 0.4, "high": 0.2, "occupations": ["a", "b"], "per_occupation": [0.4, 0.2]}),
    "pickle": lambda p: torch.save({"entity_embeddings": torch.zeros(2)}, p / "model.safetensors"),
    "nan_weights": lambda p: _weights(p, "entity_embeddings", float("nan")),
    "inf_weights": lambda p: _weights(p, "relation_embeddings", float("inf")),
    "entities_short": lambda p: (p / "entities.tsv").write_text(
        "\n".join((p / "entities.tsv").read_text().splitlines()[:-1]) + "\n"),
    "entities_latin1": lambda p: (p / "entities.tsv").write_bytes(
        (p / "entities.tsv").read_bytes().replace(b"\n1\t", b"\n1\t\xe9", 1)),
    "relations_empty": lambda p: (p / "relations.tsv").write_text(""),
    "triples_range": lambda p: _training(p, triples=torch.full((4, 3), 10**6, dtype=torch.long)),
    "triples_float": lambda p: _training(p, triples=torch.zeros(4, 3)),
    "negatives_shape": lambda p: _training(p, negatives=torch.zeros(4, 2, dtype=torch.long)),
    # files that disagree with each other (issue 30, items 7-9)
    "dims_differ": lambda p: _tensor(p, "relation_embeddings", lambda t: t[:, :-1].contiguous()),
    "dims_differ_entities": lambda p: _tensor(p, "entity_embeddings", lambda t: t[:, :-2].contiguous()),
    "weights_dim": lambda p: [_tensor(p, key, lambda t: t[:, :8].contiguous())
                              for key in ("entity_embeddings", "relation_embeddings")],
    "weights_flat": lambda p: _tensor(p, "entity_embeddings", lambda t: t[:, 0].contiguous()),
    "config_dim_negative": lambda p: _config(p, dim=-5),
    "config_dim_zero": lambda p: _config(p, dim=0),
    "config_epochs_negative": lambda p: _config(p, epochs=-1),
    "config_batch_zero": lambda p: _config(p, batch_size=0),
    "config_lr_negative": lambda p: _config(p, lr=-0.1),
    "config_margin_negative": lambda p: _config(p, margin=-2.0),
    "config_l2_negative": lambda p: _config(p, l2=-1.0),
    "config_symlink": lambda p: _linked_config(p),
    "weights_symlink": lambda p: _linked(p, "model.safetensors"),
    "entities_duplicate": lambda p: _duplicate_label(p, "entities.tsv"),
    "relations_duplicate": lambda p: _duplicate_label(p, "relations.tsv"),
    "config_schema_same": lambda p: _config(p, schema={**json.loads((p / "config.json").read_text())["schema"],
                                                       "female": "male"}),
    "config_schema_attribute_gender": lambda p: _config(p, schema={
        **json.loads((p / "config.json").read_text())["schema"], "attributes": [{"name": "gender",
                                                                                  "relation": "nationality"}]}),
}


@pytest.fixture(scope="module")
def places(tiny_store: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The writable store (tiny-transe and a second model), the bad files, the bad models."""
    root = tmp_path_factory.mktemp("bad-input")
    store = root / "store"
    shutil.copytree(tiny_store, store)
    shutil.copytree(store / "tiny-transe", store / "other")
    files = root / "files"
    files.mkdir()
    for name, content in FILES.items():
        path = files / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    (files / "graph_dir").mkdir()  # a directory without train.txt
    (files / "bare").mkdir()  # a graph without a schema.toml beside it
    (files / "bare" / "good.tsv").write_text(GOOD_TRIPLES)
    (files / "census_dir" / "census").mkdir(parents=True)
    (files / "census_dir" / "census" / "occupation_gender_ipums.csv").write_text(CENSUS)
    for name in ("latin1", "columns", "share", "year", "empty", "duplicate"):
        folder = files / f"census_{name}_dir" / "census"
        folder.mkdir(parents=True)
        shutil.copy(files / f"census_{name}.csv", folder / "occupation_gender_ipums.csv")
    (files / "a_file").write_text("not a folder")
    os.mkfifo(files / "fifo")
    with socket.socket(socket.AF_UNIX) as sock:  # the socket file stays after close
        sock.bind(str(files / "sock"))
    (files / "to_full").symlink_to("/dev/full")
    (files / "to_fifo").symlink_to(files / "fifo")
    models = root / "models"
    models.mkdir()
    (models / "empty").mkdir()
    for name, damage in BAD_MODELS.items():
        shutil.copytree(store / "tiny-transe", models / name)
        damage(models / name)
    precious = root / "precious"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work")
    (root / "a" / "b").mkdir(parents=True)
    return {"root": root, "store": store, "files": files, "models": models, "precious": precious}


def _case(argv: str, message: str, id: str) -> object:
    return pytest.param(argv, message, id=id)


MODEL = "--model {store}/tiny-transe"
CSV = "--out {out}.csv"
NEW = "--out {out}"
TRAIN = "train --dataset {files}/good.tsv --schema {files}/schema.toml"
DEBIAS = f"debias {MODEL} --occupation nurse"
INTERSECT = f"intersect {MODEL} --occupation actor"
LONG = "{root}/" + "x" * 6000  # a --model path longer than any file system allows

CASES = [
    # --- bad flags --------------------------------------------------------------------------------
    _case("", "the following arguments are required: command", "no-command"),
    _case("bogus", "invalid choice: 'bogus'", "unknown-command"),
    _case(f"{DEBIAS} --remove-k 3 --mode warm {NEW}", "unrecognized arguments: --mode warm", "debias-warm-retired"),
    _case(f"calibrate {MODEL} --occupations 1", "--occupations: expected an integer from 3 to 100",
          "calibrate-one-occupation"),
    _case("download --data-dir {files}/good.tsv", "good.tsv is a file, not a directory", "download-dir-is-file"),
    _case("download --dataset fb13 --data-dir {files}/good.tsv",
          "good.tsv is a file, not a directory", "download-fb13-dir-is-file"),
    _case("train --dataset synthetic", "the following arguments are required: --out", "train-no-out"),
    _case(f"train --dataset synthetic --model transformer {NEW}", "invalid choice: 'transformer'", "model-kind"),
    _case(f"measures {MODEL} {CSV} --colour red", "unrecognized arguments: --colour red", "unknown-flag"),
    _case(f"{DEBIAS} --add --remove-k 3 {NEW}", "argument --remove-k: not allowed with argument --add",
          "two-edits"),
    _case(f"debias {MODEL} --occupation nurse {NEW}",
          "one of the arguments --add --remove-k --remove-indices is required", "no-edit"),
    _case(f"audit --models {{store}}/tiny-transe --classifier svm {CSV}", "invalid choice: 'svm'", "classifier"),
    _case(f"{DEBIAS} --remove-k 3 --strategy greedy {NEW}", "invalid choice: 'greedy'", "strategy"),
    _case("calibrate --model {root}/nothing", "no model at", "calibrate-no-model"),
    _case("validate", "the following arguments are required: check", "validate-no-check"),
    _case(f"validate influence {MODEL} --occupation nurse --ks 3 --kinds middle {CSV}", "invalid choice: 'middle'",
          "kinds"),
    _case(f"influence {MODEL} --occupation nurse --top {CSV}", "argument --top: expected one argument",
          "flag-without-value"),
    # --- bad numbers ------------------------------------------------------------------------------
    _case(f"train --dataset synthetic --dim 0 {NEW}", "argument --dim: expected an integer from 1 to 4096, got '0'",
          "dim-0"),
    _case(f"train --dataset synthetic --dim -3 {NEW}", "argument --dim: expected an integer from 1 to 4096, got '-3'",
          "dim-negative"),
    _case(f"train --dataset synthetic --dim 1e9 {NEW}", "argument --dim: expected an integer from 1 to 4096",
          "dim-not-integer"),
    _case(f"train --dataset synthetic --dim 100000 {NEW}", "got '100000'", "dim-huge"),
    _case(f"train --dataset synthetic --epochs 0 {NEW}", "argument --epochs: expected an integer from 1 to 100000",
          "epochs-0"),
    _case(f"train --dataset synthetic --epochs -1 {NEW}", "argument --epochs: expected an integer from 1",
          "epochs-negative"),
    _case(f"train --dataset synthetic --epochs 2.5 {NEW}", "argument --epochs: expected an integer", "epochs-float"),
    _case(f"train --dataset synthetic --seed -1 {NEW}", "argument --seed: expected an integer from 0 to 4294967295",
          "seed-negative"),
    _case(f"train --dataset synthetic --seed 1099511627776 {NEW}", "argument --seed: expected an integer from 0",
          "seed-huge"),
    _case(f"train --dataset synthetic --batch-size 0 {NEW}", "argument --batch-size: expected an integer from 1",
          "batch-0"),
    _case(f"train --dataset synthetic --lr 0 {NEW}", "argument --lr: expected a number > 0 and <= 10, got '0'", "lr-0"),
    _case(f"train --dataset synthetic --lr -0.1 {NEW}", "argument --lr: expected a number > 0", "lr-negative"),
    _case(f"train --dataset synthetic --lr nan {NEW}", "argument --lr: expected a number > 0 and <= 10, got 'nan'",
          "lr-nan"),
    _case(f"train --dataset synthetic --lr inf {NEW}", "argument --lr: expected a number > 0 and <= 10, got 'inf'",
          "lr-inf"),
    _case(f"train --dataset synthetic --l2 -1 {NEW}", "argument --l2: expected a number >= 0 and <= 1e+06, got '-1'",
          "l2-negative"),
    _case(f"train --dataset synthetic --margin 0 {NEW}", "argument --margin: expected a number > 0", "margin-0"),
    _case(f"train --dataset synthetic --damping 0 {NEW}", "argument --damping: expected a number > 0", "damping-0"),
    _case(f"train --dataset synthetic --damping abc {NEW}",
          "argument --damping: expected a number > 0 and <= 1e+12, got 'abc'",
          "damping-text"),
    _case(f"influence {MODEL} --occupation nurse --top -5 {CSV}", "argument --top: expected an integer >= 1, got '-5'",
          "top-negative"),
    _case(f"influence {MODEL} --occupation nurse --top 0 {CSV}", "argument --top: expected an integer >= 1",
          "top-0"),
    _case(f"fisher {MODEL} --relation gender --a male --min-count -1 {CSV}",
          "argument --min-count: expected an integer >= 0", "fisher-min-count"),
    _case(f"{INTERSECT} --attribute nationality --min-count 0 {CSV}",
          "argument --min-count: expected an integer >= 1, got '0'", "intersect-min-count"),
    _case(f"audit --models {{store}}/tiny-transe --k 0 {CSV}", "argument --k: expected an integer >= 1", "audit-k"),
    _case(f"audit --models {{store}}/tiny-transe --min-persons 0 {CSV}",
          "argument --min-persons: expected an integer >= 1", "audit-min-persons"),
    _case(f"fairness --models {{store}}/tiny-transe --min-count 0 {CSV}",
          "argument --min-count: expected an integer >= 1", "fairness-min-count"),
    _case(f"fairness --models {{store}}/tiny-transe --bootstrap -1 {CSV}",
          "argument --bootstrap: expected an integer from 0 to 100000", "bootstrap-negative"),
    _case(f"fairness --models {{store}}/tiny-transe --bootstrap 1000000000 {CSV}", "argument --bootstrap",
          "bootstrap-huge"),
    _case(f"{DEBIAS} --remove-k -3 {NEW}", "argument --remove-k: expected an integer >= 1, got '-3'",
          "remove-k-negative"),
    _case(f"{DEBIAS} --remove-k 0 {NEW}", "argument --remove-k: expected an integer >= 1, got '0'", "remove-k-0"),
    _case(f"{DEBIAS} --add --c -0.5 {NEW}", "argument --c: expected a number > 0 and <= 100, got '-0.5'", "c-negative"),
    _case(f"{DEBIAS} --add --c 0 {NEW}", "argument --c: expected a number > 0 and <= 100, got '0'", "c-0"),
    _case(f"{DEBIAS} --add --cap 0 {NEW}", "argument --cap: expected an integer >= 1", "cap-0"),
    _case(f"{DEBIAS} --remove-k 3 --strategy random --seed -2 {NEW}", "argument --seed: expected an integer from 0",
          "debias-seed"),
    _case(f"validate influence {MODEL} --occupation nurse --ks -5 {CSV}",
          "argument --ks: expected an integer >= 1, got '-5'", "ks-negative"),
    _case(f"validate influence {MODEL} --occupation nurse --ks 0 {CSV}",
          "argument --ks: expected an integer >= 1, got '0'", "ks-0"),
    _case(f"validate influence {MODEL} --occupation nurse --ks 5 x {CSV}", "got 'x'", "ks-text"),
    _case(f"validate census {MODEL} --year 20 {CSV}", "argument --year: expected an integer from 1000 to 9999",
          "year-short"),
    _case(f"validate census {MODEL} --year abc {CSV}", "argument --year: expected an integer", "year-text"),
    _case(f"validate census {MODEL} --min-per-gender 0 {CSV}", "argument --min-per-gender: expected an integer >= 1",
          "min-per-gender"),
    # --- bad outputs ------------------------------------------------------------------------------
    _case(f"measures {MODEL} --out {{files}}", "is a directory: --out names the file to write", "csv-out-dir"),
    _case(f"fisher {MODEL} --relation gender --a male --out {{store}}", "is a directory", "fisher-out-dir"),
    _case("audit --models {store}/tiny-transe --out {root}", "is a directory", "audit-out-dir"),
    _case(f"validate census {MODEL} --out {{files}}", "is a directory", "census-out-dir"),
    _case(f"{INTERSECT} --attribute nationality --out {{files}}", "is a directory", "intersect-out-dir"),
    _case(f"individuals {MODEL} --occupation nurse --out {{files}}/a_file/persons.csv",
          "persons.csv: could not write the file", "csv-out-under-a-file"),
    _case("train --dataset synthetic --out {precious}",
          "precious exists and is not a kgbias model directory: refusing to replace it", "train-out-not-a-model"),
    _case("train --dataset synthetic --out {root}/a/b/../../precious",
          "exists and is not a kgbias model directory", "train-out-dotdot"),
    _case("train --dataset synthetic --out {store}/tiny-transe",
          "tiny-transe already holds a model: pass --force to replace it", "train-out-existing-model"),
    _case("train --dataset synthetic --out .", "'' is not a model name", "train-out-dot"),
    _case("train --dataset synthetic --out {root}/..", "'..' is not a model name", "train-out-parent"),
    _case("train --dataset synthetic --out '{root}/two words'", "'two words' is not a model name", "train-out-space"),
    _case(f"train --dataset synthetic --out {{root}}/{'m' * 201}", "is not a model name", "train-out-long"),
    _case(f"{DEBIAS} --remove-k 3 --out {{store}}/tiny-transe", "is the model being read (--model)",
          "debias-out-is-model"),
    _case(f"{DEBIAS} --remove-k 3 --out {{store}}/../store/tiny-transe --force", "is the model being read",
          "debias-out-is-model-forced"),
    _case(f"{DEBIAS} --remove-k 3 --out {{store}}/other", "other already holds a model: pass --force",
          "debias-out-existing"),
    _case(f"{DEBIAS} --remove-k 3 --out {{precious}} --force", "is not a kgbias model directory",
          "debias-out-not-a-model"),
    # --- bad models -------------------------------------------------------------------------------
    _case(f"measures --model {{root}}/nothing {CSV}", "no model at", "model-missing"),
    _case(f"measures --model {{files}}/good.tsv {CSV}", "no model at", "model-is-a-file"),
    _case(f"measures --model {{models}}/empty {CSV}", "no model at", "model-empty-dir"),
    _case(f"measures --model {{models}}/no_training {CSV}", "incomplete model directory, missing training.safetensors",
          "model-incomplete"),
    _case(f"measures --model {{models}}/config_invalid {CSV}", "config.json: Expecting property name",
          "config-invalid"),
    _case(f"measures --model {{models}}/config_list {CSV}",
          "config.json: expected a JSON object of settings, found a list", "config-list"),
    _case(f"measures --model {{models}}/config_latin1 {CSV}", "config.json: 'utf-8' codec can't decode",
          "config-latin1"),
    _case(f"measures --model {{models}}/config_kind {CSV}",
          "unknown model 'transformer': choose one of transe, distmult, complex, rotate", "config-kind"),
    _case(f"measures --model {{models}}/config_dim_text {CSV}", "'dim' must be int, found 'sixteen'", "config-dim"),
    _case(f"measures --model {{models}}/config_epochs_bool {CSV}", "'epochs' must be int, found True",
          "config-epochs"),
    _case(f"measures --model {{models}}/config_lr_nan {CSV}", "'lr' must be float, found nan", "config-lr"),
    _case(f"measures --model {{models}}/config_no_schema {CSV}", "'schema' is missing or not a JSON object",
          "config-schema-missing"),
    _case(f"measures --model {{models}}/config_schema_types {CSV}", "male must be a non-empty string",
          "config-schema-types"),
    _case(f"measures --model {{models}}/config_scale {CSV}", "'influence_scale' must be a non-negative number",
          "config-scale"),
    _case(f"measures --model {{models}}/config_edit {CSV}", "'edit' must be a JSON object or null",
          "config-edit"),
    _case(f"measures --model {{models}}/config_calibration_list {CSV}",
          "'calibration' must be a JSON object, found list", "config-calibration-list"),
    _case(f"measures --model {{models}}/config_calibration_scale {CSV}",
          "'influence_scale' differs from the calibration's scale", "config-calibration-scale"),
    _case(f"measures --model {{models}}/config_calibration_order {CSV}",
          "'calibration' needs 'low' <= 'scale' <= 'high'", "config-calibration-order"),
    _case(f"measures --model {{models}}/pickle {CSV}", "model.safetensors", "weights-pickle"),
    _case(f"measures --model {{models}}/nan_weights {CSV}", "tensor 'entity_embeddings' holds 1 NaN or infinite",
          "weights-nan"),
    _case(f"measures --model {{models}}/inf_weights {CSV}", "tensor 'relation_embeddings' holds 1 NaN or infinite",
          "weights-inf"),
    _case(f"measures --model {{models}}/entities_short {CSV}", "entity_embeddings does not match the id maps",
          "entities-short"),
    _case(f"measures --model {{models}}/entities_latin1 {CSV}", "entities.tsv, line 3: not UTF-8 text (bytes e9)",
          "entities-latin1"),
    _case(f"measures --model {{models}}/relations_empty {CSV}", "relations.tsv: empty file", "relations-empty"),
    _case(f"measures --model {{models}}/triples_range {CSV}", "triples names ids outside entities.tsv",
          "triples-out-of-range"),
    _case(f"measures --model {{models}}/triples_float {CSV}", "triples is not integer triples [n, 3]",
          "triples-float"),
    _case(f"measures --model {{models}}/negatives_shape {CSV}", "negatives is not integer triples [n, 3]",
          "negatives-shape"),
    _case(f"audit --models {{store}}/tiny-transe {{models}}/nan_weights {CSV}", "NaN or infinite",
          "audit-one-bad-model"),
    # --- bad occupations and values ---------------------------------------------------------------
    _case(f"influence {MODEL} --occupation astronaut {CSV}", "unknown entity 'astronaut'", "occupation-unknown"),
    _case(f"individuals {MODEL} --occupation male {CSV}", "'male' is not an occupation", "occupation-not-one"),
    _case(f"influence {MODEL} --occupation pilot {CSV}", "0 female persons", "occupation-no-women"),
    _case(f"fisher {MODEL} --relation colour --a male {CSV}", "unknown relation 'colour'", "fisher-relation"),
    _case(f"fisher {MODEL} --relation gender --a martian {CSV}", "unknown entity 'martian'", "fisher-value"),
    _case(f"fisher {MODEL} --relation nationality --a nurse {CSV}", "no person holds value a", "fisher-a-not-held"),
    _case(f"fisher {MODEL} --relation gender --a male --b nurse {CSV}", "no person holds value b",
          "fisher-b-not-held"),
    _case(f"fisher {MODEL} --relation gender --a male --b male {CSV}", "values a and b are the same entity",
          "fisher-a-is-b"),
    _case(f"{INTERSECT} --attribute colour {CSV}",
          "unknown attribute 'colour': the schema's attributes are nationality, birthplace", "intersect-attribute"),
    _case(f"{INTERSECT} --attribute gender {CSV}", "unknown attribute 'gender'", "intersect-gender"),
    _case(f"intersect {MODEL} --occupation astronaut --attribute nationality {CSV}", "unknown entity 'astronaut'",
          "intersect-occupation"),
    _case(f"intersect {MODEL} --occupation male --attribute nationality {CSV}", "'male' is not an occupation",
          "intersect-not-an-occupation"),
    _case(f"{INTERSECT} --attribute nationality --value-a Aland {CSV}", "values a and b go together",
          "intersect-one-value"),
    _case(f"{INTERSECT} --attribute nationality --value-a Aland --value-b Aland {CSV}",
          "values a and b are the same value 'Aland'", "intersect-same-value"),
    _case(f"{INTERSECT} --attribute nationality --value-a Aland --value-b nurse {CSV}",
          "no person of occupation 'actor' holds the nationality value 'nurse'", "intersect-value-not-held"),
    _case(f"{INTERSECT} --attribute nationality --value-a Aland --value-b martian {CSV}",
          "unknown entity 'martian'", "intersect-value-unknown"),
    _case(f"debias {MODEL} --occupation astronaut --remove-k 3 {NEW}", "unknown entity 'astronaut'",
          "debias-occupation"),
    _case(f"{DEBIAS} --remove-k 10000000 {NEW}", "k = 10000000 exceeds the", "debias-k-too-large"),
    _case(f"{DEBIAS} --add --c 0.01 {NEW}", "adds no dummy", "debias-add-nothing"),
    _case(f"debias {MODEL} --occupation pilot --remove-k 3 {NEW}", "0 female persons", "debias-no-women"),
    _case(f"validate influence {MODEL} --occupation nurse --ks 3 10000000 {CSV}", "k = 10000000 exceeds the",
          "validate-k-too-large"),
    _case(f"validate influence {MODEL} --occupation astronaut --ks 3 {CSV}", "unknown entity 'astronaut'",
          "validate-occupation"),
    # --- bad files --------------------------------------------------------------------------------
    _case(f"{DEBIAS} --remove-indices {{files}}/none.txt {NEW}", "none.txt: file not found", "indices-missing"),
    _case(f"{DEBIAS} --remove-indices {{files}}/indices_word.txt {NEW}", "indices_word.txt, line 2: expected",
          "indices-word"),
    _case(f"{DEBIAS} --remove-indices {{files}}/indices_latin1.txt {NEW}", "indices_latin1.txt, line 2: not UTF-8",
          "indices-latin1"),
    _case(f"{DEBIAS} --remove-indices {{files}}/indices_negative.txt {NEW}", "line 1: expected training-triple",
          "indices-negative"),
    _case(f"{DEBIAS} --remove-indices {{files}}/indices_float.txt {NEW}", "found '1.5'", "indices-float"),
    _case(f"{DEBIAS} --remove-indices {{files}}/indices_huge.txt {NEW}", "outside the model's", "indices-range"),
    _case(f"{DEBIAS} --remove-indices {{files}}/indices_empty.txt {NEW}", "nothing to remove", "indices-empty"),
    _case(f"train --dataset {{files}}/none.tsv --schema {{files}}/schema.toml {NEW}", "none.tsv: file not found",
          "triples-missing"),
    _case(f"train --dataset {{files}}/latin1.tsv --schema {{files}}/schema.toml {NEW}",
          "latin1.tsv, line 3: not UTF-8 text (bytes e9); save the file as UTF-8", "triples-latin1"),
    _case(f"train --dataset {{files}}/two_columns.tsv --schema {{files}}/schema.toml {NEW}",
          "two_columns.tsv, line 5: expected 3 tab-separated columns (head, relation, tail), found 2", "columns-2"),
    _case(f"train --dataset {{files}}/four_columns.tsv --schema {{files}}/schema.toml {NEW}",
          "four_columns.tsv, line 5: expected 3 tab-separated columns", "columns-4"),
    _case(f"train --dataset {{files}}/empty_field.tsv --schema {{files}}/schema.toml {NEW}",
          "empty_field.tsv, line 5: column 2 is empty", "empty-field"),
    _case(f"train --dataset {{files}}/empty.tsv --schema {{files}}/schema.toml {NEW}",
          "empty.tsv: the file holds no triples", "triples-empty"),
    _case(f"train --dataset {{files}}/blank_lines.tsv --schema {{files}}/schema.toml {NEW}",
          "the file holds no triples", "triples-blank"),
    _case(f"train --dataset {{files}}/long_id.tsv --schema {{files}}/schema.toml {NEW}",
          "long_id.tsv, line 5: column 1 is 1,001 characters long; an id has at most 1,000", "id-too-long"),
    _case(f"train --dataset {{files}}/huge_id.tsv --schema {{files}}/schema.toml {NEW}",
          "huge_id.tsv, line 5: column 1 is 1,100,000 characters long", "id-huge"),
    _case(f"train --dataset {{files}}/long_relation.tsv --schema {{files}}/schema.toml {NEW}",
          "long_relation.tsv, line 5: column 2 is 1,001 characters long", "relation-too-long"),
    _case(f"train --dataset {{files}}/graph_dir --schema {{files}}/schema.toml {NEW}",
          "train.txt: file not found", "graph-dir-without-train"),
    _case(f"{TRAIN} --names {{files}}/names_latin1.tsv {NEW}", "names_latin1.tsv, line 1: not UTF-8", "names-latin1"),
    _case(f"{TRAIN} --names {{files}}/names_three.tsv {NEW}",
          "names_three.tsv, line 1: expected 'id<TAB>name', found 3 columns", "names-columns"),
    _case(f"{TRAIN} --names {{files}}/names_long_id.tsv {NEW}", "names_long_id.tsv, line 1: column 1 is 1,001",
          "names-long-id"),
    _case(f"{TRAIN} --names {{files}}/none.tsv {NEW}", "none.tsv: file not found", "names-missing"),
    _case(f"train --dataset {{files}}/bare/good.tsv {NEW}", "a user graph needs a schema", "no-schema"),
    _case(f"train --dataset fb15k-237 {NEW}", "'fb15k-237' is neither a data set (synthetic, fb15k237, fb13)",
          "dataset-misspelt"),
    _case(f"train --dataset {{files}}/none.tsv {NEW}", "none.tsv' is neither a data set", "dataset-path-missing"),
    _case(f"train --dataset fb15k237 --data-dir {{files}}/graph_dir {NEW}", "no FB15k-237 data in",
          "fb15k237-missing"),
    _case(f"train --dataset fb13 --data-dir {{files}}/graph_dir {NEW}", "no FB13 (Freebase people) data in",
          "fb13-missing"),
    # --- bad schemas ------------------------------------------------------------------------------
    _case(f"train --dataset {{files}}/good.tsv --schema {{files}}/schema_list.json {NEW}",
          "schema_list.json: the top level must be a table of keys (a JSON object), found list", "schema-list"),
    _case(f"train --dataset {{files}}/good.tsv --schema {{files}}/schema_string.json {NEW}",
          "the top level must be a table of keys (a JSON object), found str 'P21'", "schema-string"),
    _case(f"train --dataset {{files}}/good.tsv --schema {{files}}/schema_invalid.json {NEW}",
          "schema_invalid.json: Expecting", "schema-invalid-json"),
    _case(f"train --dataset {{files}}/good.tsv --schema {{files}}/schema_invalid.toml {NEW}",
          "schema_invalid.toml: Invalid value", "schema-invalid-toml"),
    _case(f"train --dataset {{files}}/good.tsv --schema {{files}}/schema_missing.toml {NEW}",
          "missing key(s) ['male', 'female', 'occupation_relation']", "schema-missing-keys"),
    _case(f"train --dataset {{files}}/good.tsv --schema {{files}}/schema_number.json {NEW}",
          "male must be a non-empty string of at most 1000 characters, found int 5", "schema-number"),
    _case(f"train --dataset {{files}}/good.tsv --schema {{files}}/schema_empty_value.json {NEW}",
          "female must be a non-empty string", "schema-empty-value"),
    _case(f"train --dataset {{files}}/good.tsv --schema {{files}}/schema_typo.json {NEW}",
          "unknown key(s) ['gender_relaton']", "schema-typo"),
    _case(f"train --dataset {{files}}/good.tsv --schema {{files}}/schema_attributes_table.json {NEW}",
          "attributes must be a list of tables, found dict", "schema-attributes-table"),
    _case(f"train --dataset {{files}}/good.tsv --schema {{files}}/schema_attribute_no_relation.json {NEW}",
          "attributes[0] needs at least a 'relation' key", "schema-attribute-relation"),
    _case(f"train --dataset {{files}}/good.tsv --schema {{files}}/schema_attribute_head.json {NEW}",
          "attributes[0].person_is_head must be true or false, found str 'yes'", "schema-attribute-head"),
    _case(f"train --dataset {{files}}/good.tsv --schema {{files}}/schema_attribute_key.json {NEW}",
          "attributes[0] has unknown key(s) ['colour']", "schema-attribute-key"),
    _case(f"train --dataset {{files}}/good.tsv --schema {{files}}/schema_latin1.toml {NEW}",
          "schema_latin1.toml, line 5: not UTF-8", "schema-latin1"),
    _case(f"train --dataset {{files}}/good.tsv --schema {{files}}/none.toml {NEW}", "none.toml: file not found",
          "schema-missing-file"),
    _case(f"train --dataset {{files}}/good.tsv --schema {{files}}/schema_other_relation.toml {NEW}",
          "schema occupation relation 'P999' does not occur in the graph", "schema-relation-absent"),
    _case(f"train --dataset {{files}}/good.tsv --schema {{files}}/schema_other_male.toml {NEW}",
          "schema male entity 'Q42' does not occur in the graph", "schema-entity-absent"),
    _case(f"train --dataset {{files}}/good.tsv --schema {{files}}/schema_no_gender_facts.toml {NEW}",
          "has no training triple with the gender relation 'P21'", "schema-no-gender-facts"),
    # --- bad census files -------------------------------------------------------------------------
    _case(f"validate census {MODEL} --data-dir {{files}}/graph_dir {CSV}", "no census file at", "census-missing"),
    _case(f"validate census {MODEL} --data-dir {{files}}/census_latin1_dir {CSV}",
          "occupation_gender_ipums.csv, line 4: not UTF-8", "census-latin1"),
    _case(f"validate census {MODEL} --data-dir {{files}}/census_columns_dir {CSV}", "missing columns",
          "census-columns"),
    _case(f"validate census {MODEL} --data-dir {{files}}/census_share_dir {CSV}",
          "line 4: Female must be a number in [0.0, 1.0], found '1.5'", "census-share"),
    _case(f"validate census {MODEL} --data-dir {{files}}/census_year_dir {CSV}",
          "line 4: Census year must be an integer, found 'twenty'", "census-year-text"),
    _case(f"validate census {MODEL} --data-dir {{files}}/census_empty_dir {CSV}", "the file holds no census rows",
          "census-empty"),
    _case(f"validate census {MODEL} --data-dir {{files}}/census_duplicate_dir {CSV}",
          "occupation 'Nurses' appears twice in year 2015", "census-duplicate"),
    _case(f"validate census {MODEL} --data-dir {{files}}/census_dir --year 1999 {CSV}",
          "no census year 1999; available years: 2010, 2015", "census-unknown-year"),
    _case(f"validate census {MODEL} --data-dir {{files}}/census_dir {CSV}",
          "kgbias ships pairings for FB15k-237 and FB13 only", "census-not-paired"),
    # --- an --out that is not a regular file (issue 30, item 3) --------------------------------------
    _case(f"measures {MODEL} --out /dev/full", "/dev/full is a device, not a regular file", "out-dev-full"),
    _case(f"measures {MODEL} --out /dev/null", "/dev/null is a device, not a regular file", "out-dev-null"),
    _case(f"measures {MODEL} --out {{files}}/fifo", "fifo is a FIFO, not a regular file", "out-fifo"),
    _case(f"measures {MODEL} --out {{files}}/sock", "sock is a socket, not a regular file", "out-socket"),
    _case(f"measures {MODEL} --out {{files}}/to_full", "to_full is a device, not a regular file",
          "out-symlink-to-device"),
    _case(f"measures {MODEL} --out {{files}}/to_fifo", "to_fifo is a FIFO, not a regular file",
          "out-symlink-to-fifo"),
    _case(f"measures {MODEL} --out {{precious}}", "is a directory: --out names the file", "out-directory"),
    _case(f"report {MODEL} --occupation nurse --out {{files}}/fifo", "is a FIFO, not a regular file",
          "report-out-fifo"),
    _case(f"findings {MODEL} --out /dev/full", "is a device, not a regular file", "findings-out-device"),
    _case(f"findings {MODEL} --out {{files}}/sock", "is a socket, not a regular file", "findings-out-socket"),
    _case(f"individuals {MODEL} --occupation nurse --out {{files}}/fifo", "is a FIFO", "individuals-out-fifo"),
    _case(f"influence {MODEL} --occupation nurse --out /dev/full", "is a device", "influence-out-device"),
    _case(f"fisher {MODEL} --relation gender --a male --out {{files}}/sock", "is a socket", "fisher-out-socket"),
    _case("fairness --models {store}/tiny-transe --out {files}/fifo", "is a FIFO", "fairness-out-fifo"),
    _case("audit --models {store}/tiny-transe --out /dev/full", "is a device", "audit-out-device"),
    _case(f"calibrate {MODEL} --out {{files}}/to_fifo", "is a FIFO", "calibrate-out-fifo"),
    # --- numbers that overflow or make the training infinite (issue 30, items 7-8) -------------------------
    _case(f"{TRAIN} --lr 1e308 {NEW}", "--lr: expected a number > 0 and <= 10, got '1e308'", "lr-overflow"),
    _case(f"{TRAIN} --lr 1e400 {NEW}", "--lr: expected a number > 0 and <= 10, got '1e400'", "lr-beyond-float"),
    _case(f"{TRAIN} --lr 11 {NEW}", "--lr: expected a number > 0 and <= 10", "lr-above-range"),
    _case(f"{TRAIN} --l2 1e300 {NEW}", "--l2: expected a number >= 0 and <= 1e+06, got '1e300'", "l2-overflow"),
    _case(f"{TRAIN} --l2=-inf {NEW}", "--l2: expected a number >= 0", "l2-minus-inf"),
    _case(f"{TRAIN} --margin 1e308 {NEW}", "--margin: expected a number > 0 and <= 10000, got '1e308'",
          "margin-overflow"),
    _case(f"{TRAIN} --margin nan {NEW}", "--margin: expected a number > 0", "margin-nan"),
    _case(f"{TRAIN} --margin=-1e308 {NEW}", "--margin: expected a number > 0", "margin-minus-huge"),
    _case(f"{TRAIN} --damping 1e300 {NEW}", "--damping: expected a number > 0 and <= 1e+12", "damping-overflow"),
    _case(f"{DEBIAS} --add --c 1e9 {NEW}", "--c: expected a number > 0 and <= 100, got '1e9'", "add-c-extreme"),
    _case(f"{DEBIAS} --add --c inf {NEW}", "--c: expected a number > 0 and <= 100", "add-c-inf"),
    # --- k above the triple count, checked before any retrain ------------------------------------------------
    _case(f"calibrate {MODEL} --k 100000000", "exceeds the", "calibrate-k-above-triples"),
    _case(f"calibrate {MODEL} --k 100000000 --occupations 3", "exceeds the", "calibrate-k-above-triples-3"),
    # --- Add with no women (B_gr undefined), a name that resolves to the label ----------------------------------
    _case(f"debias {MODEL} --occupation pilot --add {NEW}", "it has", "add-no-women"),
    _case(f"debias {MODEL} --occupation Pilot --add {NEW}", "Add on 'pilot' is refused", "add-no-women-by-name"),
    _case(f"debias {MODEL} --occupation 'No such job' --add {NEW}", "No such job", "debias-unknown-name"),
    _case(f"debias {MODEL} --occupation 'No such job' --remove-k 3 --strategy random {NEW}", "No such job",
          "debias-random-unknown-name"),
    # --- paths the file system refuses -----------------------------------------------------------------------
    _case(f"measures --model {LONG} {CSV}", "characters): the file system refused it (File name too long)",
          "model-path-6000"),
    _case(f"report --model {LONG} --occupation nurse {CSV}", "File name too long", "report-model-path-6000"),
    _case(f"debias --model {LONG} --occupation nurse --add {NEW}", "File name too long", "debias-model-path-6000"),
    _case(f"calibrate --model {LONG}", "File name too long", "calibrate-model-path-6000"),
    _case(f"findings --model {LONG} {CSV}", "File name too long", "findings-model-path-6000"),
    _case(f"influence --model {LONG} --occupation nurse {CSV}", "File name too long", "influence-model-path-6000"),
    # --- schemas whose roles coincide ---------------------------------------------------------------------------
    _case(f"{TRAIN.replace('schema.toml', 'schema_same_gender.json')} {NEW}",
          "male and female are both 'Q6581097'", "schema-male-is-female"),
    _case(f"{TRAIN.replace('schema.toml', 'schema_occupation_is_gender.json')} {NEW}",
          "occupation_relation and gender_relation are both 'P21'", "schema-occupation-is-gender"),
    _case(f"{TRAIN.replace('schema.toml', 'schema_attribute_gender.json')} {NEW}",
          "attributes[0] ('gender') is gender", "schema-attribute-named-gender"),
    _case(f"{TRAIN.replace('schema.toml', 'schema_attribute_gender_relation.json')} {NEW}",
          "attributes[0] ('sex') is gender", "schema-attribute-gender-relation"),
    _case(f"{TRAIN.replace('schema.toml', 'schema_attribute_twice.json')} {NEW}",
          "two attributes are named 'citizenship'", "schema-attribute-twice"),
    _case(f"{TRAIN.replace('schema.toml', 'schema_attribute_absent.json')} {NEW}",
          "schema attribute 'citizenship' relation 'P27' does not occur in the graph", "schema-attribute-absent"),
    _case(f"import --format random --graph {{files}}/good.tsv --schema {{files}}/schema_attribute_absent.json {NEW}",
          "relation 'P27' does not occur in the graph", "import-schema-attribute-absent"),
    # --- vectors of different dimensions, three ways -------------------------------------------------------------
    _case(f"fisher --model {{models}}/weights_dim --relation gender --a male {CSV}",
          "holds 8-dimensional vectors, config.json says dim 16", "fisher-weights-dim"),
    _case(f"measures --model {{models}}/dims_differ {CSV}",
          "entity vectors have dimension 16, relation vectors 15", "model-dims-differ"),
    _case(f"measures --model {{models}}/dims_differ_entities {CSV}",
          "entity vectors have dimension 14, relation vectors 16", "model-dims-differ-entities"),
    _case(f"influence --model {{models}}/dims_differ --occupation nurse {CSV}", "the model's files disagree",
          "influence-dims-differ"),
    _case(f"report --model {{models}}/dims_differ --occupation nurse {CSV}", "the model's files disagree",
          "report-dims-differ"),
    _case(f"debias --model {{models}}/dims_differ --occupation nurse --add {NEW}", "the model's files disagree",
          "debias-dims-differ"),
    _case("calibrate --model {models}/dims_differ", "the model's files disagree", "calibrate-dims-differ"),
    _case(f"findings --model {{models}}/dims_differ {CSV}", "the model's files disagree", "findings-dims-differ"),
    _case(f"fairness --models {{models}}/dims_differ {CSV}", "the model's files disagree", "fairness-dims-differ"),
    _case(f"audit --models {{models}}/dims_differ {CSV}", "the model's files disagree", "audit-dims-differ"),
    _case(f"measures --model {{models}}/weights_dim {CSV}",
          "model.safetensors holds 8-dimensional vectors, config.json says dim 16", "model-weights-dim"),
    _case(f"measures --model {{models}}/weights_flat {CSV}", "the vectors are not matrices", "model-weights-flat"),
    # --- config.json out of range, linked to another model's --------------------------------------------------
    _case(f"measures --model {{models}}/config_dim_negative {CSV}", "'dim' must be >= 1, found -5",
          "config-dim-negative"),
    _case(f"measures --model {{models}}/config_dim_zero {CSV}", "'dim' must be >= 1, found 0", "config-dim-zero"),
    _case("calibrate --model {models}/config_dim_negative", "'dim' must be >= 1, found -5",
          "calibrate-config-dim-negative"),
    _case(f"debias --model {{models}}/config_dim_negative --occupation nurse --add {NEW}", "'dim' must be >= 1",
          "debias-config-dim-negative"),
    _case(f"measures --model {{models}}/config_epochs_negative {CSV}", "'epochs' must be >= 0, found -1",
          "config-epochs-negative"),
    _case(f"measures --model {{models}}/config_batch_zero {CSV}", "'batch_size' must be >= 1, found 0",
          "config-batch-zero"),
    _case(f"measures --model {{models}}/config_lr_negative {CSV}", "'lr' must be >= 0, found -0.1",
          "config-lr-negative"),
    _case(f"measures --model {{models}}/config_margin_negative {CSV}", "'margin' must be >= 0, found -2.0",
          "config-margin-negative"),
    _case(f"measures --model {{models}}/config_l2_negative {CSV}", "'l2' must be >= 0, found -1.0",
          "config-l2-negative"),
    _case(f"measures --model {{models}}/config_symlink {CSV}", "config.json is a symbolic link", "config-symlink"),
    _case(f"report --model {{models}}/config_symlink --occupation nurse {CSV}", "is a symbolic link",
          "report-config-symlink"),
    _case(f"measures --model {{models}}/weights_symlink {CSV}", "model.safetensors is a symbolic link",
          "weights-symlink"),
    _case(f"measures --model {{models}}/config_schema_same {CSV}", "male and female are both 'male'",
          "config-schema-male-is-female"),
    _case(f"measures --model {{models}}/config_schema_attribute_gender {CSV}", "is gender",
          "config-schema-attribute-gender"),
    # --- id maps with a label twice ----------------------------------------------------------------------------
    _case(f"measures --model {{models}}/entities_duplicate {CSV}", "appears twice in entities.tsv (again at id 1)",
          "entities-duplicate-label"),
    _case(f"individuals --model {{models}}/entities_duplicate --occupation nurse {CSV}", "appears twice",
          "individuals-entities-duplicate"),
    _case(f"measures --model {{models}}/relations_duplicate {CSV}", "appears twice in relations.tsv (again at id 1)",
          "relations-duplicate-label"),

    _case(f"validate census {MODEL} --out {{files}}/sock", "is a socket", "census-out-socket"),
]


def _argv(template: str, places: dict[str, Path], out: Path) -> list[str]:
    import shlex

    return shlex.split(template.format(out=out, **places))


def _store_state(store: Path) -> list[str]:
    names = list_models(store)
    for name in names:
        load_model(store / name)  # raises if a case damaged it
    return names


def test_the_corpus_is_large() -> None:
    assert len(CASES) >= 230


@pytest.mark.parametrize(("argv", "message"), CASES)
def test_bad_input_is_one_line_and_exit_2(
    argv: str, message: str, places: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    before = _store_state(places["store"])
    code = main(_argv(argv, places, out))
    captured = capsys.readouterr()
    lines = (captured.out + captured.err).strip().splitlines()
    assert code == 2, captured
    assert len(lines) == 1, lines
    assert "Traceback" not in lines[0]
    assert lines[0].startswith("error: ") and message in lines[0], lines[0]
    assert not out.exists() and not out.with_suffix(".csv").exists()  # nothing written
    assert _store_state(places["store"]) == before == ["other", "tiny-transe"]
    assert (places["precious"] / "thesis.tex").read_text() == "years of work"
    assert sorted(p.name for p in places["precious"].iterdir()) == ["thesis.tex"]


def test_train_out_on_a_directory_with_a_file_keeps_the_file(tmp_path: Path, capsys) -> None:
    """The issue's case: `train --out EXISTING_DIR` deleted the directory and everything in it."""
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me")
    assert main(["train", "--dataset", "synthetic", "--epochs", "1", "--out", str(folder)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: {folder} exists and is not a kgbias model directory: refusing to replace it (nothing was written); "
        "choose another --out"
    )
    assert (folder / "notes.txt").read_text() == "keep me" and [p.name for p in folder.iterdir()] == ["notes.txt"]


def test_a_full_disk_while_writing_a_csv_is_one_line(tiny_store: Path, tmp_path: Path) -> None:
    """A real write failure: the process's file-size limit makes the OS refuse the CSV (EFBIG)."""
    out = tmp_path / "measures.csv"
    out.write_text("the previous results\n")
    script = f"""
import resource, signal, sys
from kgbias_core.cli import main
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (2048, resource.RLIM_INFINITY))
sys.exit(main(["measures", "--model", {str(tiny_store / "tiny-transe")!r}, "--out", {str(out)!r}]))
"""
    result = subprocess.run([sys.executable, "-B", "-c", script], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 2, result.stderr
    lines = (result.stdout + result.stderr).strip().splitlines()
    assert lines == [f"error: {out}: could not write the file (File too large); a previous file of that name is "
                     "unchanged"]
    assert out.read_text() == "the previous results\n"
    assert [p.name for p in tmp_path.iterdir()] == ["measures.csv"]  # no temporary file left


def test_a_full_disk_while_saving_a_trained_model_is_one_line_and_keeps_the_old_one(
    places: dict[str, Path], tmp_path: Path
) -> None:
    """`train --force` over a model, and the OS refuses the new weights (EFBIG): one line, old model intact."""
    store = tmp_path / "store"
    shutil.copytree(places["store"] / "tiny-transe", store / "tiny-transe")
    before = (store / "tiny-transe" / "model.safetensors").read_bytes()
    argv = ["train", "--dataset", str(places["files"] / "good.tsv"), "--schema", str(places["files"] / "schema.toml"),
            "--epochs", "2", "--out", str(store / "tiny-transe"), "--force"]
    script = f"""
import resource, signal, sys
from kgbias_core.cli import main
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (512, resource.RLIM_INFINITY))
sys.exit(main({argv!r}))
"""
    result = subprocess.run([sys.executable, "-B", "-c", script], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in result.stdout + result.stderr
    assert errors[0].startswith(f"error: {store / 'tiny-transe'}: could not write the model (")
    assert errors[0].endswith("nothing was replaced, the previous model is intact")
    assert (store / "tiny-transe" / "model.safetensors").read_bytes() == before
    assert list_models(store) == ["tiny-transe"] and [p.name for p in store.iterdir()] == ["tiny-transe"]
    load_model(store / "tiny-transe")


def test_an_out_symlink_is_written_through_to_its_target(tiny_store: Path, tmp_path: Path) -> None:
    """The issue: a symlink --out was replaced by a regular file and its target never got the output.
    The policy: written through, the link stays a link and the target holds the CSV."""
    target = tmp_path / "real" / "measures.csv"
    target.parent.mkdir()
    target.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    assert main(["measures", "--model", str(tiny_store / "tiny-transe"), "--out", str(link)]) == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text().startswith("occupation,")
    assert sorted(p.name for p in target.parent.iterdir()) == ["measures.csv"]


@pytest.fixture
def read_only_store(tiny_store: Path, tmp_path: Path):
    """A copy of the store made immutable (chattr +i): read-only even for root, unlike chmod."""
    store = tmp_path / "ro-store"
    shutil.copytree(tiny_store, store)
    folders = [store, store / "tiny-transe"]
    made = [subprocess.run(["chattr", "+i", str(f)], capture_output=True).returncode == 0 for f in folders]
    if not all(made):
        pytest.skip("chattr +i is not available here")
    try:
        yield store
    finally:
        for folder in folders:
            subprocess.run(["chattr", "-i", str(folder)], check=False)


def test_a_read_only_store_is_refused_before_any_retrain(read_only_store: Path, capsys) -> None:
    """The issue: `calibrate` failed after 13 retrains on a read-only store."""
    assert main(["calibrate", "--model", str(read_only_store / "tiny-transe")]) == 2
    captured = capsys.readouterr()
    lines = (captured.out + captured.err).strip().splitlines()
    assert len(lines) == 1 and f"{read_only_store} is not writable" in lines[0], lines
    assert "calibrate" in lines[0] and "masked retrain" not in captured.err
    assert main(["train", "--dataset", "synthetic", "--epochs", "1", "--out", str(read_only_store / "new")]) == 2
    assert "is not writable" in capsys.readouterr().err
    assert sorted(p.name for p in read_only_store.iterdir()) == ["tiny-transe"]


def test_findings_over_a_read_only_model_writes_its_out_elsewhere(read_only_store: Path, tmp_path: Path) -> None:
    """The issue: findings cached into the model directory even with --out elsewhere, and failed there."""
    before = sorted(p.name for p in (read_only_store / "tiny-transe").iterdir())
    out = tmp_path / "findings.json"
    assert main(["findings", "--model", str(read_only_store / "tiny-transe"), "--out", str(out)]) == 0
    assert json.loads(out.read_text())["findings"]
    assert sorted(p.name for p in (read_only_store / "tiny-transe").iterdir()) == before


def test_npy_vectors_of_different_dims_are_refused_in_one_error_line(places: dict[str, Path], tmp_path: Path,
                                                                       capsys) -> None:
    """The issue: `import --format npy` accepted entity vectors [E, 4] with relation vectors [R, 3]. (Not in the
    corpus: the import's progress line about reading the files comes first.)"""
    import numpy as np

    npy = tmp_path / "npy"
    npy.mkdir()
    np.save(npy / "entities.npy", np.zeros((5, 4), dtype=np.float32))
    np.save(npy / "relations.npy", np.zeros((2, 3), dtype=np.float32))
    (npy / "entities.tsv").write_text("0\tQ1\n1\tQ2\n2\tQ6581097\n3\tQ6581072\n4\tQ33999\n")
    (npy / "relations.tsv").write_text("0\tP21\n1\tP106\n")
    out = tmp_path / "out"
    assert main(["import", "--format", "npy", "--path", str(npy), "--graph", str(places["files"] / "good.tsv"),
                 "--schema", str(places["files"] / "schema.toml"), "--distance", "l2", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in err
    assert "npy import: the entity vectors [5, 4] and the relation vectors [2, 3] differ in dimension" in errors[0]
    assert not out.exists()
