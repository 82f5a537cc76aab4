"""Time and peak memory of every stage on synthetic graphs of 1M, 5M and 20M triples (issue 10).

    python3 bench/bench_scale.py --sizes 1 5 20 --threads 2 --work /tmp/kgbias-scale

For each size (millions of triples; persons = triples / 10) the graph is generated once into
``WORK/graph-<M>m`` (reused when present) and each group of stages runs in a fresh subprocess, so
that the peak RSS of one group (``ru_maxrss``) is not inflated by the previous one:

- generate: ``synthetic`` (skipped, and shown as reused, when the folder exists);
- read graph: :func:`~kgbias_core.data.datasets.load_dataset` on the folder (columnar path);
- import random: ``import --format random`` (reads the graph again, draws and saves the model);
- analysis: model load; negatives (re-drawn once from seed 0, as for any imported model); measures for
  every occupation (groups, B_gr, B_wo, B_in and B'_in with their vanilla/weighted aggregates: no
  bootstrap, no Fisher); the
  influence context; one occupation (median and max over several occupations of the middle sizes,
  and the largest occupation separately).

Peak RSS is the subprocess's high-water mark when the stage ends (it includes the stages before it
in the same subprocess). The script prints ``uptime`` and ``free -g`` first: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path


def _peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # Linux: KiB


def _stage(rows: list[dict], name: str, start: float, **extra: object) -> None:
    rows.append({"stage": name, "seconds": round(time.perf_counter() - start, 2), "peak_gib": round(_peak_gib(), 2),
                 **extra})


def run_group(group: str, size: float, work: Path, threads: int) -> list[dict]:
    """One group of stages, in this (fresh) process; returns its rows."""
    import torch

    torch.set_num_threads(threads)
    graph_dir, model_dir = work / f"graph-{size:g}m", work / f"model-{size:g}m"
    rows: list[dict] = []
    if group == "generate":
        from kgbias_core.data.synthetic_scale import ScaleConfig, generate_scale_graph

        start = time.perf_counter()
        n_triples = int(size * 1_000_000)
        generate_scale_graph(ScaleConfig(n_persons=n_triples // 10, n_triples=n_triples), graph_dir)
        _stage(rows, "generate", start)
    elif group == "read":
        from kgbias_core.data.datasets import load_dataset

        start = time.perf_counter()
        graph = load_dataset(str(graph_dir))
        _stage(rows, "read graph", start, triples=graph.training.num_triples, entities=graph.training.num_entities)
    elif group == "import":
        from kgbias_core.embeddings.config import RANDOM_FORMAT
        from kgbias_core.jobs import Progress
        from kgbias_core.tasks import import_task

        start = time.perf_counter()
        import_task(RANDOM_FORMAT, path=None, graph=str(graph_dir), out=model_dir, overwrite=True).run(Progress())
        _stage(rows, "import random (reads the graph)", start)
    elif group == "analysis":
        rows = _analysis(model_dir)
    return rows


def _analysis(model_dir: Path) -> list[dict]:

    import torch

    from kgbias_core.analysis import ModelAnalysis
    from kgbias_core.embeddings.store import load_model
    from kgbias_core.influence.closed_form import influence_context, triple_influence
    from kgbias_core.influence.negatives import influence_negatives
    from kgbias_core.measures.group_bias import projection_bias
    from kgbias_core.measures.individual_bias import aggregate_individual

    rows: list[dict] = []
    start = time.perf_counter()
    model = load_model(model_dir)
    _stage(rows, "model load", start)
    start = time.perf_counter()
    # An imported (random) model has no frozen negatives: influence re-draws one per triple (seed 0).
    negatives = influence_negatives(model, seed=0)
    _stage(rows, "negatives (re-drawn, one per triple)", start)
    analysis = ModelAnalysis(model)
    start = time.perf_counter()
    groups = analysis.groups
    analysis.group_bias()
    projection_bias(entity_embeddings=model.entity_embeddings, groups=groups)
    b_in, b_fisher = analysis.pair_biases
    aggregate_individual(b_in, groups)
    aggregate_individual(b_fisher, groups)
    _stage(rows, "B_gr, B_wo, B_in, B'_in: every occupation", start, occupations=groups.n_occupations,
           pairs=int(groups.pair_person.shape[0]))
    start = time.perf_counter()
    context = influence_context(model, groups=groups, negatives=negatives.negatives)
    _stage(rows, "influence context", start, active=int(context.active.shape[0]))
    sizes = groups.n_male + groups.n_female
    both = ((groups.n_male > 0) & (groups.n_female > 0)).nonzero().squeeze(-1)
    ranked = both[torch.argsort(sizes[both], descending=True)]
    middle = ranked[len(ranked) // 4 : len(ranked) // 4 + 7].tolist()  # 7 occupations of middle size
    times = []
    for index in middle:
        start = time.perf_counter()
        triple_influence(context, index)
        times.append(time.perf_counter() - start)
    times.sort()
    rows.append({"stage": "one occupation (median of 7 mid-sized)", "seconds": round(times[len(times) // 2], 3),
                 "peak_gib": round(_peak_gib(), 2), "max_s": round(times[-1], 3),
                 "persons": [int(sizes[i]) for i in middle]})
    start = time.perf_counter()
    triple_influence(context, int(ranked[0]))
    _stage(rows, "one occupation (the largest)", start, persons=int(sizes[ranked[0]]))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1, 5, 20], help="millions of triples")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (and OMP_NUM_THREADS)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/kgbias-scale"), help="graphs and models go here")
    parser.add_argument("--group", help=argparse.SUPPRESS)  # internal: run one group in this process
    parser.add_argument("--size", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.group:
        print(json.dumps(run_group(args.group, args.size, args.work, args.threads)))
        return
    args.work.mkdir(parents=True, exist_ok=True)
    for command in (["uptime"], ["free", "-g"], ["nproc"]):
        print(subprocess.run(command, capture_output=True, text=True).stdout.strip())
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}  # the installed package (pip install -e .)
    print(f"torch threads: {args.threads}")
    print(f"{'triples':>8} | {'stage':<45} | {'seconds':>8} | {'peak RSS GiB':>12} | notes")
    for size in args.sizes:
        groups = ["read", "import", "analysis"]
        if not (args.work / f"graph-{size:g}m" / "train.txt").is_file():
            groups.insert(0, "generate")
        else:
            print(f"{size:>7g}M | {'generate (reused folder)':<45} | {'':>8} | {'':>12} |")
        for group in groups:
            result = subprocess.run(
                [sys.executable, __file__, "--group", group, "--size", str(size), "--work", str(args.work),
                 "--threads", str(args.threads)], env=env, capture_output=True, text=True)
            if result.returncode != 0:
                print(result.stderr[-3000:])
                raise SystemExit(f"{group} failed at {size:g}M")
            for row in json.loads(result.stdout.strip().splitlines()[-1]):
                notes = ", ".join(f"{k} {v}" for k, v in row.items() if k not in ("stage", "seconds", "peak_gib"))
                print(f"{size:>7g}M | {row['stage']:<45} | {row['seconds']:>8} | {row['peak_gib']:>12} | {notes}",
                      flush=True)
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
