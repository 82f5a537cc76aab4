"""import: embeddings trained elsewhere (npy, PyKEEN, DGL-KE, PBG) or random ones, as a model directory."""

from __future__ import annotations

import argparse
from pathlib import Path

from kgbias_core.commands.common import (
    MAX_DIM,
    SEED,
    PrintedProgress,
    graph_flags,
    integer,
)
from kgbias_core.embeddings.config import IMPORT_DISTANCES, IMPORT_FORMATS, RANDOM_FORMAT
from kgbias_core.errors import IMPORT_NEEDS_PATH, DataError


def _import(args: argparse.Namespace) -> None:
    from kgbias_core.embeddings.store import read_config
    from kgbias_core.tasks import import_task

    if args.path is None and args.format != RANDOM_FORMAT:
        raise DataError(IMPORT_NEEDS_PATH.format(format=args.format))
    task = import_task(args.format, path=None if args.path is None else Path(args.path), graph=args.graph,
                       out=Path(args.out), data_dir=args.data_dir, schema=args.schema, names=args.names,
                       distance=args.distance, trust_pickle=args.trust_pickle, overwrite=args.force, dim=args.dim,
                       seed=args.seed)
    path = task.run(PrintedProgress())
    if args.format == RANDOM_FORMAT:
        print(f"saved {path} (random, untrained {args.dim}-dimensional TransE vectors: "
              f"for scale tests only; no frozen negatives)")
        return
    kind = read_config(path).get("model", "transe")
    print(f"saved {path} (imported from {args.format} as {kind}; no frozen negatives: "
          + ("influence is approximate (negatives re-drawn), retrains are not available)" if kind == "transe" else
             "Du's B_gr, B_in, influence and retrains need TransE; Fisher, audit and fairness work on it)"))


def _audit_import(args: argparse.Namespace) -> None:
    """The stand-in audit of an imported model (:func:`~kgbias_core.tasks.stand_in_audit_task`): stored beside it, one
    line of what it measured and the scale its removals now take."""
    from kgbias_core.tasks import model_step_ratio, stand_in_audit_seconds, stand_in_audit_task
    from kgbias_core.tasks.stand_in_audit import check_stand_in
    from kgbias_core.whatif.step_ratio import EDITS

    check_stand_in(args.model)
    seconds = stand_in_audit_seconds(args.model)
    if seconds is not None:
        print(f"stand-in audit of {Path(args.model).name}: about {seconds / 60:.1f} min (two trainings of the graph)")
    row = stand_in_audit_task(args.model, device=args.device).run(PrintedProgress()).iloc[0]
    ratio = model_step_ratio(args.model, use=EDITS)
    print(f"stand-in (seed {int(row['seed'])}) as an import, top {int(row['k'])} of {int(row['moving'])} moving "
          f"triples of {row['name']}: step {row['predicted']:+.4f}, retrained {row['retrained']:+.4f}, "
          f"ratio {row['ratio']:.3f}; this import's removals are scaled by "
          + ("1 (no finite ratio)" if ratio is None else f"{ratio.value:.3f}"))


def register(commands: argparse._SubParsersAction) -> None:
    """Add import, audit-import to the command line."""
    imports = commands.add_parser(
        "import", help="import TransE embeddings trained elsewhere (PyKEEN, DGL-KE, plain .npy) as a model directory",
        description="npy: PATH holds entities.npy [E, d], relations.npy [R, d], entities.tsv and relations.tsv "
                    "(one 'id<TAB>label' line per row, no header) and optionally config.json "
                    "{\"distance\": \"l1\" | \"l2\" | \"squared_l2\"}. pykeen: PATH is save_to_directory's folder "
                    "(trained_model.pt state dict, or trained_model.pkl with --trust-pickle; training_triples/). "
                    "dglke: PATH is dglke_train's save folder (config.json, <dataset>_<model>_entity.npy, "
                    "_relation.npy) with entities.tsv and relations.tsv. pbg: PATH is PyTorch-BigGraph's checkpoint "
                    "folder (the config.json PBG writes there, never its Python config; checkpoint_version.txt, "
                    "embeddings_<type>_<part>.v<N>.h5, model.v<N>.h5) with entity_names_<type>_<part>.json there or "
                    "in config.json's entity_path; translation operator with the l2 or squared_l2 comparator only, "
                    "its relation vectors negated (PBG adds them to the tail). Imported models have no frozen "
                    "negatives: influence re-draws one per triple (approximate, --negative-seed); what-ifs, the noise "
                    "band and calibration refuse them.")
    imports.add_argument("--format", required=True, choices=(*IMPORT_FORMATS, RANDOM_FORMAT),
                         help=f"{RANDOM_FORMAT}: no files, random untrained vectors over --graph (a graph too large "
                              "to train here, for scale tests; config.json says untrained)")
    imports.add_argument("--path", help="the embeddings' folder (or PyKEEN state-dict file); not with random")
    imports.add_argument("--dim", type=integer(1, MAX_DIM), default=64, help="random: embedding dimension")
    imports.add_argument("--seed", type=SEED, default=0, help="random: seed of the vectors")
    graph_flags(imports, "--graph", "the triples the embeddings were trained on")
    imports.add_argument("--distance", choices=IMPORT_DISTANCES,
                         help="TransE's distance where the files do not record it (npy without config.json, "
                              "a PyKEEN state dict; PyKEEN's default TransE is l1)")
    imports.add_argument("--trust-pickle", action="store_true",
                         help="read a pickled PyKEEN model (trained_model.pkl): unpickling runs any code it holds")
    imports.add_argument("--out", required=True, help="model directory, e.g. cached_models/fb15k237-pykeen")
    imports.add_argument("--force", action="store_true", help="replace the model already at --out")
    imports.set_defaults(handler=_import)

    audit = commands.add_parser(
        "audit-import", help="audit an imported TransE's what-if step through a stand-in trained here on its graph",
        description="Trains kgbias's default model of the import's graph with its distance (seed 1), predicts it as "
                    "the import is predicted (negatives re-drawn), retrains it once without the top 16% of the audit "
                    "occupation's moving triples, and stores the ratio retrained / step beside the import: its "
                    "removals are then scaled by it (squared L2). Costs two trainings of the graph.")
    audit.add_argument("--model", required=True, help="the imported model's directory")
    audit.set_defaults(handler=_audit_import)
