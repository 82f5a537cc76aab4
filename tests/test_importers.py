"""Importing TransE embeddings trained elsewhere (``kgbias import``), each format against its engine.

Oracles: PyKEEN's own ``score_hrt`` on the model PyKEEN trained and saved; for the npy and DGL-KE
layouts (DGL-KE is not installed here; its files are written with numpy in the layout its
documentation gives, docs/source/format_out.rst) the engine's documented formula computed from the
raw arrays by label: -||h + r - t|| and gamma - ||h + r - t||_2; for PyTorch-BigGraph (not installed
either; its HDF5 checkpoint written with h5py in the layout of its checkpoint_storage.py) its
translation + l2 score -||h - (t + r)||_2, the operator on the tail.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.cli import main
from kgbias_core.data.datasets import load_dataset
from kgbias_core.data.graph import KnowledgeGraph
from kgbias_core.embeddings.pykeen_bridge import pykeen_model
from kgbias_core.embeddings.store import StoredModel, load_model, read_config
from kgbias_core.errors import (
    IMPORT_FILE_MISSING,
    IMPORT_MISSING_LABEL,
    IMPORT_NO_DISTANCE,
    IMPORT_PICKLE_REFUSED,
    NO_NEGATIVES_IMPORTED,
    MeasureError,
)
from kgbias_core.influence.closed_form import influence_context
from kgbias_core.tables import measures_table

from .conftest import naive_groups

DIM = 8


@pytest.fixture(scope="module")
def graph() -> KnowledgeGraph:
    """The graph ``--graph synthetic`` names."""
    return load_dataset("synthetic")


def labels(graph: KnowledgeGraph) -> tuple[list[str], list[str]]:
    factory = graph.training
    return ([str(e) for e in sorted(factory.entity_to_id, key=factory.entity_to_id.get)],
            [str(r) for r in sorted(factory.relation_to_id, key=factory.relation_to_id.get)])


def write_npy_folder(folder: Path, graph: KnowledgeGraph, *, config: dict | None, drop: str | None = None) -> tuple:
    """The npy layout with rows in an order of their own and two entities the graph lacks.
    -> (entity vectors by label, relation vectors by label)."""
    rng = np.random.default_rng(5)
    entities, relations = labels(graph)
    entities = [*entities, "extra_1", "extra_2"]
    folder.mkdir()
    by_label = []
    for name, items in (("entities", entities), ("relations", relations)):
        order = rng.permutation(len(items))  # row i holds items[order[i]]
        array = rng.normal(size=(len(items), DIM)).astype(np.float32)
        np.save(folder / f"{name}.npy", array)
        lines = [f"{i}\t{items[j]}\n" for i, j in enumerate(order) if items[j] != drop]
        (folder / f"{name}.tsv").write_text("".join(lines), encoding="utf-8")
        by_label.append({items[j]: array[i] for i, j in enumerate(order)})
    if config is not None:
        (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return tuple(by_label)


def some_triples(model: StoredModel, n: int = 50) -> torch.Tensor:
    return model.triples[torch.randperm(model.triples.shape[0], generator=torch.Generator().manual_seed(0))[:n]]


def scores_by_label(model: StoredModel, triples: torch.Tensor, vectors: tuple, *, norm: float) -> np.ndarray:
    """-||h + r - t||_norm from the source arrays, looked up by label."""
    ent, rel = vectors
    return np.array([-np.linalg.norm(ent[model.entity_labels[h]] + rel[model.relation_labels[r]]
                                     - ent[model.entity_labels[t]], ord=norm) for h, r, t in triples.tolist()])


def kgbias_scores(model: StoredModel, triples: torch.Tensor) -> np.ndarray:
    with torch.no_grad():
        return pykeen_model(model, device="cpu").score_hrt(triples).squeeze(-1).double().numpy()


def test_npy_import_scores_as_the_l1_formula_and_b_gr_uses_l1(graph: KnowledgeGraph, tmp_path: Path) -> None:
    vectors = write_npy_folder(tmp_path / "src", graph, config={"model": "transe", "distance": "l1"})
    out = tmp_path / "store" / "imported-npy"
    assert main(["import", "--format", "npy", "--path", str(tmp_path / "src"), "--graph", "synthetic",
                 "--out", str(out)]) == 0
    model = load_model(out)
    config = read_config(out)
    assert (config["distance"], config["imported_from"], config["negatives"]) == ("l1", "npy", "none")
    assert model.negatives is None and model.n_entities == graph.training.num_entities
    triples = some_triples(model)
    np.testing.assert_allclose(kgbias_scores(model, triples), scores_by_label(model, triples, vectors, norm=1),
                               rtol=1e-5, atol=1e-4)
    # B_gr with the model's own psi = L1, against a loop over the labelled groups.
    analysis = ModelAnalysis(model)
    groups, _ = naive_groups(model)
    ent, rel = vectors
    r_p = rel[model.schema.occupation_relation]
    occupation = max(groups, key=lambda o: min(len(groups[o][0]), len(groups[o][1])))
    men, women = groups[occupation]

    def psi(person: str) -> float:
        return float(np.abs(ent[person].astype(np.float64) + r_p - ent[occupation]).sum())

    expected = np.mean([psi(p) for p in women]) - np.mean([psi(p) for p in men])
    # float32 sums of psi ~ 10: an absolute tolerance; squared L2 or L2 would differ by far more.
    assert float(analysis.group_bias(occupation)) == pytest.approx(expected, abs=1e-4)


def test_an_imported_model_has_every_measure_and_no_frozen_negatives(graph: KnowledgeGraph, tmp_path: Path) -> None:
    write_npy_folder(tmp_path / "src", graph, config=None)
    out = tmp_path / "imported"
    assert main(["import", "--format", "npy", "--path", str(tmp_path / "src"), "--graph", "synthetic",
                 "--distance", "l2", "--out", str(out)]) == 0
    model = load_model(out)
    table = measures_table(ModelAnalysis(model), n_resamples=20)
    assert table["group_bias"].notna().any() and table["individual_bias_vanilla"].notna().any()
    assert table["fisher_bp"].notna().any()
    with pytest.raises(MeasureError) as error:
        influence_context(model)
    assert str(error.value) == NO_NEGATIVES_IMPORTED.format(model=model.name, source="npy")


def test_a_graph_label_missing_from_the_maps_exits_2_naming_it(graph: KnowledgeGraph, tmp_path: Path, capsys) -> None:
    missing = labels(graph)[0][7]
    write_npy_folder(tmp_path / "src", graph, config={"distance": "l2"}, drop=missing)
    code = main(["import", "--format", "npy", "--path", str(tmp_path / "src"), "--graph", "synthetic",
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    n = graph.training.num_entities
    expected = IMPORT_MISSING_LABEL.format(kind="entity", kinds="entities", label=missing, graph="synthetic",
                                           path=tmp_path / "src" / "entities.tsv", found=n - 1, needed=n,
                                           imported=n + 1)
    assert code == 2 and err[-1] == f"error: {expected}" and not (tmp_path / "out").exists()


def test_npy_without_a_distance_exits_2(graph: KnowledgeGraph, tmp_path: Path, capsys) -> None:
    write_npy_folder(tmp_path / "src", graph, config=None)
    code = main(["import", "--format", "npy", "--path", str(tmp_path / "src"), "--graph", "synthetic",
                 "--out", str(tmp_path / "out")])
    expected = IMPORT_NO_DISTANCE.format(format="npy", path=tmp_path / "src")
    assert code == 2 and capsys.readouterr().err.strip().splitlines()[-1] == f"error: {expected}"


@pytest.fixture(scope="module")
def pykeen_dir(graph: KnowledgeGraph, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    """A TransE (L2, not squared) trained by PyKEEN's pipeline on the synthetic graph, saved by
    ``save_to_directory``; -> (folder, the trained PyKEEN model)."""
    from pykeen.pipeline import pipeline

    factory = graph.training
    result = pipeline(
        training=factory, testing=factory.clone_and_exchange_triples(factory.mapped_triples[:5]),
        model="TransE", model_kwargs={"embedding_dim": DIM, "scoring_fct_norm": 2},
        training_kwargs={"num_epochs": 1, "batch_size": 4096, "use_tqdm": False}, random_seed=1,
        evaluation_kwargs={"use_tqdm": False},
    )
    folder = tmp_path_factory.mktemp("pykeen") / "run"
    result.save_to_directory(folder)
    return folder, result.model


def test_a_pickled_pykeen_model_is_refused_without_trust(pykeen_dir, tmp_path: Path, capsys) -> None:
    folder, _ = pykeen_dir
    code = main(["import", "--format", "pykeen", "--path", str(folder), "--graph", "synthetic",
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert err.strip().splitlines()[-1] == "error: " + IMPORT_PICKLE_REFUSED.format(path=folder / "trained_model.pkl")
    assert not (tmp_path / "out").exists()


def test_pykeen_import_scores_as_pykeen_itself(pykeen_dir, tmp_path: Path, capsys) -> None:
    folder, trained = pykeen_dir
    # The pickle, trusted: its distance (L2, not squared) comes from the model itself.
    assert main(["import", "--format", "pykeen", "--path", str(folder), "--graph", "synthetic", "--trust-pickle",
                 "--out", str(tmp_path / "from-pickle")]) == 0
    assert "warning: unpickling" in capsys.readouterr().err
    # The same weights as a state dict beside the id maps, read without unpickling.
    state_dir = tmp_path / "state"
    shutil.copytree(folder / "training_triples", state_dir / "training_triples")
    torch.save(trained.state_dict(), state_dir / "trained_model.pt")
    assert main(["import", "--format", "pykeen", "--path", str(state_dir), "--graph", "synthetic",
                 "--distance", "l2", "--out", str(tmp_path / "from-state")]) == 0
    trained = trained.cpu().eval()
    for name in ("from-pickle", "from-state"):
        model = load_model(tmp_path / name)
        assert model.config.distance == "l2" and read_config(tmp_path / name)["imported_from"] == "pykeen"
        triples = some_triples(model)
        # PyKEEN's ids of the same labels (its own maps), scored by PyKEEN's model.
        ent, rel = trained_labels(folder)
        native = torch.tensor([[ent[model.entity_labels[h]], rel[model.relation_labels[r]], ent[model.entity_labels[t]]]
                               for h, r, t in triples.tolist()])
        with torch.no_grad():
            expected = trained.score_hrt(native).squeeze(-1).double().numpy()
        np.testing.assert_allclose(kgbias_scores(model, triples), expected, rtol=1e-5, atol=1e-5)


def trained_labels(folder: Path) -> tuple[dict[str, int], dict[str, int]]:
    """PyKEEN's label -> id maps, read back by PyKEEN."""
    from pykeen.triples import TriplesFactory

    factory = TriplesFactory.from_path_binary(folder / "training_triples")
    return factory.entity_to_id, factory.relation_to_id


