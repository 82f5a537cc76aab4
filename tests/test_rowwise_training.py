"""Row-wise (sparse) Adam: the opt-in optimizer for graphs where dense Adam over every row is the bottleneck.

Same objective as the dense loop (the L2 term split over the slots that hold each row), so: deterministic,
an unedited masked retrain reproduces its base bit for bit, the loss falls; the dense default is untouched.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from kgbias_core.data.graph import KnowledgeGraph
from kgbias_core.embeddings.objective import transe_objective
from kgbias_core.embeddings.store import config_fingerprint
from kgbias_core.embeddings.training import _rowwise_distance, train_model, train_transe
from kgbias_core.embeddings.training_cost import retrain_seconds
from kgbias_core.errors import UNKNOWN_OPTIMIZER, KGBiasError
from tests.conftest import TINY_TRAINING

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA"))]
ROWWISE = replace(TINY_TRAINING, optimizer="sparse_adam", epochs=8)


@pytest.mark.parametrize("device", DEVICES)
def test_rowwise_training_is_deterministic_and_an_empty_mask_reproduces_it(
    tiny_graph: KnowledgeGraph, device: str
) -> None:
    base = train_model(tiny_graph, ROWWISE, name="a", device=device)
    again = train_model(tiny_graph, ROWWISE, name="b", device=device)
    assert torch.equal(base.entity_embeddings, again.entity_embeddings)
    # A masked retrain with nothing masked (weights all 1): the base, bit for bit.
    retrained = train_transe(triples=base.triples, negatives=base.negatives, n_entities=base.n_entities,
                             n_relations=base.n_relations, config=ROWWISE, weights=torch.ones(base.triples.shape[0]),
                             device=device)
    assert torch.equal(retrained.entity_embeddings, base.entity_embeddings)
    assert torch.equal(retrained.relation_embeddings, base.relation_embeddings)


def test_rowwise_training_lowers_the_objective(tiny_graph: KnowledgeGraph) -> None:
    losses: list[float] = []
    model = train_model(tiny_graph, ROWWISE, name="a", device="cpu", on_epoch=lambda e, n, loss: losses.append(loss))
    assert losses[-1] < 0.5 * losses[0]
    from kgbias_core.embeddings.training import initial_embeddings

    start = initial_embeddings(n_entities=model.n_entities, n_relations=model.n_relations, dim=ROWWISE.dim,
                               seed=ROWWISE.seed)

    def objective(e: torch.Tensor, r: torch.Tensor) -> float:
        return float(transe_objective(entities=e, relations=r, triples=model.triples, negatives=model.negatives,
                                      margin=ROWWISE.margin, l2=ROWWISE.l2))

    # The full objective (margin terms and L2) falls too (by 38% in 8 epochs here).
    assert objective(model.entity_embeddings, model.relation_embeddings) < 0.75 * objective(*start)


def test_the_l2_shares_sum_to_the_l2_term_over_an_epoch(tiny_model) -> None:
    """The slots' shares, summed over every training triple and its negative, are (l2/2)||theta||^2 of every
    row some triple holds (an independent sum over rows)."""
    e, r = tiny_model.entity_embeddings.double(), tiny_model.relation_embeddings.double()
    both = torch.cat([tiny_model.triples, tiny_model.negatives])
    entity_degree = torch.bincount(both[:, [0, 2]].reshape(-1), minlength=tiny_model.n_entities)
    relation_degree = torch.bincount(both[:, 1], minlength=tiny_model.n_relations)
    l2 = 30.0
    _, shares = _rowwise_distance(entities=e, relations=r, triples=both,
                                  entity_share=l2 / (2 * entity_degree.clamp_min(1).double()),
                                  relation_share=l2 / (2 * relation_degree.clamp_min(1).double()))
    held_e, held_r = entity_degree > 0, relation_degree > 0
    expected = l2 / 2 * (e[held_e].pow(2).sum() + r[held_r].pow(2).sum())
    torch.testing.assert_close(shares, expected, rtol=1e-12, atol=0)


def test_the_dense_default_keeps_every_fingerprint() -> None:
    config = {"dataset": "synthetic", "data_hash": "x", **TINY_TRAINING.to_dict()}
    before = {k: v for k, v in config.items() if k != "optimizer"}  # a config.json written before the field
    assert config_fingerprint(config) == config_fingerprint(before)
    assert config_fingerprint({**config, "optimizer": "sparse_adam"}) != config_fingerprint(before)


def test_an_unknown_optimizer_is_refused(tiny_graph: KnowledgeGraph) -> None:
    with pytest.raises(KGBiasError) as error:
        train_model(tiny_graph, replace(TINY_TRAINING, optimizer="sgd"), name="x", device="cpu")
    assert str(error.value) == UNKNOWN_OPTIMIZER.format(optimizer="sgd", known="adam, sparse_adam")


def test_the_rowwise_estimate_counts_only_the_rows_a_step_touches() -> None:
    """At 20M triples (5.7M entities, d 64, batch 4096) a step touches at most 6 x 4096 rows, not 5.7M."""
    kwargs = dict(n_triples=20_000_000, n_parameters=5_700_000 * 64, batch_size=4096, epochs=1)
    dense, rowwise = retrain_seconds(**kwargs), retrain_seconds(**kwargs, optimizer="sparse_adam", dim=64)
    assert rowwise == pytest.approx(dense * 6 * 4096 / 5_700_000)
