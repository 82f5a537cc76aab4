"""Command line: ``python -m kgbias_core <command> ...`` for batch users and for checking.

Every command writes a CSV (or a model directory); a user error prints one line naming the
problem and exits with status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from kgbias_core.config import MODELS, default_train_config
from kgbias_core.errors import KGBiasError

Handler = Callable[[argparse.Namespace], None]


def _train(args: argparse.Namespace) -> None:
    from kgbias_core.datasets import load_dataset
    from kgbias_core.store import save_model
    from kgbias_core.training import train_model

    graph = load_dataset(args.dataset, data_dir=args.data_dir, schema=args.schema, names=args.names)
    config = default_train_config(graph.name)
    overrides = {
        k: v
        for k, v in {
            "model": args.model, "dim": args.dim, "epochs": args.epochs, "seed": args.seed,
            "batch_size": args.batch_size, "lr": args.lr, "l2": args.l2, "margin": args.margin,
            "damping": args.damping,
        }.items()
        if v is not None
    }
    config = replace(config, **overrides)
    out = Path(args.out)
    start = time.perf_counter()

    def report(epoch: int, n_epochs: int, loss: float) -> None:
        elapsed = time.perf_counter() - start
        left = elapsed / epoch * (n_epochs - epoch)
        print(f"epoch {epoch}/{n_epochs}  loss {loss:.5f}  ~{left:.0f}s left", file=sys.stderr)

    model = train_model(graph, config, name=out.name, on_epoch=report)
    if args.calibrate and config.model == "transe":
        from kgbias_core.validation import calibrate_influence_scale

        print("calibrating the influence scale by masked retraining…", file=sys.stderr)
        model = replace(model, influence_scale=calibrate_influence_scale(model))
        print(f"influence scale actual/predicted = {model.influence_scale:.3f}", file=sys.stderr)
    path = save_model(model, out.parent)
    print(f"saved {path} ({model.info['train_seconds']:.1f}s)")


def _analysis(path: str):
    from kgbias_core.analysis import ModelAnalysis
    from kgbias_core.store import load_model

    return ModelAnalysis(load_model(path))


def _write(frame, out: str) -> None:
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out, index=False)
    print(f"wrote {len(frame)} rows to {out}")


def _measures(args: argparse.Namespace) -> None:
    from kgbias_core.analysis import MEASURE_COLUMNS

    frame = _analysis(args.model).measures
    _write(frame[[*MEASURE_COLUMNS, "note"]], args.out)


def _individuals(args: argparse.Namespace) -> None:
    _write(_analysis(args.model).individuals(args.occupation), args.out)


def _influence(args: argparse.Namespace) -> None:
    frame = _analysis(args.model).influence_table(args.occupation, top=args.top)
    _write(frame[["head", "relation", "tail", "head_name", "tail_name", "influence"]], args.out)


def _fisher(args: argparse.Namespace) -> None:
    frame = _analysis(args.model).fisher_table(
        relation=args.relation, value_a=args.a, value_b=args.b, min_count=args.min_count
    )
    _write(frame, args.out)


def _audit(args: argparse.Namespace) -> None:
    from kgbias_core.compare import audit_table
    from kgbias_core.store import load_model

    models = [load_model(path) for path in args.models]
    table = audit_table(models, k=args.k, kind=args.classifier, min_persons=args.min_persons)
    _write(table, args.out)


def _fairness(args: argparse.Namespace) -> None:
    import pandas as pd

    from kgbias_core.compare import model_fairness
    from kgbias_core.store import load_model

    frames = []
    for path in args.models:
        model = load_model(path)
        report = model_fairness(model, min_count=args.min_count, n_bootstrap=args.bootstrap)
        frame = report.by_class_group.reset_index()
        frame.insert(0, "model", model.name)
        frame["class_name"] = [model.entity_names[c] if c >= 0 else "OTHER" for c in frame["class"]]
        frames.append(frame)
        gaps = ", ".join(f"{k} {report.by_model[k]:.3f}" for k in ("DPG", "PPG", "EOG"))
        print(f"{model.name}: {report.n_facts} facts, {report.n_not_occupation} predictions not an occupation; {gaps}")
    _write(pd.concat(frames, ignore_index=True), args.out)


def _download(args: argparse.Namespace) -> None:
    from kgbias_core.datasets import resolve_data_dir
    from kgbias_core.download import download_fb15k237

    for path in download_fb15k237(resolve_data_dir(args.data_dir)):
        print(f"downloaded {path}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m kgbias_core", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    train = commands.add_parser("train", help="train an embedding and save it as a model directory")
    train.add_argument("--dataset", required=True, help="fb15k237 | synthetic | PATH (TSV or directory)")
    train.add_argument("--data-dir", help="data directory (default: $KGBIAS_DATA_DIR or ./data)")
    train.add_argument("--schema", help="schema TOML/JSON for a user graph")
    train.add_argument("--names", help="id<TAB>name file for a user graph")
    train.add_argument("--model", choices=MODELS)
    for flag, kind in (("--dim", int), ("--epochs", int), ("--seed", int), ("--batch-size", int),
                       ("--lr", float), ("--l2", float), ("--margin", float), ("--damping", float)):
        train.add_argument(flag, type=kind)
    train.add_argument("--calibrate", action="store_true",
                       help="TransE: calibrate the influence scale with 4 masked retrains (METHODS §4)")
    train.add_argument("--out", required=True, help="model directory, e.g. cached_models/fb15k237-transe")
    train.set_defaults(handler=_train)

    measures = commands.add_parser("measures", help="every measure per occupation")
    measures.add_argument("--model", required=True)
    measures.add_argument("--out", required=True)
    measures.set_defaults(handler=_measures)

    individuals = commands.add_parser("individuals", help="B_in and B'_in per person of an occupation")
    individuals.add_argument("--model", required=True)
    individuals.add_argument("--occupation", required=True, help="occupation entity label")
    individuals.add_argument("--out", required=True)
    individuals.set_defaults(handler=_individuals)

    influence = commands.add_parser("influence", help="most influential training triples on B_gr")
    influence.add_argument("--model", required=True)
    influence.add_argument("--occupation", required=True)
    influence.add_argument("--top", type=int, default=20)
    influence.add_argument("--out", required=True)
    influence.set_defaults(handler=_influence)

    fisher = commands.add_parser("fisher", help="Fisher et al.'s b_p per profession for an attribute")
    fisher.add_argument("--model", required=True)
    fisher.add_argument("--relation", required=True, help="attribute relation label or name (gender, ...)")
    fisher.add_argument("--a", required=True, help="value a (entity label)")
    fisher.add_argument("--b", help="value b (entity label); omitted: a vs the rest")
    fisher.add_argument("--min-count", type=int, default=0)
    fisher.add_argument("--out", required=True)
    fisher.set_defaults(handler=_fisher)

    audit = commands.add_parser("audit", help="Keidar et al.'s DPD/PPD/TLB per sensitive relation and model")
    audit.add_argument("--models", nargs="+", required=True, help="model directories")
    audit.add_argument("--k", type=int, default=5, help="most common occupations classified (+ OTHER)")
    audit.add_argument("--classifier", choices=("random_forest", "mlp"), default="random_forest")
    audit.add_argument("--min-persons", type=int, default=10, help="skip tail values with fewer persons")
    audit.add_argument("--out", required=True)
    audit.set_defaults(handler=_audit)

    fairness = commands.add_parser("fairness", help="Schwertmann et al.'s DPG/PPG/EOG of occupation predictions")
    fairness.add_argument("--models", nargs="+", required=True, help="model directories")
    fairness.add_argument("--min-count", type=int, default=100, help="test facts for a class of its own")
    fairness.add_argument("--bootstrap", type=int, default=1000)
    fairness.add_argument("--out", required=True)
    fairness.set_defaults(handler=_fairness)

    download = commands.add_parser("download", help="fetch FB15k-237 and names (needs a network)")
    download.add_argument("--data-dir")
    download.set_defaults(handler=_download)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.handler(args)
    except KGBiasError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0
