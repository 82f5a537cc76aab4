"""Bernoulli corruption of the frozen negatives (issue 24, part 2: better models, influence still exact): the
relation shares against a brute-force count, the draw, fewer false negatives than uniform, the fingerprint, masked
retraining bit for bit, re-drawn negatives; and for both settings of the draw (``--corruption``,
``--negative-entities``: tests/test_negative_entities.py has the rest of the second) the store's check and
``kgbias train``'s flag."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from kgbias_core.cli import main
from kgbias_core.embeddings.config import TrainConfig
from kgbias_core.embeddings.objective import negatives_of
from kgbias_core.embeddings.store import config_fingerprint, load_model, save_model
from kgbias_core.embeddings.training import (
    bernoulli_head_probability,
    corruption_head_probability,
    degree_weights,
    frozen_negatives,
    train_model,
)
from kgbias_core.errors import (
    CORRUPTION_NOT_TRANSE,
    NEGATIVE_ENTITIES_NOT_TRANSE,
    UNKNOWN_CORRUPTION,
    UNKNOWN_NEGATIVE_ENTITIES,
    KGBiasError,
    ModelStoreError,
)
from kgbias_core.influence.negatives import redrawn_negatives
from kgbias_core.influence.retraining_check import masked_retrain_bias
from kgbias_core.measures.group_bias import group_bias
from kgbias_core.measures.groups import occupation_groups
from kgbias_core.whatif.edits import _ADDED_NEGATIVES_STREAM, add_edit, addition, retrain

from .conftest import DEGREE_K, REPO, TINY_TRAINING

K = DEGREE_K  # the Bernoulli model's too: one count for both draws' models

#: The two settings of how frozen negatives are drawn: (TrainConfig field, the unknown value's error and its name in
#: it, the PyKEEN-model error, the train flag, a value the flag takes, its fixture of a model trained with it).
DRAWS = {
    "corruption": (UNKNOWN_CORRUPTION, "corruption", CORRUPTION_NOT_TRANSE, "--corruption", "bernoulli",
                   "bern_model"),
    "negative_entities": (UNKNOWN_NEGATIVE_ENTITIES, "draw", NEGATIVE_ENTITIES_NOT_TRANSE, "--negative-entities",
                          "degree", "degree_model"),
}


@pytest.fixture(scope="module")
def bern_model(tiny_graph):
    """The tiny model of the tests with K = 3 negatives drawn by Bernoulli corruption."""
    config = replace(TINY_TRAINING, negatives_per_triple=K, corruption="bernoulli", epochs=10)
    return train_model(tiny_graph, config, name="tiny-bern", device="cpu")


def brute_force_head_share(triples: list[tuple[int, int, int]]) -> dict[int, float]:
    """tph / (tph + hpt) per relation, counted with dictionaries (Wang et al. 2014, §3.2)."""
    tails_of: dict[tuple[int, int], set[int]] = defaultdict(set)
    heads_of: dict[tuple[int, int], set[int]] = defaultdict(set)
    for h, r, t in triples:
        tails_of[(r, h)].add(t)
        heads_of[(r, t)].add(h)
    share = {}
    for r in {r for _, r, _ in triples}:
        per_head = [len(v) for (rr, _), v in tails_of.items() if rr == r]
        per_tail = [len(v) for (rr, _), v in heads_of.items() if rr == r]
        tph, hpt = sum(per_head) / len(per_head), sum(per_tail) / len(per_tail)
        share[r] = tph / (tph + hpt)
    return share


def test_the_relation_shares_equal_a_brute_force_count() -> None:
    generator = torch.Generator().manual_seed(4)
    # 30 heads, 6 tails: many-to-one relations
    triples = torch.stack([torch.randint(size, (400,), generator=generator) for size in (30, 5, 6)], dim=1)
    triples = torch.unique(triples, dim=0)
    expected = brute_force_head_share([tuple(t) for t in triples.tolist()])
    queried = torch.tensor([[0, r, 0] for r in range(6)])  # relation 5 is in no triple: 0.5
    shares = bernoulli_head_probability(triples, n_relations=6, triples=queried)
    for r in range(5):
        assert shares[r].item() == pytest.approx(expected[r], rel=1e-6)
        assert shares[r].item() < 0.5  # 30 heads over 6 tails: corrupt the tail
    assert shares[5].item() == 0.5


def test_a_bernoulli_draw_corrupts_one_side_at_its_relations_rate_and_extends_with_k() -> None:
    triples = torch.tensor([[0, 0, 1], [2, 1, 3]] * 3000)
    n = triples.shape[0]
    probability = torch.tensor([0.9, 0.2]).repeat(3000)
    four = frozen_negatives(triples, n_entities=10_000, seed=1, count=4, head_probability=probability)
    assert torch.equal(four, frozen_negatives(triples, n_entities=10_000, seed=1, count=4,
                                              head_probability=probability))
    assert torch.equal(four[: 2 * n], frozen_negatives(triples, n_entities=10_000, seed=1, count=2,
                                                       head_probability=probability))
    assert not torch.equal(four[:n], frozen_negatives(triples, n_entities=10_000, seed=1))  # not the uniform draw
    by_rank = four.view(4, n, 3)
    kept_head = by_rank[:, :, 0] == triples[:, 0]
    kept_tail = by_rank[:, :, 2] == triples[:, 2]
    assert (kept_head | kept_tail).all() and (by_rank[:, :, 1] == triples[:, 1]).all()
    head_share = (~kept_head).float().mean(dim=0)  # [n]: the share of a triple's negatives corrupting the head
    assert head_share[0::2].mean().item() == pytest.approx(0.9, abs=0.02)
    assert head_share[1::2].mean().item() == pytest.approx(0.2, abs=0.02)
    # Certain coins: every negative on one side.
    only_tails = frozen_negatives(triples, n_entities=10_000, seed=1, count=2, head_probability=torch.zeros(n))
    assert (only_tails.view(2, n, 3)[:, :, 0] == triples[:, 0]).all()


def test_bernoulli_draws_fewer_true_triples_as_negatives(tiny_graph) -> None:
    triples = tiny_graph.training.mapped_triples
    known = {tuple(t) for t in triples.tolist()}
    n_entities, n_relations = tiny_graph.training.num_entities, tiny_graph.training.num_relations

    def false_share(negatives: torch.Tensor) -> float:
        return sum(tuple(t) in known for t in negatives.tolist()) / negatives.shape[0]

    uniform = frozen_negatives(triples, n_entities=n_entities, seed=0, count=4)
    bern = frozen_negatives(triples, n_entities=n_entities, seed=0, count=4,
                            head_probability=bernoulli_head_probability(triples, n_relations=n_relations,
                                                                        triples=triples))
    assert false_share(bern) < 0.5 * false_share(uniform)


@pytest.mark.parametrize("field", sorted(DRAWS))
def test_uniform_keeps_every_stored_fingerprint_and_another_draw_has_its_own(field: str) -> None:
    old = {**TrainConfig().to_dict(), "dataset": "fb15k237", "data_hash": "x"}
    assert field not in old  # uniform's config.json is the one written before the field existed
    uniform = {**old, field: "uniform"}
    other = {**old, field: DRAWS[field][4]}
    assert config_fingerprint(uniform) == config_fingerprint(old)
    assert config_fingerprint(other)["config_hash"] != config_fingerprint(old)["config_hash"]
    assert TrainConfig.from_dict(other).to_dict()[field] == DRAWS[field][4]


@pytest.mark.parametrize("field", ["corruption", "negative_entities"])
def test_a_model_stores_its_draw_and_an_unedited_retrain_reproduces_it(field: str, request, tmp_path: Path) -> None:
    """For either setting of the draw (Bernoulli sides, entities by degree)."""
    model = request.getfixturevalue(DRAWS[field][5])
    triples = model.triples
    drawn = (dict(head_probability=bernoulli_head_probability(triples, n_relations=model.n_relations,
                                                              triples=triples)) if field == "corruption"
             else dict(entity_weights=degree_weights(triples, n_entities=model.n_entities)))
    common = dict(n_entities=model.n_entities, seed=model.config.seed, count=K)
    expected = frozen_negatives(triples, **common, **drawn)
    assert torch.equal(model.frozen_negatives, expected)
    assert not torch.equal(expected, frozen_negatives(triples, **common))  # not the uniform draw
    # Re-drawn from the model's own seed and config: its frozen negatives.
    assert torch.equal(redrawn_negatives(model, seed=model.config.seed), expected)
    loaded = load_model(save_model(model, tmp_path))
    assert getattr(loaded.config, field) == DRAWS[field][4]
    assert torch.equal(loaded.frozen_negatives, expected)
    groups = occupation_groups(loaded)
    stored = group_bias(entity_embeddings=loaded.entity_embeddings, relation_embeddings=loaded.relation_embeddings,
                        groups=groups)
    retrained = masked_retrain_bias(loaded, removed=None, groups=groups)
    assert torch.isfinite(stored).sum() > 10
    torch.testing.assert_close(retrained, stored, rtol=0, atol=0, equal_nan=True)  # bit for bit


def test_an_add_edits_negatives_follow_the_models_corruption(bern_model) -> None:
    edit = add_edit(bern_model, "nurse", c=0.5)
    added = addition(bern_model, edit)
    n_entities = bern_model.n_entities + len(edit.added_entities)
    statistics = dict(statistics=bern_model.triples, n_relations=bern_model.n_relations, triples=added.triples)
    drawn = dict(n_entities=n_entities, seed=bern_model.config.seed, stream=_ADDED_NEGATIVES_STREAM, count=K)
    assert torch.equal(added.negatives, frozen_negatives(
        added.triples, **drawn, head_probability=corruption_head_probability("bernoulli", **statistics)))
    assert not torch.equal(added.negatives, frozen_negatives(added.triples, **drawn))
    # The retrain draws the same negatives for the added triples as the prediction does.
    quick = replace(bern_model, config=replace(bern_model.config, epochs=1))
    retrained = retrain(quick, edit, name="a")
    m = retrained.triples.shape[0]
    n = bern_model.triples.shape[0]
    assert torch.equal(negatives_of(retrained.negatives, torch.arange(n, m), m), added.negatives)


@pytest.mark.parametrize("field", sorted(DRAWS))
def test_an_unknown_draw_is_refused_in_training_and_in_the_store(tiny_graph, field: str, request,
                                                                  tmp_path: Path) -> None:
    unknown, name, not_transe, _, good, fixture = DRAWS[field]
    known = ", ".join(("uniform", good))
    with pytest.raises(KGBiasError) as error:
        train_model(tiny_graph, replace(TINY_TRAINING, epochs=1, **{field: "sideways"}), name="x", device="cpu")
    assert str(error.value) == unknown.format(**{name: "sideways"}, known=known)
    with pytest.raises(KGBiasError) as error:
        train_model(tiny_graph, replace(TINY_TRAINING, model="distmult", **{field: good}), name="d", device="cpu")
    assert str(error.value) == not_transe.format(**{name: good}, model="distmult")
    path = save_model(request.getfixturevalue(fixture), tmp_path)
    config = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps({**config, field: "sideways"}))
    with pytest.raises(ModelStoreError, match=f"unknown {field.replace('_', ' ')} 'sideways'"):
        load_model(path)


@pytest.mark.parametrize("field", sorted(DRAWS))
def test_kgbias_train_takes_each_draw_and_refuses_an_unknown_one(field: str, tmp_path: Path) -> None:
    _, _, _, flag, good, _ = DRAWS[field]
    out = tmp_path / "m"
    assert main(["train", "--dataset", "synthetic", "--dim", "8", "--epochs", "1", "--negatives", "2",
                 flag, good, "--out", str(out)]) == 0
    assert json.loads((out / "config.json").read_text())[field] == good
    result = subprocess.run(
        [sys.executable, "-m", "kgbias_core", "train", "--dataset", "synthetic", flag, "sideways",
         "--out", str(tmp_path / "x")], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and flag in result.stderr
    assert not (tmp_path / "x").exists()
