"""Every stage of the analysis on each device, one process per device, and the GPU/CPU ratio (issue 27).

    PYTHONPATH=$PWD python3 bench/bench_device.py --graph fb15k237 --model cached_models/fb15k237-transe
    PYTHONPATH=$PWD python3 bench/bench_device.py --graph fb13 --model cached_models/fb13-transe
    PYTHONPATH=$PWD python3 bench/bench_device.py --synthetic 20 --work /tmp/kgbias-device   # 20M triples
    PYTHONPATH=$PWD python3 bench/bench_device.py --synthetic 0.05 --threads 1              # seconds, a smoke run

``--model``: a stored model (FB15k-237, FB13 or any). ``--synthetic M``: a synthetic graph of M million
triples (persons = triples / 10) generated into ``WORK/graph-<M>m`` and given random, untrained vectors
(``import --format random``), both reused when present; its influence re-draws negatives from seed 0.

Each device (``--devices``, default: cpu, and cuda where PyTorch sees one) runs in a fresh subprocess,
so the peak RSS and the GPU's peak allocation are its own. Stages, each timed with a CUDA synchronise:
model load (onto the device), every measure (``measures_table``: B_gr, B_wo, B_in, B'_in with bootstrap
intervals, Fisher's b_p where it fits), the influence context, one occupation's influence (median of 5
mid-sized), one exact solve (conjugate gradients, 20 iterations, exact Hessian-vector products), link
prediction (filtered, occupation queries; ``--lp-all`` for all test queries), Schwertmann's fairness
(bootstrap 100) and, with ``--audit``, Keidar's audit. Torch's threads are pinned (``--threads``).
Prints one table per device and, with both, the GPU/CPU ratio of each stage; ``--json`` writes the rows.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # Linux: KiB


def run_device(model_dir: Path, device_name: str, threads: int, *, audit: bool, lp_all: bool) -> list[dict]:
    """Every stage on ``device_name``, in this (fresh) process."""
    import torch

    torch.set_num_threads(threads)
    from kgbias_core.analysis import ModelAnalysis
    from kgbias_core.device import describe_device, resolve_device
    from kgbias_core.embeddings.store import load_model
    from kgbias_core.evaluation.link_prediction import link_prediction
    from kgbias_core.influence.closed_form import triple_influence
    from kgbias_core.influence.iterative import conjugate_gradient_solve, group_bias_rhs
    from kgbias_core.measures.prediction_fairness import model_fairness
    from kgbias_core.tables import measures_table

    device = resolve_device(device_name)
    rows: list[dict] = []

    def timed(stage: str, work):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            torch.cuda.reset_peak_memory_stats(device)
        start = time.perf_counter()
        result = work()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        row = {"device": describe_device(device), "stage": stage, "seconds": round(time.perf_counter() - start, 3),
               "peak_rss_gib": round(_peak_rss_gib(), 2)}
        if device.type == "cuda":
            row["peak_gpu_gib"] = round(torch.cuda.max_memory_allocated(device) / 1024**3, 2)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
        return result

    model = timed("model load", lambda: load_model(model_dir, device=device))
    analysis = ModelAnalysis(model)
    timed("every measure (measures_table)", lambda: measures_table(analysis))
    timed("influence context", lambda: analysis.context)
    groups = analysis.groups
    sizes = groups.n_male + groups.n_female
    both = ((groups.n_male > 0) & (groups.n_female > 0)).nonzero().squeeze(-1)
    ranked = both[torch.argsort(sizes[both], descending=True)].tolist()
    middle = ranked[len(ranked) // 4: len(ranked) // 4 + 5] or ranked[:1]
    times = []
    for index in middle:
        start = len(rows)
        timed("one occupation", lambda i=index: triple_influence(analysis.context, i))
        times.append(rows.pop(start)["seconds"])
    times.sort()
    rows.append({**rows[-1], "stage": f"one occupation (median of {len(times)})", "seconds": times[len(times) // 2]})
    index = middle[0]
    # An imported (random) model has no frozen negatives: the solve uses the re-drawn ones influence uses.
    solved = model if model.negatives is not None else replace(model, negatives=analysis.negatives.negatives)
    timed("one exact solve (CG, 20 iterations)", lambda: conjugate_gradient_solve(
        solved, group_bias_rhs(analysis.context, index), damping=analysis.damping, iterations=20, tolerance=0.0))
    timed("link prediction" + (" (all test queries)" if lp_all else " (occupation queries)"),
          lambda: link_prediction(model, occupation_only=not lp_all))
    timed("fairness (Schwertmann, bootstrap 100)", lambda: model_fairness(model, n_bootstrap=100))
    if audit:
        from kgbias_core.measures.relation_audit import model_audit

        timed("audit (Keidar)", lambda: model_audit(model))
    return rows


def _synthetic_model(size: float, work: Path) -> Path:
    """A random model over a synthetic graph of ``size`` million triples, generated once under ``work``."""
    from kgbias_core.data.synthetic_scale import ScaleConfig, generate_scale_graph
    from kgbias_core.embeddings.config import RANDOM_FORMAT
    from kgbias_core.jobs import Progress
    from kgbias_core.tasks import import_task

    graph_dir, model_dir = work / f"graph-{size:g}m", work / f"model-{size:g}m"
    if not (graph_dir / "train.txt").is_file():
        n_triples = int(size * 1_000_000)
        generate_scale_graph(ScaleConfig(n_persons=max(100, n_triples // 10), n_triples=n_triples), graph_dir)
    if not (model_dir / "config.json").is_file():
        import_task(RANDOM_FORMAT, path=None, graph=str(graph_dir), out=model_dir, overwrite=True, dim=64,
                    seed=0).run(Progress())
    return model_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--model", help="a stored model directory (FB15k-237, FB13, ...)")
    which.add_argument("--synthetic", type=float, metavar="M", help="a synthetic graph of M million triples")
    parser.add_argument("--graph", default="", help="a label for the output (fb15k237, fb13, ...)")
    parser.add_argument("--work", default="/tmp/kgbias-device", help="where --synthetic writes its graph and model")
    parser.add_argument("--devices", nargs="+", help="default: cpu, and cuda where PyTorch sees one")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (pinned, every device)")
    parser.add_argument("--audit", action="store_true", help="also Keidar's audit (sklearn classifier: slow)")
    parser.add_argument("--lp-all", action="store_true", help="link prediction over all test queries")
    parser.add_argument("--json", help="write every row to this file")
    parser.add_argument("--child", metavar="DEVICE", help=argparse.SUPPRESS)  # one device's subprocess
    args = parser.parse_args()
    if args.child:
        rows = run_device(Path(args.model), args.child, args.threads, audit=args.audit, lp_all=args.lp_all)
        print(json.dumps(rows))
        return

    import torch

    model_dir = Path(args.model) if args.model else _synthetic_model(args.synthetic, Path(args.work))
    devices = args.devices or (["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"])
    label = args.graph or (f"synthetic {args.synthetic:g}M" if args.synthetic else model_dir.name)
    print(f"{label}: {model_dir}; torch {torch.__version__}, {args.threads} thread(s); load: "
          f"{os.getloadavg()[0]:.2f} (1 min)")
    results: dict[str, list[dict]] = {}
    for device in devices:
        command = [sys.executable, __file__, "--model", str(model_dir), "--child", device,
                   "--threads", str(args.threads)]
        command += ["--audit"] * args.audit + ["--lp-all"] * args.lp_all
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False)
        if done.returncode != 0:
            print(f"{device}: failed\n{done.stderr[-2000:]}")
            continue
        results[device] = json.loads(done.stdout.strip().splitlines()[-1])
    for rows in results.values():
        print(f"\n{rows[0]['device']}")
        for row in rows:
            gpu = f"  gpu peak {row['peak_gpu_gib']:.2f} GiB" if "peak_gpu_gib" in row else ""
            print(f"  {row['stage']:45s} {row['seconds']:9.3f} s  rss peak {row['peak_rss_gib']:.2f} GiB{gpu}")
    if "cpu" in results and len(results) > 1:
        cpu = {row["stage"]: row["seconds"] for row in results["cpu"]}
        for device, rows in results.items():
            if device == "cpu":
                continue
            print(f"\n{rows[0]['device']} / CPU (time ratio; < 1: the GPU is faster)")
            for row in rows:
                if cpu.get(row["stage"]):
                    print(f"  {row['stage']:45s} {row['seconds'] / cpu[row['stage']]:7.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"graph": label, "model": str(model_dir), "threads": args.threads,
                                               "rows": [r for rows in results.values() for r in rows]}, indent=2))


if __name__ == "__main__":
    main()
