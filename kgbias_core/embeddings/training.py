"""Training: TransE on a deterministic objective that influence functions can trust.

Why a hand-written loop over PyKEEN's TransE rather than PyKEEN's training loop: Du et al.'s
influence approximation linearises around an optimum of a *fixed* objective (METHODS §2). That
needs (a) the negatives of every training triple (one, or K: ``TrainConfig.negatives_per_triple``)
drawn once from a saved seed and frozen for the whole training, (b) masked retraining, where a retrain
without a set S keeps the very same batch permutation and only weights S's triples 0, and (c) exact
reproducibility. PyKEEN's sLCWA loop draws fresh negatives every batch and re-permutes the (edited)
triples, so it offers none of the three. The loop minimises
:func:`kgbias_core.embeddings.objective.transe_objective`, the objective the influence solvers
differentiate; PyKEEN still provides the scoring module of a trained TransE (:func:`transe_module`),
the id maps, and the pipeline for the other models.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import torch
from pykeen.models import ERModel, Model, TransE
from torch.nn import functional

from kgbias_core.data.graph import KnowledgeGraph

# The device rules live in kgbias_core.device; re-exported here, where callers long found them.
from kgbias_core.device import default_device, retrain_device  # noqa: F401
from kgbias_core.embeddings.config import (
    CORRUPTIONS,
    DEGREE_EXPONENT,
    MODELS,
    NEGATIVE_ENTITIES,
    PYKEEN_MODELS,
    TrainConfig,
)
from kgbias_core.embeddings.objective import (
    distance_gradient,
    margin_loss,
    negatives_count,
    residual_distance,
    transe_distance,
)
from kgbias_core.embeddings.plain_adam import PlainAdam
from kgbias_core.embeddings.pseudo_huber import PseudoHuberTransEInteraction
from kgbias_core.embeddings.store import StoredModel, library_versions
from kgbias_core.errors import (
    CANCELLED,
    CORRUPTION_NOT_TRANSE,
    DISTANCE_NOT_TRANSE,
    NEGATIVE_ENTITIES_NOT_TRANSE,
    NEGATIVES_NOT_TRANSE,
    REGULARISER_MISSING,
    UNKNOWN_CORRUPTION,
    UNKNOWN_MODEL,
    UNKNOWN_NEGATIVE_ENTITIES,
    UNKNOWN_OPTIMIZER,
    CancelledError,
    KGBiasError,
)
from kgbias_core.types import BoolTensor, FloatTensor, LongTensor

#: TrainConfig.optimizer values: dense Adam (every stored model) and row-wise SparseAdam (see train_transe).
OPTIMIZERS = ("adam", "sparse_adam")

#: Called after every epoch with (epoch, n_epochs, mean loss per triple).
EpochCallback = Callable[[int, int, float], None]
#: An extra term of the objective, R(entities [E, d], relations [R, d]) -> scalar, in summed-loss units
#: (a fairness regulariser, :mod:`kgbias_core.whatif.regularised`).
Regulariser = Callable[[FloatTensor, FloatTensor], FloatTensor]

# Offsets keep the three random streams of one seed independent of each other.
_NEGATIVE_STREAM = 1_000_003
_INIT_STREAM = 2_000_003
_EXTRA_STREAM = 3_000_017


@contextmanager
def reproducible(device: torch.device) -> Iterator[None]:
    """Deterministic kernels while training on a GPU (CPU kernels are already).

    On CUDA the embedding gradient is accumulated atomically, in an order that changes from run to
    run: two FB15k-237 trainings from one seed differed by up to 0.035 in B_gr on an H100, more than
    the 0.01 retraining noise that influence is judged against. PyTorch's switch is process-wide, so
    it is on only for the loop and restored after; an op without a deterministic CUDA kernel that
    another thread runs meanwhile raises instead of silently varying.
    """
    if device.type != "cuda":
        yield
        return
    before = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before, warn_only=warn_only)


def frozen_negatives(
    triples: LongTensor, *, n_entities: int, seed: int, stream: int = 0, count: int = 1,
    head_probability: FloatTensor | None = None, entity_weights: FloatTensor | None = None,
) -> LongTensor:
    """``count`` (K) negatives per triple, each with its head or its tail replaced by a uniform entity (or one drawn
    by ``entity_weights``).

    Shapes: triples [n, 3] (, head_probability [n]) -> negatives [K n, 3], row j n + i the j-th negative of
    triple i (the layout of :mod:`kgbias_core.embeddings.objective`). Drawn once from ``seed`` (METHODS §2) so
    that the training objective is a fixed function of the parameters.

    ``head_probability`` None (uniform corruption, every model before 2026-12-06): a coin per triple picks the
    side of its first negative (head or tail, 50/50) and the sides then alternate, so half of a triple's
    negatives corrupt the head and half the tail (for odd K the coin's side gets one more). The first negative
    of every triple, and with it the whole table of K = 1, is the draw of METHODS §2.

    ``head_probability`` given (:func:`bernoulli_head_probability`): each negative's side is its own coin,
    the head with triple i's probability. Either way the first K' rows of K's table are K''s table: more
    negatives only add to the objective's negatives, never replace them.

    ``entity_weights`` [n_entities] (:func:`degree_weights`): each replacement is entity e with probability
    w_e / sum(w), drawn where the uniform one is (same stream, same order of coins and draws); None: uniform.
    """
    generator = torch.Generator().manual_seed(seed + _NEGATIVE_STREAM + stream)
    n = triples.shape[0]
    corrupt_head = torch.rand(n, generator=generator) < (0.5 if head_probability is None else head_probability)

    # by inverse CDF (torch.multinomial refuses more than 2^24 categories: a 20M-triple graph has more entities);
    # an entity of weight 0 adds no width to the CDF, so no uniform number lands on it
    cdf = None if entity_weights is None else torch.cumsum(entity_weights.double().cpu(), 0)

    def draw() -> LongTensor:
        if cdf is None:
            return torch.randint(n_entities, (n,), generator=generator)
        u = torch.rand(n, generator=generator, dtype=torch.float64) * cdf[-1]
        return torch.searchsorted(cdf, u, right=True).clamp_(max=n_entities - 1)

    replacement = draw()
    negatives = triples.repeat(count, 1)  # [K n, 3]: K copies, each corrupted below
    for j in range(count):
        if j:
            if head_probability is not None:  # a coin of its own, drawn before the replacement as for j = 0
                corrupt_head = torch.rand(n, generator=generator) < head_probability
            replacement = draw()
        head = corrupt_head if head_probability is not None or j % 2 == 0 else ~corrupt_head
        block = negatives[j * n : (j + 1) * n]  # a view: triple i's j-th negative is row j n + i
        block[head, 0] = replacement[head]
        block[~head, 2] = replacement[~head]
    return negatives


def bernoulli_head_probability(statistics: LongTensor, *, n_relations: int, triples: LongTensor) -> FloatTensor:
    """Wang et al. 2014 (TransH, §3.2, "bern"): corrupt the head of (h, r, t) with probability tph / (tph + hpt).

    tph(r) is the mean number of tails per head of r and hpt(r) of heads per tail, both counted over
    ``statistics`` (the training triples [m, 3]). A one-to-many relation (many tails per head) then mostly
    corrupts its head, where a replaced tail would often be another true tail: fewer false negatives.
    Shapes: statistics [m, 3], triples [n, 3] -> [n], the probability of each of ``triples`` by its relation
    (0.5 for a relation ``statistics`` never holds).
    """
    relation = statistics[:, 1]
    pairs_hr = torch.unique(statistics[:, [1, 0]], dim=0)  # distinct (r, h)
    pairs_rt = torch.unique(statistics[:, [1, 2]], dim=0)  # distinct (r, t)
    count = torch.bincount(relation, minlength=n_relations).double()
    heads = torch.bincount(pairs_hr[:, 0], minlength=n_relations).double()
    tails = torch.bincount(pairs_rt[:, 0], minlength=n_relations).double()
    tph = count / heads.clamp(min=1)
    hpt = count / tails.clamp(min=1)
    share = torch.where(count > 0, tph / (tph + hpt).clamp(min=1e-12), torch.full_like(count, 0.5))
    return share.float()[triples[:, 1]]


def corruption_head_probability(corruption: str, *, statistics: LongTensor, n_relations: int,
                                triples: LongTensor) -> FloatTensor | None:
    """The ``head_probability`` of :func:`frozen_negatives` for a ``TrainConfig.corruption``: None for
    ``uniform``, :func:`bernoulli_head_probability` for ``bernoulli``; anything else a named error."""
    if corruption == "uniform":
        return None
    if corruption == "bernoulli":
        return bernoulli_head_probability(statistics, n_relations=n_relations, triples=triples)
    raise KGBiasError(UNKNOWN_CORRUPTION.format(corruption=corruption, known=", ".join(CORRUPTIONS)))


def degree_weights(statistics: LongTensor, *, n_entities: int) -> FloatTensor:
    """The ``degree`` draw's weights (:data:`~kgbias_core.embeddings.config.NEGATIVE_ENTITIES`): each entity's count
    as head or tail of ``statistics`` (the training triples [m, 3]) to the power
    :data:`~kgbias_core.embeddings.config.DEGREE_EXPONENT`. -> [n_entities], float64; 0 for an entity in no training
    triple (a dummy of an Add edit, an entity of the test split only), which is then never drawn."""
    degree = torch.bincount(statistics[:, [0, 2]].reshape(-1).cpu(), minlength=n_entities).double()
    return degree.pow(DEGREE_EXPONENT)


def negative_draw(config: TrainConfig, *, statistics: LongTensor, n_entities: int, n_relations: int,
                  triples: LongTensor) -> dict[str, FloatTensor | None]:
    """The keyword arguments of :func:`frozen_negatives` that draw ``triples``' negatives as ``config`` says: the
    side (``corruption``, :func:`corruption_head_probability`) and the entity (``negative_entities``, uniform or
    :func:`degree_weights`), both counted over ``statistics`` (the model's training triples, which an edit's own
    negatives also count by). The one home of "how a model's negatives are drawn": its training, an Add edit's
    triples and an import's re-drawn negatives all ask it. An unknown value is a named error."""
    if config.negative_entities not in NEGATIVE_ENTITIES:
        raise KGBiasError(UNKNOWN_NEGATIVE_ENTITIES.format(draw=config.negative_entities,
                                                           known=", ".join(NEGATIVE_ENTITIES)))
    weights = (degree_weights(statistics, n_entities=n_entities) if config.negative_entities == "degree" else None)
    return {"head_probability": corruption_head_probability(config.corruption, statistics=statistics,
                                                            n_relations=n_relations, triples=triples),
            "entity_weights": weights}


def initial_embeddings(
    *, n_entities: int, n_relations: int, dim: int, seed: int, n_base_entities: int | None = None
) -> tuple[FloatTensor, FloatTensor]:
    """TransE's uniform(-6/sqrt(d), 6/sqrt(d)) initialisation, relations normalised.

    Entities beyond ``n_base_entities`` (dummies added by a debiasing edit) come from a separate
    stream, so that the base graph's rows start exactly where the base model's did.
    Shapes: entities [n_entities, dim], relations [n_relations, dim].
    """
    bound = 6.0 / math.sqrt(dim)
    base = n_entities if n_base_entities is None else n_base_entities
    generator = torch.Generator().manual_seed(seed + _INIT_STREAM)
    entities = (torch.rand(base, dim, generator=generator) * 2 - 1) * bound
    relations = (torch.rand(n_relations, dim, generator=generator) * 2 - 1) * bound
    relations = relations / relations.norm(dim=-1, keepdim=True)
    if n_entities > base:
        extra = torch.Generator().manual_seed(seed + _EXTRA_STREAM)
        entities = torch.cat([entities, (torch.rand(n_entities - base, dim, generator=extra) * 2 - 1) * bound])
    return entities, relations


#: PyKEEN's TransE (scoring_fct_norm p, power_norm) for each distance: its score is -psi.
PYKEEN_NORMS = {"squared_l2": (2, True), "l2": (2, False), "l1": (1, False)}


def transe_module(
    *, entities: FloatTensor, relations: FloatTensor, device: torch.device, distance: str = "squared_l2"
) -> Model:
    """A PyKEEN TransE scoring -psi(h, r, t) (-||h + r - t||_2^2 by default; no entity constraint)
    holding these weights; ``distance`` as :data:`~kgbias_core.embeddings.config.DISTANCES`. pseudo_huber, which
    PyKEEN's TransE does not score, is an ERModel of :mod:`kgbias_core.embeddings.pseudo_huber`'s interaction."""
    from pykeen.triples import CoreTriplesFactory

    factory = CoreTriplesFactory.create(
        mapped_triples=torch.zeros(1, 3, dtype=torch.long),
        num_entities=entities.shape[0],
        num_relations=relations.shape[0],
    )
    if distance == "pseudo_huber":
        model = ERModel(triples_factory=factory, interaction=PseudoHuberTransEInteraction(),
                        entity_representations_kwargs={"shape": entities.shape[1]},
                        relation_representations_kwargs={"shape": relations.shape[1]}, random_seed=0).to(device)
    else:
        norm, power_norm = PYKEEN_NORMS[distance]
        model = TransE(
            triples_factory=factory,
            embedding_dim=entities.shape[1],
            scoring_fct_norm=norm,
            power_norm=power_norm,
            entity_constrainer=None,
            random_seed=0,
        ).to(device)
    with torch.no_grad():
        model.entity_representations[0]._embeddings.weight.copy_(entities)
        model.relation_representations[0]._embeddings.weight.copy_(relations)
    return model


@dataclass(frozen=True)
class TransEResult:
    """Weights and bookkeeping of one TransE training run (all tensors on the CPU)."""

    entity_embeddings: FloatTensor  # [n_entities, dim]
    relation_embeddings: FloatTensor  # [n_relations, dim]
    losses: list[float] = field(default_factory=list)  # mean loss per triple, per epoch
    seconds: float = 0.0


def _l2_shares(
    triples: LongTensor, negatives: LongTensor, *, n_entities: int, n_relations: int, l2: float,
    device: torch.device,
) -> tuple[FloatTensor, FloatTensor]:
    """Row-wise L2 shares l2 / (2 deg_e) per entity [E] and per relation [R]: deg counts every slot holding the row
    (each of a triple's K negatives is visited once an epoch, as the triple is)."""
    both_all = torch.cat([triples, negatives])  # [(1 + K) n, 3]: every slot that holds a row
    entity_share = l2 / (2 * torch.bincount(both_all[:, [0, 2]].reshape(-1), minlength=n_entities)
                         .clamp_min(1).to(torch.float32))  # [E]: l2 / (2 deg_e)
    relation_share = l2 / (2 * torch.bincount(both_all[:, 1], minlength=n_relations)
                           .clamp_min(1).to(torch.float32))  # [R]
    return entity_share.to(device), relation_share.to(device)


def _batch_loss(
    entities: FloatTensor, relations: FloatTensor, positives: LongTensor, negatives: LongTensor,
    weights: FloatTensor, *, margin: float, shares: tuple[FloatTensor, FloatTensor] | None,
    regulariser: Regulariser | None, n_batches: int, distance: str = "squared_l2",
) -> tuple[FloatTensor, FloatTensor]:
    """One batch's loss (to step on) and its weighted margins per triple [b] (to report), as in train_transe.

    Shapes: positives [b, 3], negatives [K b, 3] (row j b + i: positive i's j-th negative), weights [b]."""
    b = positives.shape[0]
    k = negatives.shape[0] // b
    both = torch.cat([positives, negatives])  # [(1 + K) b, 3]
    if shares is not None:
        psi, l2_part = _rowwise_distance(entities=entities, relations=relations, triples=both,
                                         entity_share=shares[0], relation_share=shares[1], distance=distance)
    else:
        psi = transe_distance(entities=entities, relations=relations, triples=both, distance=distance)  # [(1+K) b]
    psi_pos, psi_neg = psi.split([b, k * b])
    if k > 1:
        psi_neg = psi_neg.view(k, b)  # row j: the batch's j-th negatives (margin_loss takes their mean)
    per_triple = margin_loss(distance=psi_pos, negative_distance=psi_neg, margin=margin, weights=weights)
    loss = per_triple.sum() / b
    if regulariser is not None:
        # On the loop's 1/batch scale an epoch sums the margins / b: R enters as R / b per epoch.
        loss = loss + regulariser(entities, relations) / (n_batches * b)
    if shares is not None:
        loss = loss + l2_part / b  # the batch's slots' shares of the L2 term
    return loss, per_triple


def _optimizer(
    config: TrainConfig, params: list[torch.Tensor], triples: LongTensor, negatives: LongTensor, *, n_entities: int,
    n_relations: int, device: torch.device,
) -> tuple[torch.optim.Optimizer, tuple[FloatTensor, FloatTensor] | None]:
    """The optimiser of ``config.optimizer`` over ``params``, and for row-wise updates each row's L2 share
    (entities [E], relations [R]); None for dense Adam, which applies the L2 term itself."""
    if config.optimizer not in OPTIMIZERS:
        raise KGBiasError(UNKNOWN_OPTIMIZER.format(optimizer=config.optimizer, known=", ".join(OPTIMIZERS)))
    if config.optimizer == "sparse_adam":
        shares = _l2_shares(triples, negatives, n_entities=n_entities, n_relations=n_relations, l2=config.l2,
                            device=device)
        return torch.optim.SparseAdam(params, lr=config.lr), shares
    # The L2 term (l2/2)||theta||^2 of the objective, on this loop's 1/n scale: Adam adds its gradient
    # (l2/n) theta itself, once per step, whatever the batch. foreach: PyTorch's default on a GPU, and on the CPU
    # the same arithmetic as its per-tensor loop (bit for bit, tests/test_training.py) in fewer passes over the
    # table, which dense Adam on every row makes the bulk of a step (FB13: about half of it).
    return torch.optim.Adam(params, lr=config.lr, weight_decay=config.l2 / triples.shape[0], foreach=True), None


def _schedule(optimizer: torch.optim.Optimizer, config: TrainConfig, *, n_epochs: int, n_batches: int):
    """The loop's cosine learning rate, from ``config.lr`` to ``config.lr_min`` over every step of the run."""
    return torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=max(n_epochs * n_batches, 1),
                                                      eta_min=config.lr_min)


