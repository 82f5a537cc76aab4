"""Tail prediction for the occupation queries of FB15k-237's test split (Schwertmann, METHODS §8).

    python bench/bench_link_prediction.py [--model cached_models/fb15k237-transe]

Prints seconds for top-1 prediction and for filtered ranks over all entities, the fairness gaps, and the
filtered MRR / Hits@k of every test triple on the head side, the tail side and both pooled.
"""

from __future__ import annotations

import argparse
import time

from kgbias_core.embeddings.store import load_model
from kgbias_core.evaluation.link_prediction import link_prediction, link_prediction_sides
from kgbias_core.measures.prediction_fairness import model_fairness, occupation_test_facts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="cached_models/fb15k237-transe")
    args = parser.parse_args()
    model = load_model(args.model)
    facts, _ = occupation_test_facts(model)
    start = time.perf_counter()
    report = model_fairness(model, min_count=100, n_bootstrap=200)
    fairness_seconds = time.perf_counter() - start
    print(f"{len(facts)} occupation test facts of persons with a gender: top-1 prediction + fairness "
          f"report (200 bootstrap replicates) {fairness_seconds:.1f} s; {report.n_not_occupation} predictions "
          f"were not occupations; DPG {report.by_model['DPG']:.3f} PPG {report.by_model['PPG']:.3f} "
          f"EOG {report.by_model['EOG']:.3f}")
    start = time.perf_counter()
    metrics = link_prediction(model, occupation_only=True)
    print(f"filtered ranks of {int(metrics['n'])} occupation test triples: {time.perf_counter() - start:.1f} s; "
          f"MRR {metrics['mrr']:.3f} Hits@1 {metrics['hits@1']:.3f} Hits@10 {metrics['hits@10']:.3f}")
    start = time.perf_counter()
    sides = link_prediction_sides(model)
    print(f"filtered realistic ranks of all {int(sides['tail']['n'])} test triples, heads and tails: "
          f"{time.perf_counter() - start:.1f} s")
    for side, metrics in sides.items():
        print(f"  {side:>4}: MRR {metrics['mrr']:.3f} Hits@1 {metrics['hits@1']:.3f} Hits@3 {metrics['hits@3']:.3f} "
              f"Hits@10 {metrics['hits@10']:.3f}")


if __name__ == "__main__":
    main()
