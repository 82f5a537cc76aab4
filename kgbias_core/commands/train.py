"""train: an embedding trained and saved as a model directory."""

from __future__ import annotations

import argparse
from pathlib import Path

from kgbias_core.commands.common import (
    MAX_BATCH,
    MAX_DAMPING,
    MAX_DIM,
    MAX_EPOCHS,
    MAX_L2,
    MAX_LR,
    MAX_MARGIN,
    MAX_NEGATIVES,
    SEED,
    PrintedProgress,
    graph_flags,
    integer,
    real,
)
from kgbias_core.embeddings.config import (
    CORRUPTIONS,
    DEGREE_EXPONENT,
    DISTANCES,
    MODELS,
    NEGATIVE_ENTITIES,
    PSEUDO_HUBER_DELTA,
)


def _train(args: argparse.Namespace) -> None:
    from kgbias_core.embeddings.store import read_config
    from kgbias_core.tasks import train_task

    overrides = {
        k: v
        for k, v in {
            "model": args.model, "dim": args.dim, "epochs": args.epochs, "seed": args.seed,
            "batch_size": args.batch_size, "lr": args.lr, "l2": args.l2, "margin": args.margin,
            "damping": args.damping, "optimizer": args.optimizer, "negatives_per_triple": args.negatives,
            "distance": args.distance, "corruption": args.corruption,
            "negative_entities": args.negative_entities,
        }.items()
        if v is not None
    }
    if args.seeds is not None:
        from kgbias_core.errors import FAMILY_NO_CALIBRATE, DataError
        from kgbias_core.tasks import train_family_task

        if args.calibrate:
            raise DataError(FAMILY_NO_CALIBRATE)
        family = train_family_task(args.dataset, out=Path(args.out), seeds=args.seeds, data_dir=args.data_dir,
                                   schema=args.schema, names=args.names, overrides=overrides, overwrite=args.force,
                                   inverse_occupation=args.inverse_occupation, device=args.device)
        for path in family.run(PrintedProgress()):
            print(f"saved {path} ({read_config(path)['train_seconds']:.1f}s)")
        return
    task = train_task(args.dataset, out=Path(args.out), data_dir=args.data_dir, schema=args.schema,
                      names=args.names, overrides=overrides, calibrate=args.calibrate, overwrite=args.force,
                      inverse_occupation=args.inverse_occupation, device=args.device)
    path = task.run(PrintedProgress())
    print(f"saved {path} ({read_config(path)['train_seconds']:.1f}s)")


def register(commands: argparse._SubParsersAction) -> None:
    """Add train to the command line."""
    train = commands.add_parser("train", help="train an embedding and save it as a model directory")
    graph_flags(train, "--dataset", "the graph trained on")
    train.add_argument("--model", choices=MODELS)
    for flag, kind, meaning in (
        ("--dim", integer(1, MAX_DIM), "embedding dimension"),
        ("--epochs", integer(1, MAX_EPOCHS), "passes over the training triples"),
        ("--seed", SEED, "initialisation, negatives and batch order"),
        ("--batch-size", integer(1, MAX_BATCH), "triples per optimiser step"),
        ("--lr", real(0, above=True, high=MAX_LR), "Adam learning rate at the start"),
        ("--l2", real(0, above=False, high=MAX_L2), "L2 coefficient (summed-loss units)"),
        ("--margin", real(0, above=True, high=MAX_MARGIN), "margin of the TransE loss"),
        ("--damping", real(0, above=True, high=MAX_DAMPING), "lambda of the influence Hessian (default 2|G|/|E|)"),
        ("--negatives", integer(1, MAX_NEGATIVES),
         "TransE: frozen negatives per training triple, half corrupting the head, half the tail (default: the "
         "graph's default, 8 on FB15k-237 and FB13, else 1)"),
    ):
        train.add_argument(flag, type=kind, help=meaning)
    train.add_argument("--distance", choices=DISTANCES,
                       help="TransE: the distance of h + r - t in the loss (default squared_l2, the one influence and "
                            "the what-ifs are exact for; l1 predicts links better, with influence and removal "
                            "what-ifs approximate and Add refused; pseudo_huber is L1 smoothed within "
                            f"{PSEUDO_HUBER_DELTA} of 0, with a curvature of its own: docs/results/default_models.md)")
    train.add_argument("--corruption", choices=CORRUPTIONS,
                       help="TransE: which side the frozen negatives replace: uniform (half the head, half the tail; "
                            "the default) or bernoulli (the head with probability tph / (tph + hpt) of the relation, "
                            "Wang et al. 2014); influence stays exact either way")
    train.add_argument("--negative-entities", choices=NEGATIVE_ENTITIES,
                       help="TransE: which entity the frozen negatives put in: uniform (any entity; the default) or "
                            f"degree (by training degree^{DEGREE_EXPONENT}, word2vec's draw: the hubs become "
                            "negatives; FB13's squared-L2 model: MRR 0.089 -> 0.221, still under its popularity count, "
                            "docs/results/default_models.md); influence stays exact either way")
    train.add_argument("--optimizer", choices=("adam", "sparse_adam"),
                       help="adam: dense Adam over every row per step (default); sparse_adam: row-wise updates of "
                            "the rows a batch touches, the same objective (for graphs of millions of entities)")
    train.add_argument("--inverse-occupation", action="store_true",
                       help="add (o, r_p (inverse), s) for every occupation fact (Du's FB5M has this inverse)")
    train.add_argument("--calibrate", action="store_true",
                       help="TransE: calibrate the influence scale on 6 occupations, 13 masked retrains (METHODS §4)")
    train.add_argument("--seeds", type=integer(2, 100),
                       help="train this many seeds (--seed, --seed + 1, ...) of the config as one seed family: OUT "
                            "for --seed, OUT-s<seed> for the others, each an ordinary model (one already there as "
                            "this would train it is kept); measures then show each one's seed band")
    train.add_argument("--out", required=True, help="model directory, e.g. cached_models/fb15k237-transe")
    train.add_argument("--force", action="store_true", help="replace the model already at --out")
    train.set_defaults(handler=_train)
