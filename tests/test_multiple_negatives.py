"""K frozen negatives per training triple (issue 24, part 2): the draw, the objective against a naive loop,
K = 1 bit for bit METHODS §2's loop, the store, the closed form and the exact solve against autograd and dense
linear algebra, the |H| of the what-if estimator against plain loops, masked retraining, re-drawn negatives,
edits, and ``kgbias train --negatives``."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.cli import main
from kgbias_core.data.synthetic import SyntheticConfig, generate_people_graph
from kgbias_core.embeddings.config import TrainConfig
from kgbias_core.embeddings.objective import (
    join_negatives,
    negatives_count,
    negatives_of,
    transe_distance,
    transe_objective,
)
from kgbias_core.embeddings.store import config_fingerprint, load_model, save_model
from kgbias_core.embeddings.training import frozen_negatives, initial_embeddings, train_model, train_transe
from kgbias_core.errors import (
    DISTANCE_NOT_TRANSE,
    MODEL_DISAGREES,
    NEGATIVES_NOT_TRANSE,
    KGBiasError,
    ModelStoreError,
)
from kgbias_core.evaluation.link_prediction import link_prediction
from kgbias_core.influence import iterative
from kgbias_core.influence.closed_form import group_bias_gradient, influence_context, triple_influence
from kgbias_core.influence.iterative import (
    conjugate_gradient_solve,
    group_bias_rhs,
    influence_from_solution,
)
from kgbias_core.influence.negatives import redrawn_negatives
from kgbias_core.influence.prediction import (
    DISTANCE_NOTES,
    absolute_curvature_hvp,
    absolute_newton_step,
    predict_removal,
    removal_gradient,
)
from kgbias_core.influence.retraining_check import masked_retrain_bias, removal_set
from kgbias_core.measures.group_bias import group_bias
from kgbias_core.whatif.edits import add_edit, remove_edit, retrain

from .conftest import REPO, TINY_TRAINING, occupation_with_both

K = 3


@pytest.fixture(scope="module")
def k_model(tiny_graph):
    """The tiny model of the tests, trained with K = 3 negatives per triple."""
    return train_model(tiny_graph, replace(TINY_TRAINING, negatives_per_triple=K), name="tiny-k3", device="cpu")


@pytest.fixture(scope="module")
def small_k_model():
    """A graph small enough for a dense Hessian (40 persons, d 4), K = 3, in float64."""
    graph = generate_people_graph(SyntheticConfig(n_persons=40, seed=5))
    config = TrainConfig(dim=4, epochs=10, batch_size=64, lr=1e-2, l2=1.0, seed=3, negatives_per_triple=K)
    model = train_model(graph, config, name="small-k3", device="cpu")
    weights = {"entity_embeddings": model.entity_embeddings.double(),
               "relation_embeddings": model.relation_embeddings.double()}
    return replace(model, weights=weights)


# --- the draw --------------------------------------------------------------------------------------------
def test_k_negatives_alternate_head_and_tail_and_extend_the_single_draw() -> None:
    triples = torch.tensor([[0, 0, 1], [2, 1, 3], [4, 0, 5]] * 200)
    n = triples.shape[0]
    four = frozen_negatives(triples, n_entities=50, seed=1, count=4)
    assert four.shape == (4 * n, 3)
    assert torch.equal(four, frozen_negatives(triples, n_entities=50, seed=1, count=4))
    # The first negative of each triple is the single draw (METHODS §2); K' < K negatives are K's first K'.
    assert torch.equal(four[:n], frozen_negatives(triples, n_entities=50, seed=1))
    assert torch.equal(four[: 2 * n], frozen_negatives(triples, n_entities=50, seed=1, count=2))
    by_rank = four.view(4, n, 3)
    assert (by_rank[:, :, 1] == triples[:, 1]).all()
    # Negative j keeps the tail where it corrupts the head and vice versa; the side alternates with j, so each
    # triple has 2 head and 2 tail corruptions (a replacement may equal the entity it replaces: checked by side).
    kept_tail = by_rank[:, :, 2] == triples[:, 2]  # [4, n]
    kept_head = by_rank[:, :, 0] == triples[:, 0]
    assert (kept_tail | kept_head).all()
    head_side = torch.stack([kept_tail[0] & ~kept_head[0], ~kept_tail[0] & kept_head[0]])  # unambiguous ones
    for j in (2,):  # same parity as 0: the same side
        assert (kept_tail[j][head_side[0]]).all() and (kept_head[j][head_side[1]]).all()
    for j in (1, 3):  # the other side
        assert (kept_head[j][head_side[0]]).all() and (kept_tail[j][head_side[1]]).all()
    assert 0.35 < float(head_side[0].float().mean()) < 0.65


def test_the_layout_helpers_select_and_join_each_triples_k_negatives() -> None:
    n, k = 5, 3
    triples = torch.arange(3 * n).view(n, 3)
    negatives = frozen_negatives(triples, n_entities=100, seed=0, count=k)
    assert negatives_count(negatives, n) == k and negatives_count(negatives[:n], n) == 1
    rows = torch.tensor([4, 1])
    picked = negatives_of(negatives, rows, n)
    assert torch.equal(picked, torch.stack([negatives[j * n + i] for j in range(k) for i in rows.tolist()]))
    mask = torch.tensor([True, False, True, False, False])
    assert torch.equal(negatives_of(negatives, mask, n), negatives_of(negatives, torch.tensor([0, 2]), n))
    joined = join_negatives(negatives_of(negatives, torch.arange(2), n), 2,
                            negatives_of(negatives, torch.arange(2, n), n), n - 2)
    assert torch.equal(joined, negatives)
    with pytest.raises(ValueError, match="not K per triple"):
        negatives_count(negatives[:-1], n)


# --- the objective ---------------------------------------------------------------------------------------
def naive_objective(E, R, triples, negatives, weights, *, margin: float, l2: float) -> float:
    """J written out triple by triple, negative by negative: sum_z w_z (1/K) sum_j [gamma + psi(z) - psi(z'_j)]_+."""
    n = len(triples)
    k = len(negatives) // n

    def psi(h: int, r: int, t: int) -> float:
        return sum((E[h, i].item() + R[r, i].item() - E[t, i].item()) ** 2 for i in range(E.shape[1]))

    total = 0.0
    for i, ((h, r, t), w) in enumerate(zip(triples.tolist(), weights.tolist(), strict=True)):
        hinges = [max(margin + psi(h, r, t) - psi(*negatives[j * n + i].tolist()), 0.0) for j in range(k)]
        total += w * sum(hinges) / k
    return total + l2 / 2 * (float((E**2).sum()) + float((R**2).sum()))


def test_the_k_negative_objective_equals_a_naive_loop() -> None:
    generator = torch.Generator().manual_seed(0)
    E, R = torch.randn(6, 4, generator=generator, dtype=torch.float64), torch.randn(2, 4, generator=generator,
                                                                                     dtype=torch.float64)
    triples = torch.tensor([[0, 0, 1], [2, 1, 3], [4, 0, 0], [1, 1, 2], [3, 0, 5]])
    negatives = frozen_negatives(triples, n_entities=6, seed=4, count=K)
    for weights in (torch.ones(5, dtype=torch.float64), torch.tensor([1.0, 0.0, 2.0, 1.0, 0.5], dtype=torch.float64)):
        value = transe_objective(entities=E, relations=R, triples=triples, negatives=negatives, margin=2.0, l2=0.5,
                                 weights=weights)
        assert value.item() == pytest.approx(naive_objective(E, R, triples, negatives, weights, margin=2.0, l2=0.5),
                                             rel=1e-12)


def methods_2_loop(triples, negatives, *, n_entities: int, n_relations: int, config: TrainConfig):
    """METHODS §2's loop as it was written before K existed: one negative per triple, dense Adam with weight
    decay l2 / n, cosine schedule, one permutation stream from the seed, the batch loss / b."""
    E0, R0 = initial_embeddings(n_entities=n_entities, n_relations=n_relations, dim=config.dim, seed=config.seed)
    E, R = torch.nn.Parameter(E0.clone()), torch.nn.Parameter(R0.clone())
    n = triples.shape[0]
    steps = math.ceil(n / config.batch_size)
    optimizer = torch.optim.Adam([E, R], lr=config.lr, weight_decay=config.l2 / n)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=config.epochs * steps,
                                                          eta_min=config.lr_min)
    permutations = torch.Generator().manual_seed(config.seed)
    for _ in range(config.epochs):
        for batch in torch.randperm(n, generator=permutations).split(config.batch_size):
            psi = transe_distance(entities=E, relations=R, triples=torch.cat([triples[batch], negatives[batch]]))
            positive, negative = psi.split(batch.shape[0])
            loss = (torch.relu(config.margin + positive - negative) * torch.ones(batch.shape[0])).sum() / batch.shape[0]
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
    return E.detach(), R.detach()


def test_one_negative_per_triple_trains_bit_for_bit_as_before(tiny_graph) -> None:
    config = replace(TINY_TRAINING, epochs=4)
    assert config.negatives_per_triple == 1  # the default: every stored model
    model = train_model(tiny_graph, config, name="k1", device="cpu")
    triples = tiny_graph.training.mapped_triples
    single = frozen_negatives(triples, n_entities=model.n_entities, seed=config.seed)
    assert torch.equal(model.negatives, single)
    E, R = methods_2_loop(triples, single, n_entities=model.n_entities, n_relations=model.n_relations, config=config)
    assert torch.equal(model.entity_embeddings, E) and torch.equal(model.relation_embeddings, R)


def test_one_negative_keeps_the_fingerprint_of_every_stored_model() -> None:
    config = {"dataset": "synthetic", "data_hash": "x", **TINY_TRAINING.to_dict()}
    before = {k: v for k, v in config.items() if k != "negatives_per_triple"}  # config.json written before K
    assert config_fingerprint(config) == config_fingerprint(before)
    assert config_fingerprint({**config, "negatives_per_triple": K}) != config_fingerprint(before)


def test_k_copies_of_one_negative_train_as_that_negative(tiny_model) -> None:
    """The mean of K equal hinges is the hinge: K copies of the frozen negatives train as K = 1 does, step for
    step (up to the order of float sums), through the K > 1 path of the loop."""
    config = replace(tiny_model.config, epochs=6)
    kwargs = dict(triples=tiny_model.triples, n_entities=tiny_model.n_entities, n_relations=tiny_model.n_relations,
                  config=config, device="cpu")
    one = train_transe(negatives=tiny_model.negatives, **kwargs)
    copies = train_transe(negatives=tiny_model.negatives.repeat(K, 1), **kwargs)
    assert torch.allclose(copies.entity_embeddings, one.entity_embeddings, atol=1e-4)
    assert copies.losses[-1] == pytest.approx(one.losses[-1], rel=1e-3)
    different = train_transe(negatives=frozen_negatives(tiny_model.triples, n_entities=tiny_model.n_entities,
                                                        seed=config.seed, count=K), **kwargs)
    assert not torch.allclose(different.entity_embeddings, one.entity_embeddings, atol=1e-2)


@pytest.mark.parametrize("optimizer", ["adam", "sparse_adam"])
def test_k_negatives_train_deterministically_lower_the_objective_and_an_unmasked_retrain_reproduces_them(
    tiny_graph, k_model, optimizer: str
) -> None:
    model = k_model if optimizer == "adam" else train_model(
        tiny_graph, replace(k_model.config, optimizer=optimizer, epochs=8), name="k-rowwise", device="cpu")
    assert model.config.negatives_per_triple == K
    assert model.negatives.shape == (K * model.triples.shape[0], 3)
    retrained = train_transe(triples=model.triples, negatives=model.negatives, n_entities=model.n_entities,
                             n_relations=model.n_relations, config=model.config,
                             weights=torch.ones(model.triples.shape[0]), device="cpu")
    assert torch.equal(retrained.entity_embeddings, model.entity_embeddings)
    start = initial_embeddings(n_entities=model.n_entities, n_relations=model.n_relations, dim=model.config.dim,
                               seed=model.config.seed)

    def objective(e: torch.Tensor, r: torch.Tensor) -> float:
        return float(transe_objective(entities=e, relations=r, triples=model.triples, negatives=model.negatives,
                                      margin=model.config.margin, l2=model.config.l2))

    assert objective(model.entity_embeddings, model.relation_embeddings) < 0.75 * objective(*start)


# --- the store -------------------------------------------------------------------------------------------
def test_the_store_keeps_k_negatives_and_refuses_a_count_that_disagrees(k_model, tmp_path: Path) -> None:
    path = save_model(k_model, tmp_path)
    loaded = load_model(path)
    assert loaded.config.negatives_per_triple == K and torch.equal(loaded.negatives, k_model.negatives)
    config = json.loads((path / "config.json").read_text())
    config["negatives_per_triple"] = 2
    (path / "config.json").write_text(json.dumps(config))
    n = k_model.triples.shape[0]
    problem = (f"negatives has {K * n} rows for {n} training triples, config.json says 2 per triple ({2 * n} rows)")
    with pytest.raises(ModelStoreError) as error:
        load_model(path)
    assert str(error.value) == MODEL_DISAGREES.format(path=path / "training.safetensors", problem=problem)


def test_a_model_stored_before_k_loads_with_one_negative(tiny_model, tmp_path: Path) -> None:
    path = save_model(tiny_model, tmp_path)
    config = json.loads((path / "config.json").read_text())
    del config["negatives_per_triple"]
    (path / "config.json").write_text(json.dumps(config))
    loaded = load_model(path)
    assert loaded.config.negatives_per_triple == 1 and torch.equal(loaded.negatives, tiny_model.negatives)


# --- influence -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fixture", ["k_model", "degree_model"])
def test_closed_form_influence_with_k_negatives_equals_autograd(fixture: str, request) -> None:
    """delta_z = sum_e grad_e B_gr . grad_e L(z) / alpha_e, L(z) the mean of z's K hinges by autograd (Du Eq. 3);
    also on a model whose negatives' entities were drawn by degree (influence reads the stored negatives, however
    they were drawn)."""
    k_model = request.getfixturevalue(fixture)
    K = negatives_count(k_model.negatives, k_model.triples.shape[0])  # noqa: N806 (the module's K, per model)
    context = influence_context(k_model)
    assert context.n_negatives == K
    index = occupation_with_both(context)
    influence = triple_influence(context, index)
    grad_b = group_bias_gradient(context, index)
    n = k_model.triples.shape[0]
    E0, R = k_model.entity_embeddings, k_model.relation_embeddings
    margins = k_model.config.margin + transe_distance(entities=E0, relations=R, triples=k_model.triples.repeat(K, 1)) \
        - transe_distance(entities=E0, relations=R, triples=k_model.negatives)
    active = (margins > 0).view(K, n).sum(0)  # [n] active negatives per triple
    partly = ((active > 0) & (active < K)).nonzero().squeeze(-1)
    assert partly.numel() > 0  # triples with some, not all, margins active are among the checked ones
    picks = torch.cat([torch.topk(influence.abs(), 30).indices, partly[:30],
                       torch.randint(n, (30,), generator=torch.Generator().manual_seed(0))])
    for i in picks.tolist():
        E = E0.clone().requires_grad_(True)
        loss = transe_objective(entities=E, relations=R, triples=k_model.triples[i : i + 1],
                                negatives=negatives_of(k_model.negatives, torch.tensor([i]), n),
                                margin=k_model.config.margin, l2=0.0)
        (grad_l,) = torch.autograd.grad(loss, E)
        expected = float((grad_b * grad_l / context.alpha[:, None]).sum())
        assert float(influence[i]) == pytest.approx(expected, rel=1e-4, abs=1e-6)


def test_the_slot_index_visits_a_triples_positive_side_once_weighted_by_its_active_pairs(k_model) -> None:
    """h, t and u of z are the same in each of its K pairs: the index keeps them once (on z's first active pair),
    weighted by z's number of active pairs, so an occupation's cost no longer grows K-fold on the positive side;
    the influence it gives is checked against autograd above."""
    context = influence_context(k_model)
    n = k_model.triples.shape[0]
    triple_of = context.active % n
    active_triples = torch.unique(triple_of)
    assert context.slot_order.shape[0] == 2 * active_triples.numel() + 2 * context.active.numel()
    weight = context.positive_weight
    assert int((weight > 0).sum()) == active_triples.numel()  # one representative pair per active triple
    per_triple = torch.zeros(n, dtype=weight.dtype).index_add_(0, triple_of, weight)
    assert torch.equal(per_triple, torch.bincount(triple_of, minlength=n).to(weight.dtype))
    assert influence_context(replace(k_model, negatives=k_model.negatives[:n])).positive_weight is None  # K = 1


def _flat(v) -> torch.Tensor:
    return torch.cat([v[0].reshape(-1), v[1].reshape(-1)])


def test_exact_influence_with_k_negatives_is_the_dense_damped_solve(small_k_model, monkeypatch) -> None:
    """delta_z = grad L(z)^T (H + lambda I)^{-1} grad B_gr with H the dense autograd Hessian of J (K negatives)
    and grad L(z) by autograd per triple, against CG over HVPs (iterative.py)."""
    model = small_k_model
    E, R = model.entity_embeddings, model.relation_embeddings
    split, n = E.numel(), model.triples.shape[0]

    def objective(theta, triples, negatives, l2):
        return transe_objective(entities=theta[:split].view(E.shape), relations=theta[split:].view(R.shape),
                                triples=triples, negatives=negatives, margin=model.config.margin, l2=l2)

    theta = torch.cat([E.reshape(-1), R.reshape(-1)])
    H = torch.autograd.functional.hessian(lambda x: objective(x, model.triples, model.negatives, model.config.l2),
                                          theta)
    context = influence_context(model)
    index = occupation_with_both(context, minimum=1)
    rhs = group_bias_rhs(context, index)
    damping = 2 * float(torch.linalg.eigvalsh(H)[0].abs()) + 1.0
    solution = torch.linalg.solve(H + damping * torch.eye(H.shape[0], dtype=H.dtype), _flat(rhs))
    expected = torch.stack([
        torch.autograd.functional.jacobian(
            lambda x, i=i: objective(x, model.triples[i : i + 1], negatives_of(model.negatives, torch.tensor([i]), n),
                                     0.0), theta) @ solution
        for i in range(n)])
    cg = conjugate_gradient_solve(model, rhs, damping=damping, iterations=500, tolerance=1e-12)
    influence = influence_from_solution(context, model, cg)
    assert float(expected.abs().max()) > 0
    assert torch.allclose(influence, expected, rtol=1e-6, atol=1e-8 * float(expected.abs().max()))
    # In blocks smaller than the graph (each pair, and each triple's standing pair, in some block): the same.
    monkeypatch.setattr(iterative, "MARGIN_BLOCK", 7)
    assert torch.allclose(influence_from_solution(context, model, cg), influence, rtol=1e-12, atol=0)


def test_the_absolute_curvature_with_k_negatives_counts_every_active_pair_positive(small_k_model) -> None:
    """|H| = l2 I + (1/K) sum over active pairs (z, z'_j) of 2 a a^T (x) I_d for z and for z'_j, by plain loops."""
    model = small_k_model
    E, R = model.entity_embeddings, model.relation_embeddings
    n_e, d = E.shape
    n = model.triples.shape[0]
    dense = model.config.l2 * torch.eye(E.numel() + R.numel(), dtype=torch.float64)

    def psi(row) -> float:
        h, r, t = row
        return float(((E[h] + R[r] - E[t]) ** 2).sum())

    pairs = 0
    for i, positive in enumerate(model.triples.tolist()):
        for j in range(K):
            negative = model.negatives[j * n + i].tolist()
            if model.config.margin + psi(positive) - psi(negative) <= 0:
                continue
            pairs += 1
            for h, r, t in (positive, negative):
                a = torch.zeros(n_e + R.shape[0], dtype=torch.float64)
                a[h] += 1
                a[t] -= 1
                a[n_e + r] += 1
                dense += 2 / K * torch.kron(torch.outer(a, a), torch.eye(d, dtype=torch.float64))
    assert 0 < pairs < K * n
    v = (torch.randn(E.shape, generator=torch.Generator().manual_seed(2), dtype=torch.float64),
         torch.randn(R.shape, generator=torch.Generator().manual_seed(3), dtype=torch.float64))
    assert torch.allclose(_flat(absolute_curvature_hvp(model)(v)), dense @ _flat(v), rtol=1e-9, atol=1e-9)
    removed = torch.tensor([1, 2, 30, 99])
    expected = torch.linalg.solve(dense, _flat(removal_gradient(model, removed)))
    # CG stops at a residual 1e-6 of its start: the step is the solve to that precision, in norm
    error = float((_flat(absolute_newton_step(model, removed)) - expected).norm() / expected.norm())
    assert error < 1e-4, error


def test_the_planners_sparse_curvature_with_k_negatives_is_the_absolute_curvature(small_k_model) -> None:
    """The planner's |H| (one sparse matrix shared by the dimensions) weights each active pair 1/K as the HVP does."""
    import numpy as np

    from kgbias_core.whatif.plan import SparseCurvature

    model = small_k_model
    curvature = SparseCurvature(model)
    E, R = model.entity_embeddings, model.relation_embeddings
    v = (torch.randn(E.shape, generator=torch.Generator().manual_seed(4), dtype=E.dtype),
         torch.randn(R.shape, generator=torch.Generator().manual_seed(5), dtype=R.dtype))
    stacked = torch.cat(v).double().numpy()
    product = stacked * curvature.shift
    product[curvature.coupled] = curvature.matrix @ stacked[curvature.coupled]
    np.testing.assert_allclose(product, torch.cat(absolute_curvature_hvp(model)(v)).double().numpy(),
                               rtol=1e-6, atol=1e-6)


def test_the_removal_gradient_with_k_negatives_is_the_masked_objectives_difference(small_k_model) -> None:
    """sum_{z in S} grad L(z), each z with its K negatives: grad J - grad J_{-S} (S weighted 0, all its negatives)."""
    model = small_k_model
    E, R = model.entity_embeddings, model.relation_embeddings
    removed = torch.tensor([0, 5, 17, 40])
    weights = torch.ones(model.triples.shape[0], dtype=torch.float64)
    weights[removed] = 0

    def gradient(w):
        e, r = E.clone().requires_grad_(True), R.clone().requires_grad_(True)
        loss = transe_objective(entities=e, relations=r, triples=model.triples, negatives=model.negatives,
                                margin=model.config.margin, l2=model.config.l2, weights=w)
        return _flat(torch.autograd.grad(loss, (e, r)))

    assert torch.allclose(_flat(removal_gradient(model, removed)), gradient(None) - gradient(weights), atol=1e-10)


@pytest.mark.slow
def test_influence_with_k_negatives_tracks_masked_retraining(k_model) -> None:
    """Top-k, bottom-k and random removals retrained masked (all negatives of a removed triple go with it)."""
    context = influence_context(k_model)
    groups = context.groups
    index = occupation_with_both(context)
    influence = triple_influence(context, index)
    base = float(masked_retrain_bias(k_model, removed=None, groups=groups)[index])
    stored = float(group_bias(entity_embeddings=k_model.entity_embeddings,
                              relation_embeddings=k_model.relation_embeddings, groups=groups)[index])
    assert base == stored  # an unmasked retrain is the model, bit for bit
    predicted, actual = [], []
    moving = int((influence != 0).sum())
    for kind in ("top", "bottom", "random"):
        for share in (2, 8, 32):
            removed = removal_set(influence, kind=kind, k=max(1, moving * share // 100))
            predicted.append(float(influence[removed].sum()))
            actual.append(float(masked_retrain_bias(k_model, removed=removed, groups=groups)[index]) - base)
    predicted, actual = np.array(predicted), np.array(actual)
    r = np.corrcoef(predicted, actual)[0, 1]
    assert r > 0.9, (r, predicted, actual)
    targeted = np.abs(predicted[:6]) > 1e-3
    assert (np.sign(predicted[:6][targeted]) == np.sign(actual[:6][targeted])).all()


def test_redrawn_negatives_from_the_training_seed_are_the_frozen_k(k_model) -> None:
    assert torch.equal(redrawn_negatives(k_model, seed=k_model.config.seed), k_model.negatives)
    imported = replace(k_model, negatives=None, config=replace(k_model.config, negatives_per_triple=1))
    # an import before 2026-12-06 recorded one a triple (those since, IMPORT_NEGATIVES): its config's count is drawn
    assert redrawn_negatives(imported, seed=0).shape == k_model.triples.shape
    assert redrawn_negatives(imported, seed=0, count=2).shape == (2 * k_model.triples.shape[0], 3)


def test_edits_keep_each_triples_k_negatives(k_model) -> None:
    quick = replace(k_model, config=replace(k_model.config, epochs=1))
    n = quick.triples.shape[0]
    removed = torch.tensor([3, 10, 11])
    edited = retrain(quick, remove_edit(quick, "nurse", removed, strategy="basket"), name="r")
    keep = torch.ones(n, dtype=torch.bool)
    keep[removed] = False
    assert torch.equal(edited.triples, quick.triples[keep])
    assert torch.equal(edited.negatives, negatives_of(quick.negatives, keep, n))
    added = retrain(quick, add_edit(quick, "nurse", c=0.5), name="a")
    m = added.triples.shape[0]
    assert m > n and added.negatives.shape == (K * m, 3)
    assert torch.equal(negatives_of(added.negatives, torch.arange(n), m), quick.negatives)  # the base's, kept
    assert (added.negatives.view(K, m, 3)[:, :, 1] == added.triples[:, 1]).all()


# --- the command line ------------------------------------------------------------------------------------
def test_train_negatives_k_writes_k_negatives_per_triple(tmp_path: Path) -> None:
    out = tmp_path / "k2"
    assert main(["train", "--dataset", "synthetic", "--dim", "8", "--epochs", "1", "--negatives", "2",
                 "--out", str(out)]) == 0
    model = load_model(out)
    assert json.loads((out / "config.json").read_text())["negatives_per_triple"] == 2
    assert model.negatives.shape == (2 * model.triples.shape[0], 3)


@pytest.mark.parametrize("value", ["0", "-1", "two", "257"])
def test_a_bad_negatives_count_is_one_line_and_exit_2(tmp_path: Path, value: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kgbias_core", "train", "--dataset", "synthetic", "--negatives", value,
         "--out", str(tmp_path / "x")], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"error: kgbias train: argument --negatives: expected an integer from 1 to 256, got {value!r} "
        "(see kgbias train --help)"]
    assert not (tmp_path / "x").exists()


def test_negatives_for_a_model_pykeen_trains_are_refused(tiny_graph) -> None:
    with pytest.raises(KGBiasError) as error:
        train_model(tiny_graph, replace(TINY_TRAINING, model="distmult", negatives_per_triple=2), name="d",
                    device="cpu")
    assert str(error.value) == NEGATIVES_NOT_TRANSE.format(count=2, model="distmult")


def test_train_distance_l1_trains_an_l1_transe_whose_removals_say_so(tmp_path: Path) -> None:
    """``kgbias train --distance l1``: the loss, the stored config, link prediction and the what-if label all use L1
    (issue 24: the better link predictor, with approximate influence)."""
    out = tmp_path / "l1"
    assert main(["train", "--dataset", "synthetic", "--dim", "8", "--epochs", "2", "--negatives", "2", "--distance",
                 "l1", "--out", str(out)]) == 0
    assert json.loads((out / "config.json").read_text())["distance"] == "l1"
    model = load_model(out)
    e, r, t = model.entity_embeddings, model.relation_embeddings, model.triples
    torch.testing.assert_close(transe_distance(entities=e, relations=r, triples=t[:5], distance="l1"),  # |h + r - t|_1
                               (e[t[:5, 0]] + r[t[:5, 1]] - e[t[:5, 2]]).abs().sum(-1))
    assert 0 < link_prediction(model)["mrr"] <= 1
    analysis = ModelAnalysis(model)
    occupation = analysis.groups.labels[int(torch.minimum(analysis.groups.n_male, analysis.groups.n_female).argmax())]
    removed = analysis.influence(occupation).topk(3).indices
    assert DISTANCE_NOTES["l1"] in predict_removal(analysis, occupation, removed).estimator


def test_a_distance_for_a_model_pykeen_trains_is_refused(tiny_graph) -> None:
    with pytest.raises(KGBiasError) as error:
        train_model(tiny_graph, replace(TINY_TRAINING, model="distmult", distance="l1"), name="d", device="cpu")
    assert str(error.value) == DISTANCE_NOT_TRANSE.format(distance="l1", model="distmult")
