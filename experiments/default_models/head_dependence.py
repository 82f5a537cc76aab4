"""Does a model's link prediction read the head? Its top-1 answers per relation, beside a popularity baseline
(issue 24: "whether the bias is the graph's or the training's").

A TransE whose person rows are tiny next to its relation and value rows scores (h, r, t) almost as ||r - t||: every
head of relation r gets the same ranking of tails. Three readings show it, per model and side (tails: the
answers of (h, r, ?); heads: of (?, r, t)), over the test triples:

- ``distinct_top1``: how many different entities are some query's top-1 (unfiltered: the model's most plausible
  answer over all entities), and ``modal_top1_share``: the share of queries whose top-1 is the one most often
  top-1 within the query's relation (1: every query of a relation gets the same answer);
- ``modal_true_share``: the same share for the true answers (what a constant answer per relation could hit);
- the model's filtered MRR and Hits@1/10 beside the ``popularity`` baseline's: each relation's answers ranked by
  how often they answer it in the training split (the head ignored), ranked by the same filtered, realistic ranks
  (:mod:`kgbias_core.evaluation.baseline`, which ``kgbias link-prediction`` reports for every model; this study
  adds the per-relation view). A model below it predicts links worse than a count.

    nice python experiments/default_models/head_dependence.py --models M1 M2 ... \
        --out experiments/default_models/results/head_dependence.csv [--per-relation] [--threads 1]

Rows of OUT.csv: one per model (with its negatives, l2 and distance) and one ``popularity`` row per graph, per side,
``both`` pooling the sides' ranks;
``--per-relation`` also writes OUT_relations.csv: the tail side per test relation.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import pandas as pd
import torch

from kgbias_core.commands.common import write_csv
from kgbias_core.embeddings.pykeen_bridge import pykeen_model
from kgbias_core.embeddings.store import StoredModel, load_model
from kgbias_core.evaluation.baseline import PopularityScorer, modal_share
from kgbias_core.evaluation.link_prediction import filtered_ranks, known_triples, rank_metrics
from kgbias_core.types import LongTensor

SIDES = ("head", "tail")


def top1(scorer, test: LongTensor, side: str) -> LongTensor:
    """The unfiltered top-1 answer of each test triple's query on ``side`` [n] (ties: the smaller id), read off the
    ranker's scores (:func:`filtered_ranks` with ``with_top1``; nothing is filtered out of an argmax it returns)."""
    return filtered_ranks(scorer, triples=test, known=test[:0], side=side, with_top1=True)[1].cpu()


def side_rows(name: str, scorer, model: StoredModel, *, per_relation: bool) -> tuple[list[dict], list[dict]]:
    """Per side (and both pooled) the readings of the module docstring; with ``per_relation``, the tail side's per
    test relation too."""
    test, known = model.test_triples.cpu(), known_triples(model)
    # the training a row's figures come from (empty for the baseline, which is no model)
    config = model.config
    settings = ({"negatives": "", "l2": "", "distance": ""} if isinstance(scorer, PopularityScorer) else
                {"negatives": config.negatives_per_triple, "l2": config.l2, "distance": config.distance})
    rows, by_relation, pooled = [], [], []
    for side in SIDES:
        started = time.perf_counter()
        ranks, best = filtered_ranks(scorer, triples=test, known=known, side=side, with_top1=True)
        ranks, best = ranks.cpu(), best.cpu()
        truth = test[:, 2] if side == "tail" else test[:, 0]
        pooled.append(ranks)
        rows.append({"model": name, "dataset": model.dataset, **settings, "side": side, "queries": len(test),
                     "distinct_top1": int(best.unique().numel()),
                     "modal_top1_share": modal_share(best, test[:, 1]),
                     "modal_true_share": modal_share(truth, test[:, 1]),
                     **{key: rank_metrics(ranks)[key] for key in ("mrr", "hits@1", "hits@10")},
                     "seconds": round(time.perf_counter() - started, 1)})
        if per_relation and side == "tail":
            for r in test[:, 1].unique().tolist():
                mine = test[:, 1] == r
                labels = [model.entity_labels[e] for e in torch.bincount(best[mine]).argmax().reshape(1).tolist()]
                true_top = torch.bincount(truth[mine]).argmax().item()
                by_relation.append({"model": name, **settings, "relation": model.relation_labels[r],
                                    "queries": int(mine.sum()),
                                    "distinct_top1": int(best[mine].unique().numel()),
                                    "modal_top1": labels[0], "modal_top1_share": modal_share(best[mine], test[mine, 1]),
                                    "modal_true": model.entity_labels[true_top],
                                    "modal_true_share": modal_share(truth[mine], test[mine, 1]),
                                    **{f"tail_{k}": v for k, v in rank_metrics(ranks[mine]).items()
                                       if k in ("mrr", "hits@1")}})
    both = rank_metrics(torch.cat(pooled))
    rows.append({"model": name, "dataset": model.dataset, **settings, "side": "both", "queries": 2 * len(test),
                 **{key: both[key] for key in ("mrr", "hits@1", "hits@10")}})
    return rows, by_relation


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--per-relation", action="store_true", help="also OUT_relations.csv (tail side)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch threads {args.threads}; load average {os.getloadavg()[0]:.2f} at start", flush=True)
    rows, relations, baselines = [], [], set()
    for model_dir in args.models:
        model = load_model(model_dir, device="cpu")
        scorers = [(model.name, pykeen_model(model))]
        if model.data_hash not in baselines:  # the baseline once per graph
            baselines.add(model.data_hash)
            scorers.append((f"popularity ({model.dataset})", PopularityScorer(
                model.triples.cpu(), n_entities=model.n_entities, n_relations=model.n_relations)))
        for name, scorer in scorers:
            mine, per = side_rows(name, scorer, model, per_relation=args.per_relation)
            rows += mine
            relations += per
            print("\n".join(str(row) for row in mine), flush=True)
    write_csv(pd.DataFrame(rows), str(args.out))
    if args.per_relation:
        write_csv(pd.DataFrame(relations), str(args.out.with_name(f"{args.out.stem}_relations.csv")))


if __name__ == "__main__":
    main()