def train_transe(
    *,
    triples: LongTensor,
    negatives: LongTensor,
    n_entities: int,
    n_relations: int,
    config: TrainConfig,
    weights: FloatTensor | None = None,
    n_base_entities: int | None = None,
    init: tuple[FloatTensor, FloatTensor] | None = None,
    epochs: int | None = None,
    device: torch.device | str,
    on_epoch: EpochCallback | None = None,
    should_stop: Callable[[], bool] | None = None,
    regulariser: Regulariser | None = None,
) -> TransEResult:
    """Minimise sum_z w_z (1/K) sum_j [gamma + psi(z) - psi(z'_j)]_+ + (l2/2)||theta||^2 (METHODS §2-3;
    :mod:`kgbias_core.embeddings.objective`; K = 1 is METHODS §2's objective).

    Shapes: triples [n, 3], negatives [K n, 3] (row j n + i is triple i's j-th frozen negative; K = 1:
    negatives[i]); weights [n] (1 keeps a triple, 0 masks it and all its negatives: a retrain "without
    S" passes the base triples with S's weights 0, so the batch permutation — drawn from ``config.seed``
    over all n rows — is the base run's). A batch of triples carries all their negatives.
    ``init`` warm-starts from given weights (fast what-ifs); otherwise the seeded initialisation.
    Each batch's loss is divided by its full row count and Adam's weight_decay is l2 / n, so the
    optimum is that of the summed objective for every mask.

    ``config.optimizer == "sparse_adam"`` (row-wise updates, for graphs where dense Adam over every row per
    step is the bottleneck: 5.7M rows at 20M triples): each step updates only the rows its batch touches
    (``torch.optim.SparseAdam``), and the L2 term goes with them. Row e's (l2/2)||theta_e||^2 is split
    evenly over the deg_e slots that hold e (head, relation or tail of a training triple or of its frozen
    negative, masked triples included): a slot adds (l2 / (2 deg_e))||theta_e||^2 to its batch's loss.
    Summed over an epoch that is exactly (l2/2)||theta||^2 for every row in some triple, so the objective,
    and its optimum, are those of the dense loop (which applies l2/n to every row every step); a row in no
    triple has no loss gradient and no L2 step: it stays at its initial value where the dense loop decays
    it to 0 (such rows take part in no measure). Adam's moments of an untouched row are not decayed either
    (lazy Adam), so the path to the optimum differs from the dense loop's, not the optimum.
    ``regulariser`` R adds R(theta) to the objective: each step adds R / (n_batches * b), so that one epoch
    adds it on the 1/b scale of its margins; a config with ``fairness_weight`` > 0 must come with it
    (never trained as plain TransE).
    """
    if config.fairness_weight and regulariser is None:
        raise KGBiasError(REGULARISER_MISSING.format(weight=config.fairness_weight))
    device = torch.device(device)  # a name ("cpu") too; chosen by the caller (kgbias_core.device)
    start = time.perf_counter()
    n = triples.shape[0]
    weights = torch.ones(n) if weights is None else weights.to(torch.float32)
    if init is None:
        init = initial_embeddings(
            n_entities=n_entities, n_relations=n_relations, dim=config.dim, seed=config.seed,
            n_base_entities=n_base_entities,
        )
    entities = torch.nn.Parameter(init[0].to(device, copy=True))  # [n_entities, dim]
    relations = torch.nn.Parameter(init[1].to(device, copy=True))  # [n_relations, dim]
    n_epochs = config.epochs if epochs is None else epochs
    n_batches = math.ceil(n / config.batch_size)
    optimizer, shares = _optimizer(config, [entities, relations], triples, negatives, n_entities=n_entities,
                                   n_relations=n_relations, device=device)
    scheduler = _schedule(optimizer, config, n_epochs=n_epochs, n_batches=n_batches)
    pos_all, neg_all, w_all = triples.to(device), negatives.to(device), weights.to(device)
    k = negatives_count(negatives, n)
    by_rank = neg_all.view(k, n, 3)  # [K, n, 3]: by_rank[j, i] is triple i's j-th negative
    permutations = torch.Generator().manual_seed(config.seed)
    losses: list[float] = []
    with reproducible(device):
        for epoch in range(1, n_epochs + 1):
            order = torch.randperm(n, generator=permutations).to(device)
            total = torch.zeros((), device=device)
            for batch in order.split(config.batch_size):
                # K = 1 indexes the table as it always did (bit for bit the weights of every stored model)
                batch_negatives = neg_all[batch] if k == 1 else by_rank[:, batch].reshape(-1, 3)  # [K b, 3]
                loss, per_triple = _batch_loss(
                    entities, relations, pos_all[batch], batch_negatives, w_all[batch], margin=config.margin,
                    shares=shares, regulariser=regulariser, n_batches=n_batches, distance=config.distance,
                )
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                scheduler.step()
                total += per_triple.detach().sum()
            losses.append(float(total) / max(float(weights.sum()), 1.0))
            if on_epoch is not None:
                on_epoch(epoch, n_epochs, losses[-1])
            if should_stop is not None and should_stop():
                raise CancelledError(CANCELLED.format(epoch=epoch))
    return TransEResult(
        entity_embeddings=entities.detach().cpu().clone(),
        relation_embeddings=relations.detach().cpu().clone(),
        losses=losses,
        seconds=time.perf_counter() - start,
    )


