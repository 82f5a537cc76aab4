"""Which negatives a model's influence uses, and how much the answer depends on them (METHODS §2, §4).

Du's closed form (:mod:`kgbias_core.influence.closed_form`) needs the negative z' that each training
triple z was trained against. A TransE trained by kgbias stores one frozen negative per triple: its
influence is **exact** (within Du's approximation). A model trained elsewhere (``kgbias import``) has
none: its engine drew fresh negatives every batch. kgbias then draws :data:`IMPORT_NEGATIVES` negatives per
triple (recorded in its config at import) as its own training loop does
(:func:`~kgbias_core.embeddings.training.frozen_negatives`, head or tail replaced 50/50 by a uniform entity)
from an explicit seed: the influence is **approximate (negatives re-drawn)**,
and every place that shows it says so. How much the re-draw matters is measured, not assumed:
:func:`redraw_stability` compares the top 1% across three seeds, and
``experiments/redrawn_negatives/redrawn_negatives.py`` compares re-drawn against the true frozen
negatives of a kgbias model.

Retraining (what-ifs, noise band, calibration) never re-draws: it would train a different model
from the one imported, so it keeps refusing a model without frozen negatives
(:attr:`~kgbias_core.embeddings.store.StoredModel.frozen_negatives`).
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from scipy import stats

from kgbias_core.embeddings.store import StoredModel
from kgbias_core.embeddings.training import frozen_negatives, negative_draw
from kgbias_core.influence.closed_form import top_influence
from kgbias_core.types import FloatTensor, LongTensor

#: The label of influence computed from re-drawn negatives, wherever it is shown (CLI, tables, page, report).
APPROXIMATE = "approximate (negatives re-drawn)"
#: The label of influence computed from the model's own frozen negatives.
EXACT = "exact (frozen negatives)"
#: The re-draw seed when none is given (CLI ``--negative-seed``, the dashboard).
DEFAULT_NEGATIVE_SEED = 0
#: Seeds compared by :func:`redraw_stability`: the chosen one and the next ones.
STABILITY_SEEDS = 3
#: Negatives re-drawn per training triple for a model imported from another engine, recorded at import as its
#: config's ``negatives_per_triple`` (:func:`import_negatives_per_triple`). An engine drew fresh negatives every
#: batch, so its optimum is the mean hinge over many; one re-drawn negative a triple makes each triple's margin term
#: a coin flip, and the what-if step of the triples the closed form ranks top rides on the flips that came up active.
#: On synthetic graphs trained with eight negatives and predicted as imports (experiments/whatif_accuracy/
#: local_refit.py --as-imported; docs/results/whatif.md), with one re-drawn negative the lab's interval held 2%
#: (squared L2), 45% (L1) and 62% (L2) of their targeted sets, and no band at all more than 9%, 75% and 81%; with
#: eight, bands hold 86%, 96% and 73% (:data:`~kgbias_core.influence.prediction.REDRAWN_BANDS`): L2 gains nothing.
#: (L2's step since 2026-12-07 is smaller and its band holds 21%: an L2 import's refined prediction is offered,
#: :mod:`kgbias_core.influence.refit_prediction`.)
IMPORT_NEGATIVES = 8
#: At most this many re-drawn negatives in all (a [K |G|, 3] table, 24 bytes a row): a graph of more than
#: IMPORT_NEGATIVES_MAX_ROWS / 8 triples re-draws fewer a triple, down to one (the 20M-triple graph: 480 MB).
IMPORT_NEGATIVES_MAX_ROWS = 20_000_000
#: Du's "top 1%": the share of the moving triples whose ranks the stability compares.
TOP_FRACTION = 0.01


@dataclass(frozen=True)
class InfluenceNegatives:
    """The negatives one model's influence uses, and whether they are the ones it was trained with."""

    negatives: LongTensor  # [K |G|, 3] row j |G| + i: the j-th negative of training triple i (K = 1: row i)
    seed: int | None  # the re-draw seed; None when these are the model's own frozen negatives

    @property
    def exact(self) -> bool:
        return self.seed is None

    @property
    def label(self) -> str:
        """:func:`negatives_label` of these negatives."""
        return negatives_label(seed=self.seed)


def negatives_label(*, seed: int | None) -> str:
    """:data:`EXACT` (``seed`` None), or :data:`APPROXIMATE` with its seed:
    "approximate (negatives re-drawn), seed 0"."""
    return EXACT if seed is None else f"{APPROXIMATE}, seed {seed}"


