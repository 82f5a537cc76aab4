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
import pandas as pd
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
    NOT_TRANSE,
    MeasureError,
)
from kgbias_core.influence.closed_form import influence_context
from kgbias_core.influence.negatives import IMPORT_NEGATIVES, IMPORT_NEGATIVES_MAX_ROWS, import_negatives_per_triple
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
    # influence re-draws IMPORT_NEGATIVES a triple, as the import recorded (with one a triple the lab's interval held
    # 45% of the what-if sets of L1 graphs predicted as imports, with eight and its band 96%: docs/results/whatif.md)
    assert model.config.negatives_per_triple == IMPORT_NEGATIVES == import_negatives_per_triple(len(model.triples))
    drawn = ModelAnalysis(model).negatives
    assert not drawn.exact and drawn.negatives.shape == (IMPORT_NEGATIVES * len(model.triples), 3)
    assert import_negatives_per_triple(IMPORT_NEGATIVES_MAX_ROWS // 3) == 3  # a large graph re-draws fewer
    assert import_negatives_per_triple(10 * IMPORT_NEGATIVES_MAX_ROWS) == 1


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


#: PBG's operator parameters (torchbiggraph/operators.py): name -> shape for dimension d, static relations.
PBG_PARAM_SHAPES = {"none": {}, "diagonal": {"diagonal": (DIM,)}, "translation": {"translation": (DIM,)},
                    "linear": {"linear_transformation": (DIM, DIM)},
                    "affine": {"linear_transformation": (DIM, DIM), "translation": (DIM,)},
                    "complex_diagonal": {"real": (DIM // 2,), "imag": (DIM // 2,)}}


def write_pbg_checkpoint(root: Path, graph: KnowledgeGraph, *, dynamic: bool, comparator: str = "l2",
                         operator: str = "translation", max_norm: float | None = None, version: int = 3,
                         config_changes: dict | None = None) -> tuple[Path, dict, dict]:
    """A PyTorch-BigGraph checkpoint written with h5py in PBG's documented layout (checkpoint_storage.py:
    ``embeddings_<type>_<part>.v<N>.h5`` / ``model.v<N>.h5`` with ``format_version`` 1, the public names
    ``model/relations/<i>/operator/<side>/<param>`` and ``model/entities/<type>/global_embedding``;
    ``checkpoint_version.txt``; the ``config.json`` PBG saves) - not by PBG, which is not installed here.
    Two partitions, names in a separate entity_path, two extra entities. Dynamic relations hold a
    left-hand and a right-hand operator with different values (PBG ranks tails with the left-hand one).
    -> (checkpoint folder, entity rows by label as PBG looks them up (torch's max_norm, global
    embedding added), {relation label: {param: the operator's array that ranks tails}})."""
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
    global_emb = np.zeros(DIM, dtype=np.float32) if dynamic else rng.normal(size=DIM).astype(np.float32)
    looked_up = {}
    for part, names in enumerate(parts):
        (names_dir / f"entity_names_all_{part}.json").write_text(json.dumps(names), encoding="utf-8")
        rows = rng.normal(size=(len(names), DIM)).astype(np.float32)
        with h5py.File(checkpoint / f"embeddings_all_{part}.v{version}.h5", "w") as hf:
            hf.attrs["format_version"] = 1
            hf.create_dataset("embeddings", data=rows)
        # PBG's lookup: torch's F.embedding with max_norm, then + the global embedding (model.py).
        rows = torch.nn.functional.embedding(torch.arange(len(names)), torch.from_numpy(rows.copy()),
                                             max_norm=max_norm).numpy()
        looked_up.update({name: row + global_emb for name, row in zip(names, rows, strict=True)})
    shapes = PBG_PARAM_SHAPES[operator]
    params = {r: {p: rng.normal(size=shape).astype(np.float32) for p, shape in shapes.items()} for r in relations}
    with h5py.File(checkpoint / f"model.v{version}.h5", "w") as hf:
        hf.attrs["format_version"] = 1
        if dynamic:
            for p in shapes:
                plural = p if p in ("real", "imag") else f"{p}s"
                stacked = np.stack([params[r][p] for r in relations])
                hf.create_dataset(f"model/relations/0/operator/lhs/{plural}", data=stacked)
                hf.create_dataset(f"model/relations/0/operator/rhs/{plural}", data=stacked[::-1] + 1)  # unused
        else:
            for i, r in enumerate(relations):
                for p, value in params[r].items():
                    hf.create_dataset(f"model/relations/{i}/operator/rhs/{p}", data=value)
            hf.create_dataset("model/entities/all/global_embedding", data=global_emb)
    if dynamic:  # PBG forbids global embeddings with dynamic relations
        (names_dir / "dynamic_rel_names.json").write_text(json.dumps(relations), encoding="utf-8")
    config_relations = ([{"name": "all_edges", "lhs": "all", "rhs": "all", "operator": operator}] if dynamic
                        else [{"name": r, "lhs": "all", "rhs": "all", "operator": operator} for r in relations])
    (checkpoint / "config.json").write_text(json.dumps({
        "entities": {"all": {"num_partitions": 2, "featurized": False}}, "relations": config_relations,
        "dimension": DIM, "comparator": comparator, "bias": False, "global_emb": not dynamic, "max_norm": max_norm,
        "dynamic_relations": dynamic, "entity_path": str(names_dir), "checkpoint_path": str(checkpoint),
        **(config_changes or {})}), encoding="utf-8")
    return checkpoint, looked_up, params


def pbg_formula(h: np.ndarray, params: dict, t: np.ndarray, *, operator: str, comparator: str,
                dynamic: bool) -> float:
    """PBG's score of one edge by its definition (model.py: adjust_embs, the comparators; operators.py),
    written apart from kgbias_core.embeddings.pbg_score: the operator on the tail for static relations,
    the left-hand one on the head for dynamic ones; cos normalises after the operator."""
    def op(x: np.ndarray) -> np.ndarray:
        p = params
        if operator == "diagonal":
            return p["diagonal"] * x
        if operator == "translation":
            return x + p["translation"]
        if operator in ("linear", "affine"):
            return p["linear_transformation"] @ x + (p["translation"] if operator == "affine" else 0)
        if operator == "complex_diagonal":
            z = (x[: DIM // 2] + 1j * x[DIM // 2:]) * (p["real"] + 1j * p["imag"])
            return np.concatenate([z.real, z.imag])
        return x

    a, b = (op(h), t) if dynamic else (h, op(t))
    a, b = a.astype(np.float64), b.astype(np.float64)
    if comparator == "cos":
        return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
    if comparator == "dot":
        return float(a @ b)
    distance = float(((a - b) ** 2).sum())
    return -np.sqrt(distance) if comparator == "l2" else -distance


def import_pbg(src: Path, out: Path) -> StoredModel:
    assert main(["import", "--format", "pbg", "--path", str(src), "--graph", "synthetic", "--out", str(out)]) == 0
    return load_model(out)


def assert_scores_as_pbg(model: StoredModel, ent: dict, params: dict, *, operator: str, comparator: str,
                         dynamic: bool) -> None:
    """kgbias's score_hrt on 50 training triples, and score_t of 3 of them over every tail (the paths
    Fisher, the audit, fairness and link prediction take), equal PBG's formula."""
    triples = some_triples(model)
    expected = np.array([pbg_formula(ent[model.entity_labels[h]], params[model.relation_labels[r]],
                                     ent[model.entity_labels[t]], operator=operator, comparator=comparator,
                                     dynamic=dynamic) for h, r, t in triples.tolist()])
    np.testing.assert_allclose(kgbias_scores(model, triples), expected, rtol=1e-4, atol=1e-4)
    with torch.no_grad():
        every_tail = pykeen_model(model, device="cpu").score_t(triples[:3, :2]).double().numpy()  # [3, E]
    for row, (h, r, _) in zip(every_tail, triples[:3].tolist(), strict=True):
        tails = [pbg_formula(ent[model.entity_labels[h]], params[model.relation_labels[r]], ent[label],
                             operator=operator, comparator=comparator, dynamic=dynamic)
                 for label in model.entity_labels]
        np.testing.assert_allclose(row, tails, rtol=1e-4, atol=1e-4)


#: (operator, comparator, dynamic, max_norm) -> the kind kgbias stores: TransE, DistMult and ComplEx
#: where they score exactly as PBG, else PBG's own formula (kind "pbg").
PBG_CASES = {
    ("translation", "l2", False, None): "transe",
    ("translation", "squared_l2", True, None): "transe",
    ("none", "l2", False, None): "transe",
    ("diagonal", "dot", False, 1.5): "distmult",
    ("diagonal", "dot", True, None): "distmult",
    ("none", "dot", False, None): "distmult",
    ("complex_diagonal", "dot", False, None): "complex",
    ("complex_diagonal", "dot", True, 2.0): "complex",
    ("translation", "dot", False, None): "pbg",
    ("translation", "dot", True, None): "pbg",
    ("linear", "dot", False, None): "pbg",
    ("affine", "dot", True, None): "pbg",
    ("none", "cos", False, None): "pbg",
    ("diagonal", "cos", False, None): "pbg",
    ("translation", "cos", True, 1.5): "pbg",
    ("linear", "cos", True, None): "pbg",
    ("affine", "cos", False, None): "pbg",
    ("complex_diagonal", "cos", False, None): "pbg",
    ("diagonal", "l2", False, None): "pbg",
    ("affine", "squared_l2", False, 2.0): "pbg",
}


@pytest.mark.parametrize(("operator", "comparator", "dynamic", "max_norm"), list(PBG_CASES))
def test_pbg_import_scores_as_pbgs_formula(graph: KnowledgeGraph, tmp_path: Path, operator: str, comparator: str,
                                           dynamic: bool, max_norm: float | None) -> None:
    """Every operator and comparator: kgbias's scores equal PBG's definition from the raw arrays, with
    max_norm applied as torch's F.embedding does on PBG's lookups; the kind and the sign are recorded."""
    pytest.importorskip("h5py")
    src, ent, params = write_pbg_checkpoint(tmp_path / "pbg", graph, dynamic=dynamic, comparator=comparator,
                                            operator=operator, max_norm=max_norm)
    model = import_pbg(src, tmp_path / "out")
    kind = PBG_CASES[operator, comparator, dynamic, max_norm]
    config = read_config(tmp_path / "out")
    assert config["model"] == kind
    assert config["pbg"] == {"operator": operator, "comparator": comparator, "side": "head" if dynamic else "tail",
                             "max_norm": max_norm, "global_emb": not dynamic, "dynamic_relations": dynamic,
                             "dim": DIM}
    assert config["sign"].startswith("pbg: ")
    if kind == "transe":
        assert model.config.distance == comparator
    assert_scores_as_pbg(model, ent, params, operator=operator, comparator=comparator, dynamic=dynamic)


def test_pbg_distance_flag_on_a_dot_model_exits_2(graph: KnowledgeGraph, tmp_path: Path, capsys) -> None:
    pytest.importorskip("h5py")
    src, _, _ = write_pbg_checkpoint(tmp_path / "pbg", graph, dynamic=False, comparator="dot", operator="diagonal")
    assert main(["import", "--format", "pbg", "--path", str(src), "--graph", "synthetic", "--distance", "l1",
                 "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"error: pbg import: cannot read {src / 'config.json'}: --distance l1 names TransE's distance; the diagonal "
        "operator with the dot comparator is scored as PBG scores it, with none")


def test_pbg_max_norm_rescales_only_the_rows_above_it(graph: KnowledgeGraph, tmp_path: Path) -> None:
    """The imported TransE rows: min(1, max_norm / (||e|| + 1e-7)) e + g, by the formula in numpy."""
    pytest.importorskip("h5py")
    import h5py

    src, _, _ = write_pbg_checkpoint(tmp_path / "pbg", graph, dynamic=False, max_norm=2.5)
    model = import_pbg(src, tmp_path / "out")
    names = json.loads((tmp_path / "pbg" / "partitioned" / "entity_names_all_0.json").read_text())
    with h5py.File(src / "embeddings_all_0.v3.h5") as hf:
        raw = hf["embeddings"][...].astype(np.float64)
    with h5py.File(src / "model.v3.h5") as hf:
        global_emb = hf["model/entities/all/global_embedding"][...]
    norms = np.linalg.norm(raw, axis=1, keepdims=True)
    assert (norms > 2.5).any() and (norms <= 2.5).any()
    expected = raw * np.minimum(1.0, 2.5 / (norms + 1e-7)) + global_emb
    rows = [model.entity_to_id[name] for name in names if name in model.entity_to_id]
    found = [i for i, name in enumerate(names) if name in model.entity_to_id]
    np.testing.assert_allclose(model.entity_embeddings[rows].numpy(), expected[found], rtol=1e-6, atol=1e-6)
    assert read_config(tmp_path / "out")["pbg"]["max_norm"] == 2.5


@pytest.mark.parametrize(("changes", "problem"), [
    ({"bias": True}, "the bias term (bias: true)"),
    ({"entities": {"all": {"num_partitions": 2, "featurized": True}}}, "featurized entities"),
    ({"comparator": "softmax"}, "the comparator 'softmax'"),
    ({"max_norm": -1}, "max_norm -1, not a positive number"),
    ({"relations": [{"name": "a", "operator": "diagonal"}, {"name": "b", "operator": "linear"}]},
     "relations with different operators (diagonal, linear)"),
    ({"relations": [{"name": "a", "operator": "rotation"}]}, "the operator 'rotation'"),
])
def test_pbg_configs_kgbias_cannot_score_exit_2_in_one_line(graph: KnowledgeGraph, tmp_path: Path, capsys,
                                                            changes: dict, problem: str) -> None:
    pytest.importorskip("h5py")
    src, _, _ = write_pbg_checkpoint(tmp_path / "pbg", graph, dynamic=False, config_changes=changes)
    assert main(["import", "--format", "pbg", "--path", str(src), "--graph", "synthetic",
                 "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"error: pbg import from {src / 'config.json'}: kgbias cannot score {problem}")
    assert not (tmp_path / "out").exists()


def test_pbg_missing_model_file_exits_2_naming_it(graph: KnowledgeGraph, tmp_path: Path, capsys) -> None:
    pytest.importorskip("h5py")
    src, _, _ = write_pbg_checkpoint(tmp_path / "pbg", graph, dynamic=False)
    (src / "model.v3.h5").unlink()
    assert main(["import", "--format", "pbg", "--path", str(src), "--graph", "synthetic",
                 "--out", str(tmp_path / "out")]) == 2
    expected = IMPORT_FILE_MISSING.format(format="pbg", path=src / "model.v3.h5",
                                          expected="a PyTorch-BigGraph checkpoint HDF5 file")
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"error: {expected}"


@pytest.fixture(scope="module")
def pbg_dot_model(graph: KnowledgeGraph, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, dict]:
    """PBG's translation + dot (kind "pbg", no PyKEEN model scores as it) imported into a store of its own.
    -> (model directory, PBG's entity rows by label, its operator parameters by relation label)."""
    pytest.importorskip("h5py")
    root = tmp_path_factory.mktemp("pbg-dot")
    src, ent, params = write_pbg_checkpoint(root / "pbg", graph, dynamic=False, comparator="dot")
    import_pbg(src, root / "store" / "pbg-dot")
    return root / "store" / "pbg-dot", ent, params


def test_fisher_audit_and_fairness_run_on_an_imported_dot_model(pbg_dot_model, tmp_path: Path) -> None:
    """Fisher's b_p, Keidar's audit and Schwertmann's fairness run on a PBG dot model; the occupation each
    person is predicted (fairness's top-1 tail) is the argmax of PBG's formula over every entity."""
    from kgbias_core.evaluation.link_prediction import predict_top1_tails

    path, ent, params = pbg_dot_model
    model = load_model(path)
    s = model.schema
    assert main(["fisher", "--model", str(path), "--relation", s.gender_relation, "--a", s.male, "--b", s.female,
                 "--out", str(tmp_path / "fisher.csv")]) == 0
    fisher = pd.read_csv(tmp_path / "fisher.csv")
    assert len(fisher) > 5 and np.isfinite(fisher["bias"]).all() and (fisher["bias"] != 0).any()
    assert main(["audit", "--models", str(path), "--min-persons", "5", "--out", str(tmp_path / "audit.csv")]) == 0
    assert set(pd.read_csv(tmp_path / "audit.csv")["model"]) == {"pbg-dot"}
    assert main(["fairness", "--models", str(path), "--bootstrap", "20", "--out", str(tmp_path / "fair.csv")]) == 0
    assert len(pd.read_csv(tmp_path / "fair.csv")) > 0
    occupation = model.relation_id(s.occupation_relation)
    heads = model.triples[model.triples[:, 1] == occupation][:20, 0]
    predicted = predict_top1_tails(pykeen_model(model, device="cpu"), heads=heads, relation=occupation)
    entity_rows = np.stack([ent[label] for label in model.entity_labels])
    for head, tail in zip(heads.tolist(), predicted.tolist(), strict=True):
        scores = [pbg_formula(ent[model.entity_labels[head]], params[s.occupation_relation], row,
                              operator="translation", comparator="dot", dynamic=False) for row in entity_rows]
        assert tail == int(np.argmax(scores))


def test_du_measures_refuse_an_imported_dot_model_in_one_line(pbg_dot_model, tmp_path: Path, capsys) -> None:
    path, _, _ = pbg_dot_model
    expected = NOT_TRANSE.format(model="pbg-dot", kind="pbg (PyTorch-BigGraph's translation operator, dot comparator)")
    assert "psi = dist(h + r, t)" in expected
    for command in (["measures", "--model", str(path), "--out", str(tmp_path / "m.csv")],
                    ["influence", "--model", str(path), "--occupation", "nurse", "--out", str(tmp_path / "i.csv")]):
        assert main(command) == 2
        assert capsys.readouterr().err.strip().splitlines() == [f"error: {expected}"]


def test_pages_show_why_du_measures_do_not_apply_and_keep_fisher(pbg_dot_model, monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    """Du's pages show NOT_TRANSE, never a traceback; the attributes page (Fisher's b_p) still draws."""
    from .conftest import page, use_store

    path, _, _ = pbg_dot_model
    use_store(path.parent, monkeypatch, tmp_path)
    expected = NOT_TRANSE.format(model="pbg-dot", kind="pbg (PyTorch-BigGraph's translation operator, dot comparator)")
    for name in ("overview", "debiasing_lab", "validation", "influential_triples"):
        app = page(name).run()
        assert not app.exception, name
        assert expected in [e.value for e in app.error], name
    app = page("attributes").run()
    assert not app.exception and not app.error and len(app.dataframe) > 0


class _Payload:
    """A pickle that runs code when read: it writes a line on stderr, then the load fails."""

    def __reduce__(self):
        return (exec, ("import sys; sys.stderr.write('PAYLOAD RAN\\n')",))


def test_trust_pickle_warns_before_the_payload_runs(tmp_path: Path, capsys) -> None:
    """The issue: the warning came only after a successful load; a malicious trained_model.pkl ran its payload
    and the user saw only 'Invalid magic number; corrupt file?'."""
    import pickle

    folder = tmp_path / "evil"
    folder.mkdir()
    (folder / "trained_model.pkl").write_bytes(pickle.dumps(_Payload()))
    code = main(["import", "--format", "pykeen", "--path", str(folder), "--graph", "synthetic", "--trust-pickle",
                 "--out", str(tmp_path / "out")])
    lines = capsys.readouterr().err.splitlines()
    assert code == 2 and not (tmp_path / "out").exists()
    warning = next(i for i, line in enumerate(lines) if line.startswith("warning: unpickling"))
    assert warning < lines.index("PAYLOAD RAN"), lines
    assert sum(line.startswith("warning: unpickling") for line in lines) == 1
