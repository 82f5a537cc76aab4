"""Training: deterministic, frozen negatives, masking, progress, cancellation, PyKEEN models."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from kgbias_core.data.synthetic import SyntheticConfig, generate_people_graph
from kgbias_core.embeddings.config import TrainConfig
from kgbias_core.embeddings.training import (
    frozen_negatives,
    initial_embeddings,
    train_model,
    train_transe,
    transe_module,
)
from kgbias_core.errors import CancelledError, KGBiasError

SMALL = TrainConfig(dim=8, epochs=3, batch_size=128, lr=1e-2, l2=10.0, seed=5)


@pytest.fixture(scope="module")
def small_graph():
    return generate_people_graph(SyntheticConfig(n_persons=150, seed=2))


def test_frozen_negatives_corrupt_exactly_one_side_and_are_seeded() -> None:
    triples = torch.tensor([[0, 0, 1], [2, 1, 3], [4, 0, 5]] * 100)
    negatives = frozen_negatives(triples, n_entities=50, seed=1)
    assert torch.equal(negatives, frozen_negatives(triples, n_entities=50, seed=1))
    assert not torch.equal(negatives, frozen_negatives(triples, n_entities=50, seed=2))
    assert torch.equal(negatives[:, 1], triples[:, 1])
    same_head = negatives[:, 0] == triples[:, 0]
    same_tail = negatives[:, 2] == triples[:, 2]
    assert (same_head | same_tail).all()
    assert 0.35 < float((~same_head).float().mean()) < 0.65


def test_added_entities_keep_the_base_initialisation() -> None:
    base_e, base_r = initial_embeddings(n_entities=10, n_relations=3, dim=4, seed=0)
    more_e, more_r = initial_embeddings(n_entities=13, n_relations=3, dim=4, seed=0, n_base_entities=10)
    assert torch.equal(base_e, more_e[:10]) and torch.equal(base_r, more_r)


def test_transe_module_scores_negative_squared_distance() -> None:
    e, r = initial_embeddings(n_entities=5, n_relations=2, dim=4, seed=0)
    module = transe_module(entities=e, relations=r, device=torch.device("cpu"))
    hrt = torch.tensor([[0, 1, 2], [3, 0, 4]])
    expected = -((e[hrt[:, 0]] + r[hrt[:, 1]] - e[hrt[:, 2]]) ** 2).sum(-1)
    assert torch.allclose(module.score_hrt(hrt).squeeze(-1), expected, atol=1e-6)


def test_training_is_deterministic_and_reports_progress(small_graph) -> None:
    seen = []
    a = train_model(small_graph, SMALL, name="a", on_epoch=lambda e, n, loss: seen.append((e, n, loss)))
    b = train_model(small_graph, SMALL, name="b")
    c = train_model(small_graph, replace(SMALL, seed=6), name="c")
    assert torch.equal(a.entity_embeddings, b.entity_embeddings)
    assert not torch.equal(a.entity_embeddings, c.entity_embeddings)
    assert [e for e, _, _ in seen] == [1, 2, 3] and all(n == 3 for _, n, _ in seen)
    assert seen[-1][2] < seen[0][2]  # the loss goes down
    assert a.damping == pytest.approx(2 * a.triples.shape[0] / a.n_entities)
    assert torch.equal(a.negatives, frozen_negatives(a.triples, n_entities=a.n_entities, seed=SMALL.seed))


def test_an_unedited_masked_retrain_reproduces_the_model_bit_for_bit(small_graph) -> None:
    model = train_model(small_graph, SMALL, name="a", device=torch.device("cpu"))

    def retrain(weights: torch.Tensor) -> torch.Tensor:
        return train_transe(triples=model.triples, negatives=model.negatives, n_entities=model.n_entities,
                            n_relations=model.n_relations, config=SMALL, weights=weights,
                            device=torch.device("cpu")).entity_embeddings

    n = model.triples.shape[0]
    assert torch.equal(retrain(torch.ones(n)), model.entity_embeddings)
    masked = torch.ones(n)
    masked[:3] = 0
    assert not torch.equal(retrain(masked), model.entity_embeddings)


def test_the_loop_steps_as_the_per_tensor_adam_every_stored_model_was_trained_with(small_graph, monkeypatch) -> None:
    """The loop's Adam runs PyTorch's foreach path (fewer passes over the table); models stored before it were
    trained by the per-tensor path, the CPU's default then. A retrain must reproduce them bit for bit, so the two
    paths must give the same weights: the reference here is the real per-tensor Adam, forced with foreach=False."""
    config = replace(SMALL, negatives_per_triple=4, epochs=4)
    model = train_model(small_graph, config, name="a", device=torch.device("cpu"))
    adam, used = torch.optim.Adam, []

    def per_tensor(params, **options):
        used.append(options.pop("foreach", None))
        return adam(params, foreach=False, **options)

    monkeypatch.setattr(torch.optim, "Adam", per_tensor)
    reference = train_transe(triples=model.triples, negatives=model.negatives, n_entities=model.n_entities,
                             n_relations=model.n_relations, config=config, device=torch.device("cpu"))
    assert used == [True]  # the loop asked for foreach, and the reference overrode it
    assert torch.equal(reference.entity_embeddings, model.entity_embeddings)
    assert torch.equal(reference.relation_embeddings, model.relation_embeddings)


def test_training_can_be_cancelled_between_epochs(small_graph) -> None:
    epochs = []
    with pytest.raises(CancelledError, match="after epoch 2"):
        train_model(small_graph, SMALL, name="x", on_epoch=lambda e, n, loss: epochs.append(e),
                    should_stop=lambda: len(epochs) >= 2)
    assert epochs == [1, 2]


@pytest.mark.parametrize("name", ["distmult", "complex", "rotate"])
def test_other_models_train_through_pykeen(small_graph, name: str) -> None:
    seen = []
    model = train_model(small_graph, replace(SMALL, model=name, epochs=2), name=name,
                        on_epoch=lambda e, n, loss: seen.append(e))
    assert model.negatives is None and model.weights and seen == [1, 2]


def test_unknown_model_is_refused(small_graph) -> None:
    with pytest.raises(KGBiasError, match="unknown model 'transh'"):
        train_model(small_graph, replace(SMALL, model="transh"), name="x")


@pytest.mark.parametrize("distance", ["squared_l2", "l2", "l1", "pseudo_huber"])
@pytest.mark.parametrize("k", [1, 3])
def test_the_replay_gradient_is_autograd_s_gradient_of_the_batch_loss(distance: str, k: int) -> None:
    """replay_gradient (the replay's hand-written gradient) against autograd through the loop's _batch_loss, on a
    table whose rows 0-9 are frozen and 10-15 move; some slots of a triple hold two moving rows, some none."""
    from kgbias_core.embeddings.training import _batch_loss, replay_gradient

    generator = torch.Generator().manual_seed(11 + k)
    n_entities, n_base, d, b = 16, 10, 6, 40
    table = torch.randn(n_entities, d, generator=generator)
    relations = torch.randn(3, d, generator=generator)
    positives = torch.stack([torch.randint(0, n_entities, (b,), generator=generator),
                             torch.randint(0, 3, (b,), generator=generator),
                             torch.randint(0, n_entities, (b,), generator=generator)], 1)
    negatives = positives.repeat(k, 1)
    negatives[:, 2] = torch.randint(0, n_entities, (k * b,), generator=generator)
    margin, scale = 4.0, 0.37
    leaf = torch.nn.Parameter(table.clone())
    loss, _ = _batch_loss(leaf, relations, positives, negatives, torch.ones(b), margin=margin, shares=None,
                          regulariser=None, n_batches=1, distance=distance)
    (loss * scale).backward()
    expected = leaf.grad[n_base:]
    slot = torch.full((n_entities,), n_entities - n_base, dtype=torch.long)
    slot[n_base:] = torch.arange(n_entities - n_base)
    got = replay_gradient(table[n_base:].clone(), table, relations, torch.cat([positives, negatives]), slot=slot,
                          k=k, margin=margin, scale=scale, distance=distance)
    assert float(expected.abs().max()) > 0.01  # some margins are active on the moving rows
    assert torch.allclose(got, expected, rtol=1e-5, atol=1e-7), float((got - expected).abs().max())