def replay_new_rows(
    *, triples: LongTensor, negatives: LongTensor, entities: FloatTensor, relations: FloatTensor,
    n_base_entities: int, config: TrainConfig,
) -> FloatTensor:
    """The rows beyond ``n_base_entities`` (an addition's new entities) as :func:`train_transe` would train them on
    ``triples`` if every other row stayed where ``entities`` and ``relations`` hold it: Kelpie's post-training
    (Rossi et al. 2022, "Explaining link prediction systems based on knowledge graph
    embeddings": a new entity's row trained by the original loop with every other row frozen).

    The replay is the retrain's own loop for these rows: the same batch order (``config.seed`` over all n rows), the
    same optimiser (Adam, or SparseAdam with its L2 shares), learning-rate schedule and epochs, each batch's loss on
    its full row count. Only the batches' triples that hold a new row (as head, tail or in a negative) are
    evaluated; the frozen rows they touch are read, never moved. Adam's moments are per coordinate, so the new rows
    follow exactly the path they take in a retrain whose other rows sit at ``entities`` throughout; a real retrain
    moves those rows from their own initialisation, the one difference. A fairness regulariser is not replayed
    (it acts on persons' rows over the whole table).

    Why a replay and not the new rows' optimum: a retrain stops a new row well short of its optimum given the
    trained rows (on FB15k-237's eight-negative default, Add's 392 dummies end at mean |d| 0.155 and psi of their
    occupation fact 35.1; the replay 0.164 and 33.1; one Newton step from the initial rows 0.56 and 30.7,
    which flipped the sign of the predicted change).

    Shapes: triples [n, 3] (the edited graph, new entities' ids >= ``n_base_entities``), negatives [K n, 3],
    entities [E, d] (new rows at their initialisation), relations [R, d] -> the new rows [E - n_base_entities, d].
    """
    device = entities.device
    n = triples.shape[0]
    k = negatives_count(negatives, n)
    by_rank = negatives.to(device).view(k, n, 3)
    triples = triples.to(device)

    def holds_new(t: LongTensor) -> BoolTensor:
        return (t[..., 0] >= n_base_entities) | (t[..., 2] >= n_base_entities)

    touched = holds_new(triples) | holds_new(by_rank).any(0)  # [n]: the triples whose loss reaches a new row
    rows = touched.nonzero().squeeze(1)
    ids = torch.cat([triples[rows][:, [0, 2]].reshape(-1), by_rank[:, rows][..., [0, 2]].reshape(-1)])
    relations = relations.detach()
    n_batches = math.ceil(n / config.batch_size)
    ones = torch.ones(n, device=device)
    steps = _replay_steps(touched, n=n, config=config, device=device)
    if config.optimizer == "sparse_adam":
        return _replay_row_wise(steps, triples=triples, negatives=negatives, by_rank=by_rank, entities=entities,
                                relations=relations, ids=ids, n_base_entities=n_base_entities, config=config,
                                ones=ones, n_batches=n_batches)
    # Dense Adam steps every row of its parameter at every step: only the new rows the triples read are the
    # parameter, and a lookup reads the others from the frozen table (no table of every row is built per step).
    if config.optimizer not in OPTIMIZERS:
        raise KGBiasError(UNKNOWN_OPTIMIZER.format(optimizer=config.optimizer, known=", ".join(OPTIMIZERS)))
    frozen = entities.detach()
    new_ids = torch.unique(ids[ids >= n_base_entities])  # sorted
    moving = frozen[new_ids].clone()
    # each entity's place in ``moving``; a frozen row's is the spare row past the end, where its gradient is dropped
    slot = torch.full((frozen.shape[0],), new_ids.shape[0], dtype=torch.long, device=device)
    slot[new_ids] = torch.arange(new_ids.shape[0], device=device)
    # torch.optim.Adam(weight_decay=l2 / n) and the cosine schedule of _optimizer and _schedule, as plain
    # arithmetic (bit for bit): thousands of steps on a few hundred rows, where torch.optim's per-call cost and
    # its first construction's import of torch._dynamo (3 s) outweighed the steps themselves.
    adam = PlainAdam(moving, lr=config.lr, lr_min=config.lr_min, t_max=config.epochs * n_batches,
                     weight_decay=config.l2 / n)
    zero = torch.zeros_like(moving)
    with reproducible(device):
        for mine, share in steps:
            if mine is None:
                adam.step(zero)  # dense Adam decays and moves every row at every step
                continue
            both = torch.cat([triples[mine], by_rank[:, mine].reshape(-1, 3)])  # [(1 + K) b, 3]
            adam.step(replay_gradient(moving, frozen, relations, both, slot=slot, k=k, margin=config.margin,
                                      scale=share, distance=config.distance))
    new_rows = frozen[n_base_entities:].clone()
    new_rows[new_ids - n_base_entities] = moving
    return new_rows


