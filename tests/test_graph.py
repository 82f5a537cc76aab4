"""Reading graphs: FB15k-237 from the data directory, user graphs with any ids, and bad input."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kgbias_core.data.datasets import available_datasets, load_dataset, resolve_data_dir
from kgbias_core.data.graph import (
    AMBIGUOUS_GENDER,
    Gender,
    display_name,
    gender_of,
    load_user_graph,
    read_triples,
)
from kgbias_core.data.schema import Schema, load_schema
from kgbias_core.errors import DataError, SchemaError

from .conftest import data_dir

WIKIDATA_SCHEMA = Schema(gender_relation="P21", male="Q6581097", female="Q6581072", occupation_relation="P106")
WIKIDATA_TRIPLES = """Q1\tP21\tQ6581097
Q2\tP21\tQ6581072
Q3\tP21\tQ48270
Q1\tP106\tQ33999
Q2\tP106\tQ33999
Q3\tP106\tQ33999
Q1\tP27\tQ30
"""


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_fb15k237_loads_with_one_id_mapping_and_names() -> None:
    graph = load_dataset("fb15k237", data_dir=data_dir())
    assert graph.training.num_triples == 272_115
    assert graph.validation.num_triples == 17_535
    assert graph.testing.num_triples == 20_466
    # One mapping: the splits share the entity_to_id object's content.
    assert graph.validation.entity_to_id == graph.training.entity_to_id
    assert graph.entity_name("/m/02hrh1q") == "Actor"
    report = graph.gender_report()
    assert report.n_male > 2 * report.n_female > 0
    assert len(graph.data_hash) == 64


def test_wikidata_ids_work_and_other_gender_values_are_counted(tmp_path: Path) -> None:
    graph = load_user_graph(write(tmp_path / "kg.tsv", WIKIDATA_TRIPLES), schema=WIKIDATA_SCHEMA)
    report = graph.gender_report()
    assert (report.n_male, report.n_female) == (1, 1)
    assert report.other_values == {"Q48270": 1}


def test_schema_file_toml_and_directory_default(tmp_path: Path) -> None:
    folder = tmp_path / "kg"
    folder.mkdir()
    write(folder / "train.txt", WIKIDATA_TRIPLES)
    write(folder / "entity_names.tsv", "Q33999\tactor\n")
    write(
        folder / "schema.toml",
        'gender_relation = "P21"\nmale = "Q6581097"\nfemale = "Q6581072"\noccupation_relation = "P106"\n'
        '[[attributes]]\nname = "citizenship"\nrelation = "P27"\n',
    )
    graph = load_dataset(str(folder))
    assert graph.entity_name("Q33999") == "actor"
    assert graph.schema.attribute("citizenship").relation == "P27"
    assert load_schema(folder / "schema.toml") == graph.schema


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a\tb\tc\nd\te\n", "line 2: expected 3 tab-separated columns (head, relation, tail), found 2"),
        ("a\tb\tc\n\n x\t\tc\n", "line 3: column 2 is empty"),
        ("\n\n", "the file holds no triples"),
    ],
)
def test_malformed_files_name_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path / "bad.tsv", text)
    with pytest.raises(DataError) as error:
        read_triples(path)
    assert str(error.value) == f"{path}: {message}" or str(error.value) == f"{path}, {message}"


def test_missing_data_dir_says_what_to_do(tmp_path: Path) -> None:
    for dataset, title in (("fb15k237", "FB15k-237"), ("fb13", "FB13")):
        expected = f"no {title}.* data in {tmp_path}: expected {tmp_path}/{dataset}/train.txt"
        with pytest.raises(DataError, match=expected):
            load_dataset(dataset, data_dir=tmp_path)


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (Schema("P99", "Q6581097", "Q6581072", "P106"), "schema gender relation 'P99' does not occur"),
        (Schema("P21", "Q6581097", "Q6581072", "P99"), "schema occupation relation 'P99' does not occur"),
        (Schema("P21", "Q0", "Q6581072", "P106"), "schema male entity 'Q0' does not occur"),
        (Schema("P27", "Q6581097", "Q6581072", "P106"), "has no training triple with the gender relation 'P27'"),
    ],
)
def test_schema_mismatch_names_relation_or_entity(tmp_path: Path, schema: Schema, message: str) -> None:
    path = write(tmp_path / "kg.tsv", WIKIDATA_TRIPLES)
    with pytest.raises(SchemaError, match=message):
        load_user_graph(path, schema=schema)


def test_bad_schema_file(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match=r"missing key\(s\) \[.male., .female., .occupation_relation.\]"):
        load_schema(write(tmp_path / "s.json", '{"gender_relation": "P21"}'))
    with pytest.raises(SchemaError, match=str(tmp_path / "s.toml")):
        load_schema(write(tmp_path / "s.toml", "gender_relation = "))


def test_user_graph_without_schema_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match="needs a schema"):
        load_dataset(str(write(tmp_path / "kg.tsv", WIKIDATA_TRIPLES)))


def test_data_dir_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KGBIAS_DATA_DIR", "/somewhere")
    assert resolve_data_dir() == Path("/somewhere")
    assert resolve_data_dir("/flag") == Path("/flag")
    monkeypatch.delenv("KGBIAS_DATA_DIR")
    assert resolve_data_dir() == Path("data")


def test_display_name_strips_gb_suffix() -> None:
    assert display_name("Actor-GB") == "Actor"
    assert display_name("Gary Rydstrom") == "Gary Rydstrom"


def test_fb13_is_a_named_data_set_with_its_ambiguous_persons_reported() -> None:
    """Counts from PROVENANCE.md: 29 persons carry two gender triples; they are neither men nor women."""
    graph = load_dataset("fb13", data_dir=data_dir())
    assert (graph.training.num_triples, graph.validation.num_triples, graph.testing.num_triples) == (
        316_232, 5_908, 23_733,
    )
    assert graph.training.num_entities == 75_043 and graph.schema.occupation_relation == "profession"
    assert graph.entity_name("roman_catholic_church") == "Roman Catholic Church"
    report = graph.gender_report()
    assert report.other_values == {AMBIGUOUS_GENDER: 29}
    mapped, ids = graph.training.mapped_triples, graph.entity_to_id
    codes = gender_of(mapped, gender_relation=graph.relation_to_id["gender"], male=ids["male"],
                      female=ids["female"], n_entities=graph.training.num_entities)
    with_profession = codes[torch.unique(mapped[mapped[:, 1] == graph.relation_to_id["profession"], 0])]
    counts = {g.name: int((with_profession == g).sum()) for g in Gender}
    assert counts == {"UNKNOWN": 4_763, "MALE": 25_581, "FEMALE": 2_948, "OTHER": 14}
    assert report.n_male == int((codes == Gender.MALE).sum()) and report.n_female == int((codes == Gender.FEMALE).sum())


def test_gender_of_flags_several_values_and_non_binary_values() -> None:
    """Brute force over a hand-made graph: entity 0 male, 1 female, 2 both, 3 non-binary, 4 none, 5 male twice."""
    male, female, nonbinary, gender = 10, 11, 12, 0
    triples = torch.tensor([[0, gender, male], [1, gender, female], [2, gender, male], [2, gender, female],
                            [3, gender, nonbinary], [5, gender, male], [5, gender, male], [4, 1, 0]])
    codes = gender_of(triples, gender_relation=gender, male=male, female=female, n_entities=13).tolist()
    assert codes[:6] == [Gender.MALE, Gender.FEMALE, Gender.OTHER, Gender.OTHER, Gender.UNKNOWN, Gender.MALE]


def test_named_data_sets_are_offered_only_when_present(tmp_path: Path) -> None:
    assert available_datasets(tmp_path) == ["synthetic"]
    assert available_datasets(data_dir()) == ["synthetic", "fb15k237", "fb13"]


def test_inverse_occupation_adds_one_reversed_fact_per_occupation_fact(tiny_graph) -> None:
    from kgbias_core.data.graph import INVERSE_SUFFIX, with_inverse_occupation

    relation = tiny_graph.schema.occupation_relation
    extended = with_inverse_occupation(tiny_graph)
    before = {tuple(t) for t in tiny_graph.training.triples.tolist()}
    after = [tuple(t) for t in extended.training.triples.tolist()]
    facts = {(h, t) for h, r, t in before if r == relation}
    added = [t for t in after if t not in before]
    assert sorted(added) == sorted((o, relation + INVERSE_SUFFIX, s) for s, o in facts)
    assert len(after) == len(before) + len(facts)
    test_before, test_after = (tuple(map(tuple, g.testing.triples.tolist())) for g in (tiny_graph, extended))
    assert sorted(test_after) == sorted(test_before)
    assert extended.inverse_occupation and not tiny_graph.inverse_occupation
    assert extended.data_hash != tiny_graph.data_hash
    assert extended.gender_report() == tiny_graph.gender_report()


def test_a_model_trained_with_the_inverse_keeps_its_groups_and_counts_the_inverse(tmp_path: Path) -> None:
    from kgbias_core.analysis import ModelAnalysis
    from kgbias_core.cli import main
    from kgbias_core.embeddings.store import load_model, read_config
    from kgbias_core.tables import occupation_like_relations

    for name, flags in (("plain", []), ("inverse", ["--inverse-occupation"])):
        argv = ["train", "--dataset", "synthetic", "--dim", "8", "--epochs", "1", "--out", str(tmp_path / name)]
        assert main(argv + flags) == 0
    plain, inverse = (ModelAnalysis(load_model(tmp_path / name)) for name in ("plain", "inverse"))
    assert read_config(tmp_path / "inverse")["inverse_occupation"] is True
    assert "inverse_occupation" not in read_config(tmp_path / "plain")
    assert plain.groups.labels == inverse.groups.labels
    assert torch.equal(plain.groups.n_female, inverse.groups.n_female)
    relations = [inverse.model.relation_labels[i] for i in occupation_like_relations(inverse)]
    assert relations == sorted(r for r in inverse.model.relation_labels if r.startswith("occupation"))
    assert len(relations) == 2
