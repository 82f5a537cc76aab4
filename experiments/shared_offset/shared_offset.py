"""Where the shared offset of B_in and B'_in comes from (issue 9's first open question).

    python experiments/shared_offset/shared_offset.py [--models DIR ...] [--synthetic] [--seeds N] [--threads 1]

Every person's B'_in(s, o) = -v . d, v = s + r_p - o, d = m - f (METHODS §5; B_in has the same sign,
scaled by 4/alpha_s). Over the (person, occupation) pairs it splits exactly into three terms:

    mean B'_in = -mean(s . d)  +  mean(o . d)  -  r_p . d
                 (persons)        (occupations: B_wo)  (the occupation relation, one number)

A term that carries the mean and has the same sign for every pair is the shared offset. For each
model the bench prints the share of male-leaning pairs, the three terms, and, on the synthetic
graph (``--synthetic``), the same for training variants: the share of women, the L2 strength and
the inverse of the occupation relation (each trained here, seconds to a minute).
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import pandas as pd
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.data.graph import with_inverse_occupation
from kgbias_core.data.synthetic import SyntheticConfig, generate_people_graph
from kgbias_core.embeddings.config import default_train_config
from kgbias_core.embeddings.store import StoredModel, load_model
from kgbias_core.embeddings.training import train_model


def offset_terms(model: StoredModel) -> dict[str, float]:
    """The decomposition of mean B'_in above, and the shares of male-leaning pairs and occupations."""
    analysis = ModelAnalysis(model)
    groups, e, r = analysis.groups, model.entity_embeddings, model.relation_embeddings
    d = e[groups.male] - e[groups.female]
    persons = -(e[groups.pair_person] @ d)  # [P]
    occupations = e[groups.occupations[groups.pair_occupation]] @ d  # [P]
    relation = -float(r[groups.occupation_relation] @ d)
    b_in, fisher = analysis.pair_biases  # B_in, B'_in: [P] each
    return {
        "model": model.name,
        "pairs": int(fisher.shape[0]),
        "male_leaning_B_in": float((b_in > 0).float().mean()),
        "mean_B'_in": float(fisher.mean()),
        "persons_term": float(persons.mean()),
        "occupations_term": float(occupations.mean()),
        "relation_term": relation,
        "|d|": float(d.norm()),
        "positive_b_p": float((analysis.fisher_bp[torch.isfinite(analysis.fisher_bp)] > 0).float().mean()),
    }


def synthetic_variants() -> list[StoredModel]:
    """The synthetic graph's default model and one variant per suspected cause."""
    config = default_train_config("synthetic")
    variants = {
        "default (30% women)": (SyntheticConfig(), config, False),
        "50% women": (SyntheticConfig(female_share=0.5), config, False),
        "70% women": (SyntheticConfig(female_share=0.7), config, False),
        "l2 5": (SyntheticConfig(), replace(config, l2=5.0), False),
        "l2 80": (SyntheticConfig(), replace(config, l2=80.0), False),
        "inverse occupation": (SyntheticConfig(), config, True),
        "seed 1": (SyntheticConfig(), replace(config, seed=1), False),
    }
    models = []
    for name, (graph_config, train_config, inverse) in variants.items():
        graph = generate_people_graph(graph_config)
        graph = with_inverse_occupation(graph) if inverse else graph
        models.append(train_model(graph, train_config, name=name, device=torch.device("cpu")))
        print(f"trained {name}", flush=True)
    return models


def synthetic_seeds(n: int) -> list[StoredModel]:
    """The synthetic graph's default model under initialisation seeds 0..n-1 (graph and data fixed)."""
    graph, config = generate_people_graph(SyntheticConfig()), default_train_config("synthetic")
    return [train_model(graph, replace(config, seed=seed), name=f"seed {seed}", device=torch.device("cpu"))
            for seed in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", nargs="*", default=[])
    parser.add_argument("--synthetic", action="store_true")
    parser.add_argument("--seeds", type=int, default=0, help="also train the synthetic default under this many seeds")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    models = [load_model(path) for path in args.models] + (synthetic_variants() if args.synthetic else [])
    models += synthetic_seeds(args.seeds)
    frame = pd.DataFrame([offset_terms(model) for model in models])
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(frame.to_string(index=False, float_format=lambda x: f"{x:+.3f}"))


if __name__ == "__main__":
    main()
