"""prepare: everything a demo shows, ahead of time, then a readiness check."""

from __future__ import annotations

import argparse
from pathlib import Path

from kgbias_core.commands.common import (
    MAX_EPOCHS,
    PrintedProgress,
    integer,
)
from kgbias_core.embeddings.config import DEFAULT_FAMILY_SEEDS
from kgbias_core.errors import DataError


def _prepare(args: argparse.Namespace) -> None:
    from kgbias_core.data.datasets import has_dataset, resolve_data_dir
    from kgbias_core.embeddings.store import default_store
    from kgbias_core.errors import PREPARE_NO_DATA
    from kgbias_core.tasks import prepare_task, readiness_lines

    data_dir = resolve_data_dir(args.data_dir)
    for dataset in args.dataset:  # every graph checked before anything is trained
        if not has_dataset(dataset, data_dir):
            raise DataError(PREPARE_NO_DATA.format(dataset=dataset, data_dir=data_dir))
    store = Path(args.model_dir) if args.model_dir else default_store()
    overrides = {"epochs": args.epochs} if args.epochs is not None else None
    items = prepare_task(args.dataset, store=store, data_dir=data_dir, calibrate=args.calibrate,
                         overrides=overrides, device=args.device, seeds=args.seeds).run(PrintedProgress())
    print("readiness:")
    for line in readiness_lines(items):
        print("  " + line)
    missing = [i for i in items if not i.ready and not i.optional]
    print("ready for a demo" if not missing else f"{len(missing)} item(s) missing")


def register(commands: argparse._SubParsersAction) -> None:
    """Add prepare to the command line."""
    prepare = commands.add_parser(
        "prepare", help="train the named graphs' default models where missing, each as a seed family, then "
                        "everything a demo shows (noise band, link prediction, audit, findings); resumable; ends "
                        "with a readiness check")
    prepare.add_argument("--dataset", nargs="+", required=True, choices=("synthetic", "fb15k237", "fb13"))
    prepare.add_argument("--data-dir", help="data directory (default: $KGBIAS_DATA_DIR or ./data)")
    prepare.add_argument("--model-dir", help="model store (default: $KGBIAS_MODEL_DIR or ./cached_models)")
    prepare.add_argument("--calibrate", action="store_true",
                         help="also calibrate each model (13 masked retrains: long on the real graphs)")
    prepare.add_argument("--seeds", type=integer(1, 100), default=DEFAULT_FAMILY_SEEDS,
                         help=f"seeds of each default model, trained as one family (default {DEFAULT_FAMILY_SEEDS}): "
                              "the default model keeps its name (seed 0), its siblings are NAME-s1, NAME-s2, ...; "
                              "the findings read their seed band. 1: the default model alone")
    prepare.add_argument("--epochs", type=integer(1, MAX_EPOCHS),
                         help="train with this many epochs instead of the default (a quick try)")
    prepare.set_defaults(handler=_prepare)