def replay_gradient(
    moving: FloatTensor, frozen: FloatTensor, relations: FloatTensor, both: LongTensor, *, slot: LongTensor, k: int,
    margin: float, scale: float, distance: str,
) -> FloatTensor:
    """d/d(moving) of ``scale`` * (1/b) sum_i (1/K) sum_j [gamma + psi(z_i) - psi(z'_ij)]_+ (the loop's batch loss,
    METHODS §2-3, without its L2 term, which Adam's weight decay adds), written out instead of autograd's graph:
    the replay's thousands of small steps paid more for the graph than for the arithmetic.

    With v = h + r - t and a_ij = 1[gamma + psi(z_i) - psi(z'_ij) > 0] (relu's derivative, 0 at the kink as
    autograd's), d/d psi(z_i) = scale / (b K) sum_j a_ij and d/d psi(z'_ij) = -scale / (b K) a_ij; d psi / d v is
    :func:`~kgbias_core.embeddings.objective.distance_gradient`, and v's gradient goes to h's row with + and to
    t's with - (rows outside ``moving`` read from ``frozen``; their gradient lands on a spare row, dropped).

    Shapes: moving [N, d], frozen [E, d], relations [R, d], both [(1 + K) b, 3] (the batch's positives, then its
    negatives by rank: row j b + i is positive i's j-th), slot [E] (an entity's row in moving, N for a frozen
    one) -> [N, d]."""
    n_moving = moving.shape[0]
    spare = torch.cat([moving, moving.new_zeros(1, moving.shape[1])])  # [N + 1, d]; row N is never read
    heads, tails = both[:, 0], both[:, 2]

    def rows(index: LongTensor) -> FloatTensor:
        place = slot[index]
        return torch.where((place < n_moving).unsqueeze(1), spare.index_select(0, place), frozen.index_select(0, index))

    residual = rows(heads) + relations.index_select(0, both[:, 1]) - rows(tails)  # [(1 + K) b, d]
    psi = residual_distance(residual, distance=distance)
    b = both.shape[0] // (1 + k)
    active = (margin + psi[:b] - psi[b:].view(k, b) > 0).to(residual.dtype)  # [K, b]
    per_unit = scale / (b * k)
    weight = torch.cat([active.sum(0), -active.reshape(-1)]).mul_(per_unit)  # d loss / d psi, [(1 + K) b]
    dv = distance_gradient(residual, distance=distance).mul_(weight.unsqueeze(1))
    grad = moving.new_zeros(n_moving + 1, moving.shape[1])
    grad.index_add_(0, slot[heads], dv).index_add_(0, slot[tails], dv, alpha=-1)
    return grad[:n_moving]