def test_dglke_import_scores_as_gamma_minus_the_l2_distance(graph: KnowledgeGraph, tmp_path: Path) -> None:
    """DGL-KE's TransE_l2 in the layout of its docs: config.json, <dataset>_<model>_entity.npy, id maps."""
    src = tmp_path / "ckpts"
    vectors = write_npy_folder(src, graph, config=None)
    for name in ("entity", "relation"):
        (src / f"{'entities' if name == 'entity' else 'relations'}.npy").rename(src / f"syn_TransE_l2_{name}.npy")
    gamma = 12.0
    (src / "config.json").write_text(json.dumps({
        "model": "TransE_l2", "dataset": "syn", "emb_size": DIM, "gamma": gamma,
        "emap_file": "entities.tsv", "rmap_file": "relations.tsv"}), encoding="utf-8")
    assert main(["import", "--format", "dglke", "--path", str(src), "--graph", "synthetic",
                 "--out", str(tmp_path / "dgl")]) == 0
    model = load_model(tmp_path / "dgl")
    assert (model.config.distance, model.config.margin) == ("l2", gamma)
    triples = some_triples(model)
    dgl_scores = gamma + scores_by_label(model, triples, vectors, norm=2)  # gamma - ||h + r - t||_2
    np.testing.assert_allclose(gamma + kgbias_scores(model, triples), dgl_scores, rtol=1e-5, atol=1e-4)


