"""The occupation relation's share among the top-influence triples, by definition of "top 1%" and by
the degree of the triple's person (issue 9's third open question).

    python experiments/occupation_share/occupation_share.py \
        --models cached_models/fb15k237-transe cached_models/fb15k237-inverse

Per model, pooled over the occupations with >= 5 men and >= 5 women: the share of occupation-like
triples (the occupation relation or its inverse, :func:`kgbias_core.tables.occupation_like_relations`)

- among the top 1% of *all* training triples by |delta_z| (capped at those that move B_gr): the
  definition behind the first FB13 table, which on FB15k-237 reaches far past the triples that touch
  the occupation's persons;
- among the top 1% of the triples that move B_gr, by sign (Du's "top 1% positive / negative"; the
  findings' definition);
- the latter split by the degree of the triple's person (quartiles over those persons).
"""

from __future__ import annotations

import argparse
import math

import pandas as pd
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embeddings.store import load_model
from kgbias_core.findings import balanced_occupations
from kgbias_core.tables import measures_table, occupation_like_relations, top_influence


def shares(analysis: ModelAnalysis) -> tuple[dict[str, object], pd.DataFrame]:
    model, groups = analysis.model, analysis.groups
    like = torch.tensor(occupation_like_relations(analysis))
    occupations = balanced_occupations(measures_table(analysis, n_resamples=10))["occupation"]
    n_all = hits_all = 0
    rows = []
    for occupation in occupations:
        influence = analysis.influence(occupation)
        n_top = min(max(1, math.ceil(0.01 * influence.shape[0])), int((influence != 0).sum()))
        top = torch.topk(influence.abs(), n_top).indices
        n_all += n_top
        hits_all += int(torch.isin(model.triples[top, 1], like).sum())
        men, women = groups.members(groups.index(occupation))
        members = torch.cat([men, women])
        for sign in ("positive", "negative"):
            chosen = top_influence(influence, fraction=0.01, sign=sign)
            triples = model.triples[chosen]
            in_head, in_tail = torch.isin(triples[:, 0], members), torch.isin(triples[:, 2], members)
            person = torch.where(in_head, triples[:, 0], triples[:, 2])
            for i in range(chosen.shape[0]):
                held = bool(in_head[i] or in_tail[i])  # else only its frozen negative touches the occupation
                rows.append({"occupation": occupation, "sign": sign,
                             "degree": int(groups.degree[person[i]]) if held else -1,
                             "occupation_like": bool(torch.isin(triples[i, 1], like))})
    frame = pd.DataFrame(rows)
    held = frame[frame["degree"] >= 0].copy()
    held["degree_quartile"] = pd.qcut(held["degree"].rank(method="first"), 4, labels=["Q1", "Q2", "Q3", "Q4"])
    summary = {
        "model": model.name, "occupations": len(occupations),
        "top 1% of |G| (capped)": hits_all / n_all,
        "top 1% moving, positive": frame.loc[frame.sign == "positive", "occupation_like"].mean(),
        "top 1% moving, negative": frame.loc[frame.sign == "negative", "occupation_like"].mean(),
    }
    summary["without a person of the occupation"] = float((frame["degree"] < 0).mean())
    by_degree = held.groupby("degree_quartile", observed=True).agg(
        degrees=("degree", lambda d: f"{d.min()}-{d.max()}"), triples=("degree", "size"),
        share=("occupation_like", "mean")).reset_index()
    by_degree.insert(0, "model", model.name)
    return summary, by_degree


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", nargs="+", required=True)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    summaries, tables = [], []
    for path in args.models:
        summary, by_degree = shares(ModelAnalysis(load_model(path)))
        summaries.append(summary)
        tables.append(by_degree)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(pd.DataFrame(summaries).to_string(index=False, float_format=lambda x: f"{x:.1%}"))
        print(pd.concat(tables).to_string(index=False, float_format=lambda x: f"{x:.1%}"))


if __name__ == "__main__":
    main()