def _replay_steps(touched: BoolTensor, *, n: int, config: TrainConfig, device: torch.device
                  ) -> Iterator[tuple[LongTensor | None, float]]:
    """The retrain's steps as the replay sees them: per step, the batch's triples that reach a new row (None where
    none does) and their share of the batch. The batch order is ``config.seed``'s permutation of all n rows, as
    in :func:`train_transe`; each epoch's selection is made on the CPU and moved in one copy, so that a step on a
    GPU never waits for the host to count its rows."""
    touched = touched.cpu()
    permutations = torch.Generator().manual_seed(config.seed)
    for _ in range(config.epochs):
        batches = torch.randperm(n, generator=permutations).split(config.batch_size)
        chosen = [batch[touched[batch]] for batch in batches]
        counts = [int(c.numel()) for c in chosen]
        on_device = torch.cat(chosen).to(device).split(counts)
        for batch, mine, count in zip(batches, on_device, counts, strict=True):
            yield (mine if count else None), count / batch.numel()


def _replay_row_wise(
    steps: Iterator[tuple[LongTensor | None, float]], *, triples: LongTensor, negatives: LongTensor,
    by_rank: LongTensor, entities: FloatTensor, relations: FloatTensor, ids: LongTensor, n_base_entities: int,
    config: TrainConfig, ones: FloatTensor, n_batches: int,
) -> FloatTensor:
    """:func:`replay_new_rows` with SparseAdam: row-wise lookups need a leaf table, the rows the touched triples
    read (compacted, new ones last), its frozen rows put back after every step (SparseAdam moves only the rows
    of the batch, so this costs what the batch costs)."""
    device = entities.device
    used = torch.unique(ids)  # sorted: the entity rows these triples read, new ones last
    local = torch.full((entities.shape[0],), -1, dtype=torch.long, device=device)
    local[used] = torch.arange(used.shape[0], device=device)

    def compact(t: LongTensor) -> LongTensor:
        t = t.clone()
        t[..., 0], t[..., 2] = local[t[..., 0]], local[t[..., 2]]
        return t

    positives, their_negatives = compact(triples), compact(by_rank)  # [n, 3], [K, n, 3]; -1 where never read
    rows_read = entities.detach()[used]  # [U, d]: the frozen rows first, then the new ones (ids sorted)
    n_frozen = int((used < n_base_entities).sum())
    moving = torch.nn.Parameter(rows_read.clone())
    optimizer, shares = _optimizer(config, [moving], triples, negatives, n_entities=entities.shape[0],
                                   n_relations=relations.shape[0], device=device)
    shares = (shares[0][used], shares[1])
    scheduler = _schedule(optimizer, config, n_epochs=config.epochs, n_batches=n_batches)
    with reproducible(device):
        for mine, share in steps:
            optimizer.zero_grad(set_to_none=True)
            if mine is None:  # no row to move, but SparseAdam's step count (its bias correction) advances
                moving.grad = torch.sparse_coo_tensor(torch.empty(1, 0, dtype=torch.long, device=device),
                                                      moving.new_empty(0, moving.shape[1]), moving.shape,
                                                      check_invariants=True)
            else:
                loss, _ = _batch_loss(moving, relations, positives[mine], their_negatives[:, mine].reshape(-1, 3),
                                      ones[mine], margin=config.margin, shares=shares, regulariser=None,
                                      n_batches=n_batches, distance=config.distance)
                (loss * share).backward()  # the loop divides by the whole batch
            optimizer.step()
            scheduler.step()
            with torch.no_grad():
                moving[:n_frozen] = rows_read[:n_frozen]
    new_rows = entities.detach()[n_base_entities:].clone()
    new_rows[used[n_frozen:] - n_base_entities] = moving.detach()[n_frozen:]
    return new_rows


