"""Link prediction: head and tail scores, top-1 tails, filtered ranks, MRR / Hits@k, cached per model.

The one home of link prediction. Every model is evaluated on both sides: the tail side ranks the true t of
(h, r, ?), the head side the true h of (?, r, t), and ``both`` pools the two sides' ranks (PyKEEN's "both",
the figure the literature reports for FB15k-237).
Schwertmann et al.'s fairness (:mod:`kgbias_core.measures.prediction_fairness`) reads its top-1 tails
from here; the comparison and debiasing pages read the cached MRR / Hits@k table.
Filtered ranks follow Bordes et al. (2013) as Schwertmann, Kraft & Usbeck (2023) §4.3 report them.
The model is only asked for scores: any PyKEEN model with ``score_t`` works.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from pykeen.models import Model
from pykeen.nn.modules import TransEInteraction

from kgbias_core.embeddings.config import PSEUDO_HUBER_DELTA
from kgbias_core.embeddings.pseudo_huber import PseudoHuberTransEInteraction
from kgbias_core.embeddings.pykeen_bridge import pykeen_model
from kgbias_core.embeddings.results import load_result, save_result
from kgbias_core.embeddings.store import (
    StoredModel,
    load_model,
)
from kgbias_core.errors import RANKS_EMPTY, TRIPLES_BAD_SHAPE, MeasureError
from kgbias_core.evaluation.baseline import PopularityScorer, modal_share
from kgbias_core.types import FloatTensor, LongTensor

__all__ = [
    "BASELINE_KEYS",
    "FLOOR_COLUMNS",
    "LINK_PREDICTION_PARAMS",
    "LINK_PREDICTION_RESULT",
    "SIDES",
    "before_after",
    "cached_link_prediction",
    "filtered_ranks",
    "head_scores",
    "headline",
    "known_triples",
    "link_prediction",
    "link_prediction_sides",
    "one_side",
    "link_prediction_table",
    "load_link_prediction",
    "predict_top1_tails",
    "rank_metrics",
    "tail_scores",
]

#: Key of :func:`cached_link_prediction`'s table in a model's results folder.
LINK_PREDICTION_RESULT = "link_prediction"
#: The sides of a query, in the order of the cached table: heads (?, r, t), tails (h, r, ?), both pooled.
SIDES = ("head", "tail", "both")
#: Floats of one block of the pseudo-Huber ranker's [b, E, d] broadcast (4 MB, about a CPU's cache; a 64 MB block
#: took 3x as long, and the whole [b, E, d] of a 256-query batch of FB15k-237 would be 1.5 GB).
PSEUDO_HUBER_BLOCK = 1 << 20
#: What :func:`cached_link_prediction` evaluates: filtered, realistic ranks on the test split, both sides
#: (a table cached before heads were ranked has other params and is recomputed).
LINK_PREDICTION_PARAMS = {"split": "test", "sides": list(SIDES), "filtered": True, "ties": "realistic",
                          "baseline": "popularity"}
#: The popularity baseline's metrics each row carries as ``baseline_<key>`` (a table cached before it is recomputed).
BASELINE_KEYS = ("mrr", "hits@1", "hits@10")
#: The columns of the floor each row carries beside the model's ranks (:mod:`kgbias_core.evaluation.baseline`).
FLOOR_COLUMNS = (*(f"baseline_{key}" for key in BASELINE_KEYS), "same_top1")


def _check_triples(triples: LongTensor, what: str) -> None:
    if triples.ndim != 2 or triples.shape[1] != 3:
        raise MeasureError(TRIPLES_BAD_SHAPE.format(what=what, shape=tuple(triples.shape)))


def known_triples(model: StoredModel) -> LongTensor:
    """Train + valid + test triples of a stored model, on the CPU: [n, 3] (what filtered ranking removes)."""
    return torch.cat([t.cpu() for t in (model.triples, model.valid_triples, model.test_triples) if t is not None])


def tail_scores(model: Model, hr: LongTensor) -> FloatTensor:
    """Scores of (h, r, t) for every entity t. Shapes: hr [b, 2] -> [b, E].

    For TransE with squared L2 (power_norm, p = 2), ||h + r - t||^2 = ||q||^2 - 2 q.t + ||t||^2 with
    q = h + r turns the [b, E, d] broadcast of ``score_t`` into one [b, d] x [d, E] matmul — the
    difference between minutes and seconds on a CPU. Every other model uses its own ``score_t``.
    """
    norm = _transe_norm(model)
    if norm is not None:
        entities = model.entity_representations[0](indices=None)  # [E, d]
        q = entities[hr[:, 0]] + model.relation_representations[0](indices=hr[:, 1])  # [b, d]
        return -_distances(q, entities, norm)
    return model.score_t(hr)


def _transe_norm(model: Model) -> str | None:
    """The distance of a TransE of one entity and one relation table ("squared_l2", "l2", "l1" or "pseudo_huber"),
    else None (the model's own scoring)."""
    interaction = getattr(model, "interaction", None)
    if not (isinstance(interaction, TransEInteraction | PseudoHuberTransEInteraction)
            and len(model.entity_representations) == 1 and len(model.relation_representations) == 1):
        return None
    if isinstance(interaction, PseudoHuberTransEInteraction):
        return "pseudo_huber"
    if interaction.p == 2:
        return "squared_l2" if interaction.power_norm else "l2"
    return "l1" if interaction.p == 1 and not interaction.power_norm else None


def _distances(q: FloatTensor, entities: FloatTensor, norm: str) -> FloatTensor:
    """psi between each query point and every entity: q [b, d], entities [E, d] -> [b, E].

    Squared L2 as ||q||^2 - 2 q.t + ||t||^2 (one matmul); L1 and L2 by ``torch.cdist``, which does not materialise
    PyKEEN's [b, E, d] broadcast (an L1 model's link prediction took 288 s on an H200 that way, against 8 s for
    squared L2: docs/results/default_models.md). L2 is not taken as the square root of the matmul form: near the
    query (the answers that matter) its cancellation error reached 1e-3.
    """
    if norm == "squared_l2":
        return q.pow(2).sum(-1, keepdim=True) - 2 * q @ entities.T + entities.pow(2).sum(-1)
    if norm == "pseudo_huber":
        return _pseudo_huber_distances(q, entities)
    return torch.cdist(q, entities, p=1.0 if norm == "l1" else 2.0, compute_mode="donot_use_mm_for_euclid_dist")


def _pseudo_huber_distances(q: FloatTensor, entities: FloatTensor) -> FloatTensor:
    """psi of the pseudo_huber distance between each query point and every entity: [b, d], [E, d] -> [b, E].

    No cdist computes it, so the [b, E, d] broadcast is taken in blocks of entities of a cache-sized temporary,
    squared, shifted and rooted in place, and delta d subtracted once per sum (the same psi as
    :func:`~kgbias_core.embeddings.objective.residual_distance` to float rounding). One batch of 256 queries against
    FB15k-237's 14,541 entities (d 100, one thread of the 2-core CPU, two sweeps beside it): 0.33 s, against 4.0 s
    through that function on 64 MB blocks (bench/bench_pseudo_huber_ranker.py).
    """
    delta = PSEUDO_HUBER_DELTA
    step = max(1, PSEUDO_HUBER_BLOCK // max(q.shape[0] * q.shape[1], 1))
    blocks = []
    for start in range(0, entities.shape[0], step):
        x = q[:, None, :] - entities[None, start:start + step]  # [b, s, d]: the block's residuals (up to sign)
        blocks.append(x.square_().add_(delta * delta).sqrt_().sum(-1))
    return torch.cat(blocks, dim=1) - delta * q.shape[1]


def head_scores(model: Model, rt: LongTensor) -> FloatTensor:
    """Scores of (h, r, t) for every entity h. Shapes: rt [b, 2] (relation, tail) -> [b, E].

    For TransE with squared L2, ||h + r - t||^2 = ||h - q||^2 with q = t - r: the same one matmul as
    :func:`tail_scores`. Every other model uses its own ``score_h``.
    """
    norm = _transe_norm(model)
    if norm is not None:
        entities = model.entity_representations[0](indices=None)  # [E, d]
        q = entities[rt[:, 1]] - model.relation_representations[0](indices=rt[:, 0])  # [b, d]
        return -_distances(q, entities, norm)
    return model.score_h(rt)


def predict_top1_tails(model: Model, *, heads: LongTensor, relation: int, batch_size: int = 64) -> LongTensor:
    """The top-1 tail of (h, relation, ?) over ALL entities: the predicted label (Schwertmann §3.2).

    Shapes: heads [n] -> [n] entity ids (on the model's device). Ties go to the smaller entity
    id (``argmax`` returns the first maximum). Scored in batches of ``batch_size`` heads
    ([batch_size, E] scores at a time; small on purpose: PyKEEN's TransE materialises
    [batch_size, E, d], which is slower, not faster, in large batches on CPU).
    """
    heads = torch.as_tensor(heads, dtype=torch.long, device=model.device).reshape(-1)
    out = torch.empty_like(heads)
    with torch.no_grad():
        for start in range(0, heads.numel(), batch_size):
            chunk = heads[start : start + batch_size]
            hr = torch.stack([chunk, torch.full_like(chunk, relation)], dim=1)  # [b, 2]
            out[start : start + batch_size] = tail_scores(model, hr).argmax(dim=1)  # [b, E]
    return out


def filtered_ranks(model: Model, *, triples: LongTensor, known: LongTensor, batch_size: int = 64,
                   side: str = "tail", with_top1: bool = False) -> FloatTensor | tuple[FloatTensor, LongTensor]:
    """Filtered rank of each true tail (``side="tail"``) or head (``"head"``) among all entities
    (Bordes et al. 2013; Schwertmann §4.3).

    Tail side, for (h, r, t): every other tail t' with (h, r, t') in ``known`` is removed before ranking
    (pass train + valid + test as ``known``; t itself may be in it). The head side is the mirror: every
    other h' with (h', r, t) in ``known`` is removed. Realistic rank for ties, as PyKEEN's default (the mean
    of the optimistic and the pessimistic rank): rank = 1 + #{score > s_true} + #{score == s_true, other
    entity} / 2. Shapes: triples [n, 3], known [m, 3] -> [n] float ranks >= 1 (1 = best).
    ``with_top1``: also each query's unfiltered top-1 answer [n] (the highest score over all entities, ties to the
    smaller id), read off the same scores (:func:`~kgbias_core.evaluation.baseline.modal_share` reads it).
    """
    if side not in ("head", "tail"):
        raise ValueError(f"side must be 'head' or 'tail', not {side!r}")
    triples = torch.as_tensor(triples, dtype=torch.long, device=model.device)
    known = torch.as_tensor(known, dtype=torch.long, device=model.device)
    _check_triples(triples, "triples")
    _check_triples(known, "known")
    if side == "head":
        # (anchor, r, answer) = (t, r, h): the tail-side search below, with heads as the answers
        triples, known = triples[:, [2, 1, 0]], known[:, [2, 1, 0]]

    def scores_of(batch: LongTensor) -> FloatTensor:  # [b, 3] (anchor, r, answer) -> [b, E]
        return tail_scores(model, batch[:, :2]) if side == "tail" else head_scores(model, batch[:, [1, 0]])

    n_relations = max(model.num_relations, int(known[:, 1].max()) + 1 if known.numel() else 0)
    # Sorted (anchor, r) keys let each batch find its known answers by binary search, without a
    # Python dict over all known triples.
    known_keys = known[:, 0] * n_relations + known[:, 1]
    order = torch.argsort(known_keys)
    sorted_keys, sorted_tails = known_keys[order], known[order, 2]
    ranks = torch.empty(triples.shape[0], dtype=torch.float64, device=model.device)
    top1 = torch.empty(triples.shape[0], dtype=torch.long, device=model.device) if with_top1 else None
    with torch.no_grad():
        for start in range(0, triples.shape[0], batch_size):
            batch = triples[start : start + batch_size]  # [b, 3]
            scores = scores_of(batch).to(torch.float64)  # [b, E]
            if top1 is not None:
                top1[start : start + batch.shape[0]] = scores.argmax(dim=1)
            rows = torch.arange(batch.shape[0], device=model.device)
            true_scores = scores[rows, batch[:, 2]].unsqueeze(1)  # [b, 1]
            keys = batch[:, 0] * n_relations + batch[:, 1]
            left = torch.searchsorted(sorted_keys, keys, right=False)
            counts = torch.searchsorted(sorted_keys, keys, right=True) - left  # [b]
            hit_rows = torch.repeat_interleave(rows, counts)  # [k]
            starts = torch.repeat_interleave(left - (torch.cumsum(counts, 0) - counts), counts)
            hit_tails = sorted_tails[starts + torch.arange(hit_rows.numel(), device=model.device)]
            other = hit_tails != batch[hit_rows, 2]
            # NaN compares False with everything: filtered entities are neither better nor tied
            scores[hit_rows[other], hit_tails[other]] = float("nan")
            better = (scores > true_scores).sum(dim=1)
            tied = (scores == true_scores).sum(dim=1) - 1  # minus the true answer itself
            ranks[start : start + batch.shape[0]] = 1.0 + better + 0.5 * tied
    return (ranks.to(torch.float32), top1) if top1 is not None else ranks.to(torch.float32)


def rank_metrics(ranks: FloatTensor | np.ndarray | Sequence[float]) -> dict[str, float]:
    """MR, MRR and Hits@1/3/10 of (filtered) ranks [n]; keys ``n``, ``mr``, ``mrr``, ``hits@k``."""
    ranks = np.asarray(torch.as_tensor(ranks).detach().cpu(), dtype=np.float64).reshape(-1)
    if ranks.size == 0:
        raise MeasureError(RANKS_EMPTY)
    metrics = {"n": float(ranks.size), "mr": float(ranks.mean()), "mrr": float((1.0 / ranks).mean())}
    for k in (1, 3, 10):
        metrics[f"hits@{k}"] = float((ranks <= k).mean())
    return metrics


def _test_queries(model: StoredModel, occupation_only: bool) -> LongTensor | None:
    test = model.test_triples
    if test is None or not len(test):
        return None
    if occupation_only:
        test = test[test[:, 1] == model.relation_id(model.schema.occupation_relation)]
    return test


def link_prediction_sides(model: StoredModel, *, occupation_only: bool = False,
                          batch_size: int = 256) -> dict[str, dict[str, float]]:
    """Filtered MRR, Hits@1/3/10 of the test split on each side: {"head": ..., "tail": ..., "both": ...}.

    ``both`` is :func:`rank_metrics` of the head and tail ranks pooled (each test triple counted twice, as
    PyKEEN's ``both``); {} when the model has no test split (or no occupation query, if asked). Each side also has
    the floor it is read against (:mod:`kgbias_core.evaluation.baseline`): ``baseline_mrr``, ``baseline_hits@1`` and
    ``baseline_hits@10`` of the popularity count on the same queries, and ``same_top1``, the share of queries whose
    top-1 answer is their relation's most frequent top-1 (1: the model does not read the query's entity).
    """
    test = _test_queries(model, occupation_only)
    if test is None or not len(test):
        return {}
    scorer, known = pykeen_model(model), known_triples(model)
    count = PopularityScorer(model.triples, n_entities=model.n_entities, n_relations=model.n_relations,
                             device=model.triples.device)
    ranks, floor, same = {}, {}, {}
    for side in ("head", "tail"):
        ranks[side], top1 = filtered_ranks(scorer, triples=test, known=known, batch_size=batch_size, side=side,
                                           with_top1=True)
        floor[side] = filtered_ranks(count, triples=test, known=known, batch_size=batch_size, side=side).cpu()
        same[side] = modal_share(top1, test[:, 1])
        ranks[side] = ranks[side].cpu()
    floor["both"], ranks["both"] = torch.cat([floor["head"], floor["tail"]]), torch.cat([ranks["head"], ranks["tail"]])
    same["both"] = (same["head"] + same["tail"]) / 2  # the two sides hold the same number of queries
    sides = {}
    for side in SIDES:
        baseline = rank_metrics(floor[side])
        sides[side] = {**rank_metrics(ranks[side]), **{f"baseline_{key}": baseline[key] for key in BASELINE_KEYS},
                       "same_top1": same[side]}
    return sides


def link_prediction(model: StoredModel, *, occupation_only: bool = False, batch_size: int = 256,
                    side: str = "tail") -> dict[str, float]:
    """Filtered MRR, Hits@1/3/10 on the model's test split (occupation queries only if asked), one side.

    ``side``: "tail" (the default, as before heads were ranked), "head" or "both" (pooled, PyKEEN's "both").
    -> :func:`rank_metrics` of the test triples' filtered ranks; {} when the model has no test split.
    """
    if side == "both":
        return link_prediction_sides(model, occupation_only=occupation_only, batch_size=batch_size).get("both", {})
    test = _test_queries(model, occupation_only)
    if test is None or not len(test):
        return {}
    ranks = filtered_ranks(pykeen_model(model), triples=test, known=known_triples(model), batch_size=batch_size,
                           side=side)
    return rank_metrics(ranks)


def cached_link_prediction(model_dir: Path | str, *, device: torch.device | str = "cpu") -> pd.DataFrame:
    """Filtered MRR and Hits@1/3/10 on the test split: all queries and occupation queries, each on the head
    side, the tail side and both pooled.

    Computed once per model and cached beside it with its config and data hash
    (:func:`kgbias_core.embeddings.results.save_result`); -> one row per query set and side:
    ``queries, side, n, mr, mrr, hits@1, hits@3, hits@10``. :func:`one_side` picks one side's rows. The
    ranking runs on ``device`` (the model is loaded there).
    """
    cached = load_link_prediction(model_dir)
    if cached is not None:
        return cached
    model = load_model(model_dir, device=device)
    rows = []
    for queries, occupation_only in (("all", False), ("occupation", True)):
        sides = link_prediction_sides(model, occupation_only=occupation_only)
        rows += [{"queries": queries, "side": side, **sides.get(side, {})} for side in SIDES]
    frame = pd.DataFrame(rows)
    save_result(model_dir, LINK_PREDICTION_RESULT, frame, params=LINK_PREDICTION_PARAMS)
    return frame


def one_side(frame: pd.DataFrame, side: str) -> pd.DataFrame:
    """The rows of one side of a :func:`cached_link_prediction` table (one row per query set), without the
    ``side`` column: the shape of the table before heads were ranked."""
    if "side" not in frame.columns:
        return frame
    return frame[frame["side"] == side].drop(columns="side").reset_index(drop=True)


def load_link_prediction(model_dir: Path | str) -> pd.DataFrame | None:
    """The cached :func:`cached_link_prediction` table, or None if not computed yet."""
    return load_result(model_dir, LINK_PREDICTION_RESULT, params=LINK_PREDICTION_PARAMS)


def link_prediction_table(frames: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Several models' :func:`cached_link_prediction` tables stacked, model name first (``side`` after the
    query set where the tables have one)."""
    frame = pd.concat([f.assign(model=name) for name, f in frames.items()], ignore_index=True)
    keys = ["model", "queries", *(["side"] if "side" in frame.columns else [])]
    extra = [c for c in FLOOR_COLUMNS if c in frame.columns]
    return frame[[*keys, "n", "mrr", "hits@1", "hits@3", "hits@10", "mr", *extra]]


def before_after(base: pd.DataFrame, run: pd.DataFrame) -> pd.DataFrame:
    """MRR and Hits@10 of a base model and a what-if of it, per query set (and side, where both have one)."""
    keys = ["queries", *(["side"] if "side" in base.columns and "side" in run.columns else [])]
    return base[[*keys, "n", "mrr", "hits@10"]].merge(run[[*keys, "mrr", "hits@10"]], on=keys,
                                                      suffixes=(" before", " after"))


def headline(frame: pd.DataFrame | None) -> dict[str, float] | None:
    """The one line a model's link prediction is quoted by: filtered MRR and Hits@1/3/10 of all test
    queries, both sides pooled (tail side for a table cached before heads were ranked); None if absent."""
    if frame is None:
        return None
    rows = one_side(frame, "both")
    rows = rows[rows["queries"] == "all"]
    if rows.empty or pd.isna(rows.iloc[0].get("mrr")):
        return None
    row = rows.iloc[0]
    line = {k: float(row[k]) for k in ("n", "mrr", "hits@1", "hits@3", "hits@10")}
    if all(k in row.index and pd.notna(row[k]) for k in FLOOR_COLUMNS):  # absent from a table cached before it
        line.update({k: float(row[k]) for k in FLOOR_COLUMNS})
    return line