def import_negatives_per_triple(n_triples: int) -> int:
    """How many negatives a triple an imported TransE re-draws (:data:`IMPORT_NEGATIVES`, fewer where the table
    would pass :data:`IMPORT_NEGATIVES_MAX_ROWS`, at least one): set once, at import, in the model's config."""
    return max(1, min(IMPORT_NEGATIVES, IMPORT_NEGATIVES_MAX_ROWS // max(1, n_triples)))


def reimport_negatives(model: StoredModel) -> int | None:
    """The negatives a triple ``kgbias import`` would re-draw today for ``model``, where it is an imported TransE whose
    config records fewer (one imported before 2026-12-06, when an import re-drew one): the count it would get by
    being imported again. None for every other model (trained here, untrained, or imported with today's count)."""
    if not model.info.get("imported_from") or model.info.get("untrained") or model.config.model != "transe":
        return None
    today = import_negatives_per_triple(int(model.triples.shape[0]))
    return today if int(model.config.negatives_per_triple) < today else None


def redrawn_negatives(model: StoredModel, *, seed: int, count: int | None = None) -> LongTensor:
    """``count`` negatives per training triple of ``model`` (None: its ``config.negatives_per_triple``; an imported
    model's was set at import, :func:`import_negatives_per_triple`, and is 1 for one imported before 2026-12-06),
    drawn as kgbias's training draws its frozen ones (its ``config.corruption``: half the head and half the tail, or
    Bernoulli; its ``config.negative_entities``; an imported model's are uniform).

    Shapes: -> [K |G|, 3] on the model's device, row j |G| + i the j-th of triple i. With the model's own
    ``config.seed`` on an unedited kgbias model this reproduces its frozen negatives exactly (the training
    loop's call).
    """
    count = model.config.negatives_per_triple if count is None else count
    triples = model.triples.cpu()
    drawn = frozen_negatives(triples, n_entities=model.n_entities, seed=seed, count=count,  # a CPU generator
                             **negative_draw(model.config, statistics=triples, n_entities=model.n_entities,
                                             n_relations=model.n_relations, triples=triples))
    return drawn.to(model.triples.device)


def influence_negatives(model: StoredModel, *, seed: int = DEFAULT_NEGATIVE_SEED) -> InfluenceNegatives:
    """The one home of "which negatives does this model's influence use": the frozen ones where the
    model has them (exact; ``seed`` unused), otherwise re-drawn from ``seed`` (approximate).

    A model that is no TransE fails first, with the named error of its missing vectors.
    """
    model.entity_embeddings  # noqa: B018 -- NOT_TRANSE before anything is drawn
    if model.info.get("debias"):  # exact or re-drawn, its influence would linearise an objective it does not minimise
        model.frozen_negatives  # noqa: B018 -- raises DEBIASED_NO_RETRAIN
    if model.negatives is not None:
        return InfluenceNegatives(negatives=model.negatives, seed=None)
    return InfluenceNegatives(negatives=redrawn_negatives(model, seed=seed), seed=seed)


def stability_seeds(seed: int = DEFAULT_NEGATIVE_SEED) -> tuple[int, ...]:
    """The :data:`STABILITY_SEEDS` seeds whose re-draws :func:`redraw_stability` compares: seed, seed + 1, ..."""
    return tuple(range(seed, seed + STABILITY_SEEDS))


def _correlation(kind: str, x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rho or Pearson's r of two equally long vectors; NaN under 3 values or a constant one."""
    if x.shape[0] < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.ConstantInputWarning)
        found = stats.spearmanr(x, y) if kind == "spearman" else stats.pearsonr(x, y)
    return float(found.statistic)


@dataclass(frozen=True)
class InfluenceAgreement:
    """How far two influence vectors of one occupation agree (:func:`influence_agreement`)."""

    spearman: float  # Spearman's rho of delta_z over the moving triples (non-zero under either)
    pearson: float  # Pearson's r over the same triples
    n_moving: int  # how many triples that is
    top_overlap: float  # |T_a ∩ T_b| / |T_a|: share of a's top fraction that is in b's
    top_spearman: float  # Spearman's rho of delta_z over T_a ∪ T_b
    n_top: int  # |T_a ∪ T_b|


def influence_agreement(a: FloatTensor, b: FloatTensor, *, fraction: float = TOP_FRACTION) -> InfluenceAgreement:
    """Agreement of two vectors of delta_z B_gr over the same training triples (``a`` the reference).

    Shapes: a, b [|G|]. T_x is the top ``fraction`` of x's moving triples by |delta_z|
    (:func:`~kgbias_core.influence.closed_form.top_influence`, at least one); a triple in the union
    that does not move under one vector enters with its delta_z = 0 there. Signed delta_z throughout,
    so a triple whose sign flips counts against the agreement.
    """
    x, y = a.detach().double().cpu(), b.detach().double().cpu()
    moving = ((x != 0) | (y != 0)).numpy()
    top_a, top_b = top_influence(x, fraction=fraction), top_influence(y, fraction=fraction)
    union = torch.unique(torch.cat([top_a, top_b])).numpy()
    shared = int(np.isin(top_a.numpy(), top_b.numpy()).sum())
    xs, ys = x.numpy(), y.numpy()
    return InfluenceAgreement(
        spearman=_correlation("spearman", xs[moving], ys[moving]),
        pearson=_correlation("pearson", xs[moving], ys[moving]),
        n_moving=int(moving.sum()),
        top_overlap=shared / top_a.shape[0] if top_a.shape[0] else math.nan,
        top_spearman=_correlation("spearman", xs[union], ys[union]),
        n_top=int(union.shape[0]),
    )


@dataclass(frozen=True)
class RedrawStability:
    """Stability of the top influences across negative seeds (:func:`redraw_stability`)."""

    seeds: tuple[int, ...]  # the re-draw seeds compared
    spearman_min: float  # lowest Spearman's rho of delta_z over U between two seeds
    spearman_mean: float  # mean over the seed pairs
    overlap_min: float  # lowest |T_i ∩ T_j| / |T_i ∪ T_j| (Jaccard) between two seeds
    n_union: int  # |U|: the triples compared
    fraction: float = TOP_FRACTION  # the share of each seed's moving triples in its top set

    def summary(self) -> str:
        """One line: 'Spearman of the top 1% across seeds 0, 1, 2: min 0.91, mean 0.94 (312 triples)'."""
        return (f"Spearman of the top {self.fraction:.0%} across negative seeds {', '.join(map(str, self.seeds))}: "
                f"min {self.spearman_min:.2f}, mean {self.spearman_mean:.2f} ({self.n_union} triples; "
                f"top sets overlap at least {self.overlap_min:.0%})")


def redraw_stability(
    influences: Sequence[FloatTensor], *, seeds: Sequence[int], fraction: float = TOP_FRACTION
) -> RedrawStability:
    """How stable the top influences of one occupation are under the draw of the negatives.

    Shapes: ``influences`` k vectors [|G|] of delta_z B_gr, one per seed in ``seeds`` (k >= 2).
    T_i = the top ``fraction`` of seed i's moving triples by |delta_z| (at least one;
    :func:`~kgbias_core.influence.closed_form.top_influence`); U = T_1 ∪ ... ∪ T_k. For each pair
    i < j: rho_ij = Spearman's rho of (delta_z^i)_{z in U} and (delta_z^j)_{z in U} (signed; a
    triple of U that does not move under a seed counts with 0 there), and J_ij = |T_i ∩ T_j| / |T_i ∪ T_j|.
    Reported: min and mean of rho_ij, min of J_ij, |U|. rho near 1: the re-draw barely changes
    which triples lead and in what order; NaN when U has fewer than 3 triples.
    """
    vectors = [v.detach().double().cpu() for v in influences]
    tops = [top_influence(v, fraction=fraction) for v in vectors]
    union = torch.unique(torch.cat(tops)).numpy()
    rhos, overlaps = [], []
    for i, j in itertools.combinations(range(len(vectors)), 2):
        rhos.append(_correlation("spearman", vectors[i].numpy()[union], vectors[j].numpy()[union]))
        pair = set(tops[i].tolist()) | set(tops[j].tolist())
        overlaps.append(len(set(tops[i].tolist()) & set(tops[j].tolist())) / len(pair) if pair else math.nan)
    return RedrawStability(seeds=tuple(seeds), spearman_min=float(np.min(rhos)), spearman_mean=float(np.mean(rhos)),
                           overlap_min=float(np.min(overlaps)), n_union=int(union.shape[0]),
                           fraction=fraction)