def _rowwise_distance(
    *, entities: FloatTensor, relations: FloatTensor, triples: LongTensor, entity_share: FloatTensor,
    relation_share: FloatTensor, distance: str = "squared_l2",
) -> tuple[FloatTensor, FloatTensor]:
    """psi of each triple and the L2 shares of its slots, through sparse lookups (row-wise gradients).

    Shapes: entities [E, d], relations [R, d], triples [m, 3], entity_share [E], relation_share [R]
    -> (psi [m], scalar sum over slots of share_row * ||theta_row||^2). Same psi as
    :func:`~kgbias_core.embeddings.objective.transe_distance`, whose lookups give dense gradients.
    """
    h = functional.embedding(triples[:, 0], entities, sparse=True)  # [m, d]
    r = functional.embedding(triples[:, 1], relations, sparse=True)  # [m, d]
    t = functional.embedding(triples[:, 2], entities, sparse=True)  # [m, d]
    psi = residual_distance(h + r - t, distance=distance)  # [m]
    shares = ((entity_share[triples[:, 0]] * h.pow(2).sum(-1)).sum()
              + (relation_share[triples[:, 1]] * r.pow(2).sum(-1)).sum()
              + (entity_share[triples[:, 2]] * t.pow(2).sum(-1)).sum())
    return psi, shares