def write_pbg_checkpoint(root: Path, graph: KnowledgeGraph, *, dynamic: bool, comparator: str = "l2",
                         version: int = 3) -> tuple[Path, dict, dict]:
    """A PyTorch-BigGraph checkpoint written with h5py in PBG's documented layout (checkpoint_storage.py:
    ``embeddings_<type>_<part>.v<N>.h5`` / ``model.v<N>.h5`` with ``format_version`` 1, the public names
    ``model/relations/<i>/operator/rhs/translation(s)`` and ``model/entities/<type>/global_embedding``;
    ``checkpoint_version.txt``; the ``config.json`` PBG saves) - not by PBG, which is not installed here.
    Two partitions, names in a separate entity_path, two extra entities.
    -> (checkpoint folder, raw rows by entity label (global embedding added), PBG's r by relation label)."""
    import h5py

    rng = np.random.default_rng(7)
    entities, relations = labels(graph)
    entities = [*entities, "extra_1", "extra_2"]
    order = [entities[i] for i in rng.permutation(len(entities))]
    parts = [order[: len(order) // 2], order[len(order) // 2:]]
    checkpoint, names_dir = root / "model", root / "partitioned"
    checkpoint.mkdir(parents=True)
    names_dir.mkdir()
    (checkpoint / "checkpoint_version.txt").write_text(f"{version}\n")
    global_emb = rng.normal(size=DIM).astype(np.float32)
    raw_entities = {}
    for part, names in enumerate(parts):
        (names_dir / f"entity_names_all_{part}.json").write_text(json.dumps(names), encoding="utf-8")
        rows = rng.normal(size=(len(names), DIM)).astype(np.float32)
        with h5py.File(checkpoint / f"embeddings_all_{part}.v{version}.h5", "w") as hf:
            hf.attrs["format_version"] = 1
            hf.create_dataset("embeddings", data=rows)
        raw_entities.update({name: row + global_emb for name, row in zip(names, rows, strict=True)})
    translations = rng.normal(size=(len(relations), DIM)).astype(np.float32)
    with h5py.File(checkpoint / f"model.v{version}.h5", "w") as hf:
        hf.attrs["format_version"] = 1
        if dynamic:
            hf.create_dataset("model/relations/0/operator/rhs/translations", data=translations)
            hf.create_dataset("model/relations/0/operator/lhs/translations", data=-translations)  # unused
        else:
            for i, row in enumerate(translations):
                hf.create_dataset(f"model/relations/{i}/operator/rhs/translation", data=row)
            hf.create_dataset("model/entities/all/global_embedding", data=global_emb)
    if dynamic:  # PBG forbids global embeddings with dynamic relations
        raw_entities = {name: row - global_emb for name, row in raw_entities.items()}
        (names_dir / "dynamic_rel_names.json").write_text(json.dumps(relations), encoding="utf-8")
    config_relations = ([{"name": "all_edges", "lhs": "all", "rhs": "all", "operator": "translation"}] if dynamic
                        else [{"name": r, "lhs": "all", "rhs": "all", "operator": "translation"} for r in relations])
    (checkpoint / "config.json").write_text(json.dumps({
        "entities": {"all": {"num_partitions": 2, "featurized": False}}, "relations": config_relations,
        "dimension": DIM, "comparator": comparator, "bias": False, "global_emb": not dynamic,
        "dynamic_relations": dynamic, "entity_path": str(names_dir), "checkpoint_path": str(checkpoint)}),
        encoding="utf-8")
    return checkpoint, raw_entities, dict(zip(relations, translations, strict=True))


@pytest.mark.parametrize("dynamic", [False, True])
def test_pbg_import_scores_as_minus_the_distance_of_h_to_t_plus_r(graph: KnowledgeGraph, tmp_path: Path,
                                                                    dynamic: bool) -> None:
    """PBG's translation + l2: score = -||h - (t + r)||_2 from the raw arrays (the operator on the tail)."""
    pytest.importorskip("h5py")
    src, ent, rel = write_pbg_checkpoint(tmp_path / "pbg", graph, dynamic=dynamic)
    assert main(["import", "--format", "pbg", "--path", str(src), "--graph", "synthetic",
                 "--out", str(tmp_path / "out")]) == 0
    model = load_model(tmp_path / "out")
    assert model.config.distance == "l2"
    assert read_config(tmp_path / "out")["sign"].startswith("pbg: relation applied to the tail")
    triples = some_triples(model)
    pbg_scores = np.array([-np.linalg.norm(ent[model.entity_labels[h]] - (ent[model.entity_labels[t]]
                                                                           + rel[model.relation_labels[r]]))
                           for h, r, t in triples.tolist()])
    np.testing.assert_allclose(kgbias_scores(model, triples), pbg_scores, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("comparator", ["dot", "cos"])
def test_pbg_with_a_dot_or_cos_comparator_exits_2(graph: KnowledgeGraph, tmp_path: Path, capsys,
                                                  comparator: str) -> None:
    pytest.importorskip("h5py")
    src, _, _ = write_pbg_checkpoint(tmp_path / "pbg", graph, dynamic=False, comparator=comparator)
    assert main(["import", "--format", "pbg", "--path", str(src), "--graph", "synthetic",
                 "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("error: pbg import") and comparator in err and "translation distance" in err


def test_pbg_missing_model_file_exits_2_naming_it(graph: KnowledgeGraph, tmp_path: Path, capsys) -> None:
    pytest.importorskip("h5py")
    src, _, _ = write_pbg_checkpoint(tmp_path / "pbg", graph, dynamic=False)
    (src / "model.v3.h5").unlink()
    assert main(["import", "--format", "pbg", "--path", str(src), "--graph", "synthetic",
                 "--out", str(tmp_path / "out")]) == 2
    expected = IMPORT_FILE_MISSING.format(format="pbg", path=src / "model.v3.h5",
                                          expected="a PyTorch-BigGraph checkpoint HDF5 file")
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"error: {expected}"