def default_damping(*, n_triples: int, n_entities: int) -> float:
    """lambda = 2|G|/|E| (METHODS §3-4): the mean degree, where Du's alpha_e crosses zero."""
    return 2.0 * n_triples / n_entities


def train_model(
    graph: KnowledgeGraph,
    config: TrainConfig,
    *,
    name: str,
    device: torch.device | None = None,
    on_epoch: EpochCallback | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> StoredModel:
    """Train ``config.model`` on ``graph``'s training split; the result is ready for :func:`save_model`.

    ``device``: where it trains, as :func:`kgbias_core.device.resolve_device` resolved it (None: ``auto``).
    """
    device = torch.device(device) if device is not None else default_device()
    factory = graph.training
    triples = factory.mapped_triples.clone()
    n_entities, n_relations = factory.num_entities, factory.num_relations
    negatives = None
    if config.model == "transe":
        negatives = frozen_negatives(triples, n_entities=n_entities, seed=config.seed,
                                     count=config.negatives_per_triple,
                                     **negative_draw(config, statistics=triples, n_entities=n_entities,
                                                     n_relations=n_relations, triples=triples))
        result = train_transe(
            triples=triples, negatives=negatives, n_entities=n_entities, n_relations=n_relations,
            config=config, device=device, on_epoch=on_epoch, should_stop=should_stop,
        )
        weights = {
            "entity_embeddings": result.entity_embeddings,
            "relation_embeddings": result.relation_embeddings,
        }
        losses, seconds = result.losses, result.seconds
    elif config.model in PYKEEN_MODELS:
        if config.negatives_per_triple != 1:  # its fingerprint would name a setting the weights never saw
            raise KGBiasError(NEGATIVES_NOT_TRANSE.format(count=config.negatives_per_triple, model=config.model))
        if config.distance != "squared_l2":  # the same: PyKEEN's model has its own score
            raise KGBiasError(DISTANCE_NOT_TRANSE.format(distance=config.distance, model=config.model))
        if config.corruption != "uniform":  # the same: PyKEEN's sampler draws its own
            raise KGBiasError(CORRUPTION_NOT_TRANSE.format(corruption=config.corruption, model=config.model))
        if config.negative_entities != "uniform":  # the same
            raise KGBiasError(NEGATIVE_ENTITIES_NOT_TRANSE.format(draw=config.negative_entities, model=config.model))
        weights, losses, seconds = train_pykeen(
            graph, config, device=device, on_epoch=on_epoch, should_stop=should_stop
        )
    else:
        raise KGBiasError(UNKNOWN_MODEL.format(model=config.model, known=", ".join(MODELS)))
    return graph_model(graph, config, name=name, weights=weights, negatives=negatives, info={
        "final_loss": losses[-1] if losses else None,
        "train_seconds": seconds,
        "device": str(device),
    })


def graph_labels(graph: KnowledgeGraph) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(entity labels, relation labels) of ``graph``'s training split, each in id order."""
    factory = graph.training
    # str(): labels read from numpy arrays are np.str_, which JSON and reprs should not see.
    entities = tuple(str(e) for e in sorted(factory.entity_to_id, key=factory.entity_to_id.__getitem__))
    relations = tuple(str(r) for r in sorted(factory.relation_to_id, key=factory.relation_to_id.__getitem__))
    return entities, relations


def graph_model(
    graph: KnowledgeGraph,
    config: TrainConfig,
    *,
    name: str,
    weights: dict[str, torch.Tensor],
    negatives: LongTensor | None,
    info: dict[str, object],
) -> StoredModel:
    """A :class:`StoredModel` of ``weights`` (rows in ``graph``'s id order) over ``graph``'s training
    split, id maps, names and held-out splits: the one place a model meets its graph, whether trained
    here or imported (:mod:`kgbias_core.embeddings.importers`)."""
    triples = graph.training.mapped_triples.clone()
    entity_labels, relation_labels = graph_labels(graph)
    damping = config.damping if config.damping is not None else default_damping(
        n_triples=triples.shape[0], n_entities=len(entity_labels)
    )
    config = replace(config, damping=damping)  # record the lambda actually used
    return StoredModel(
        name=name,
        dataset=graph.name,
        data_hash=graph.data_hash,
        schema=graph.schema,
        config=config,
        entity_labels=entity_labels,
        entity_names=tuple(graph.entity_name(e) for e in entity_labels),
        relation_labels=relation_labels,
        weights=weights,
        triples=triples,
        negatives=negatives,
        valid_triples=None if graph.validation is None else graph.validation.mapped_triples.clone(),
        test_triples=None if graph.testing is None else graph.testing.mapped_triples.clone(),
        damping=damping,
        info={
            "versions": library_versions(),
            **info,
            "n_train": int(triples.shape[0]),
            **({"inverse_occupation": True} if graph.inverse_occupation else {}),
        },
    )


def train_pykeen(
    graph: KnowledgeGraph,
    config: TrainConfig,
    *,
    device: torch.device,
    on_epoch: EpochCallback | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> tuple[dict[str, torch.Tensor], list[float], float]:
    """DistMult / ComplEx / RotatE through PyKEEN's own pipeline (no influence math needs them)."""
    from pykeen.models import model_resolver
    from pykeen.training import SLCWATrainingLoop
    from pykeen.training.callbacks import TrainingCallback
    from pykeen.utils import set_random_seed

    class _Progress(TrainingCallback):
        def post_epoch(self, epoch: int, epoch_loss: float, **kwargs: object) -> None:
            if on_epoch is not None:
                on_epoch(epoch, config.epochs, float(epoch_loss))
            if should_stop is not None and should_stop():
                raise CancelledError(CANCELLED.format(epoch=epoch))

    set_random_seed(config.seed)
    model = model_resolver.make(
        config.model, {"embedding_dim": config.dim, "random_seed": config.seed},
        triples_factory=graph.training,
    ).to(device)
    loop = SLCWATrainingLoop(
        model=model, triples_factory=graph.training, optimizer="adam",
        optimizer_kwargs={"lr": config.lr},
    )
    start = time.perf_counter()
    losses = loop.train(
        triples_factory=graph.training, num_epochs=config.epochs, batch_size=config.batch_size,
        callbacks=_Progress(), use_tqdm=False, use_tqdm_batch=False,
    )
    weights = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
    return weights, [float(x) for x in losses or []], time.perf_counter() - start
