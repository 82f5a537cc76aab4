"""audit, fairness: Keidar's relation audit and Schwertmann's prediction fairness of several models."""

from __future__ import annotations

import argparse
import sys

from kgbias_core.commands.common import (
    MAX_BOOTSTRAP,
    PrintedProgress,
    csv_out,
    integer,
    write_csv,
)


def _audit(args: argparse.Namespace) -> None:
    """Each model's relation audit through its task, as Model comparison runs it: per value, cached beside the
    model (a second call reads it), then averaged per relation (Keidar Eq. 6, ``audit_from_values``)."""
    import pandas as pd

    from kgbias_core.embeddings.store import load_model
    from kgbias_core.measures.relation_audit import audit_from_values, audit_params
    from kgbias_core.tasks import relation_audit_task

    names = [load_model(path).name for path in args.models]  # every model refused before any is audited
    params = audit_params(k=args.k, kind=args.classifier, min_persons=args.min_persons)
    frames = []
    for path, name in zip(args.models, names, strict=True):
        values = relation_audit_task(path, params, device=args.device).run(PrintedProgress())
        table = audit_from_values(values)
        table.insert(0, "model", name)
        table["classifier_accuracy"] = values["accuracy"].iloc[0]
        table["classifier_balanced_accuracy"] = values["balanced_accuracy"].iloc[0]
        frames.append(table)
    write_csv(pd.concat(frames, ignore_index=True), args.out)


def _fairness(args: argparse.Namespace) -> None:
    import pandas as pd

    from kgbias_core.embeddings.store import load_model
    from kgbias_core.errors import FAIRNESS_FEW_CLASSES
    from kgbias_core.measures.prediction_fairness import OTHER, model_fairness

    frames = []
    for path in args.models:
        model = load_model(path, device=args.device)
        report = model_fairness(model, min_count=args.min_count, n_bootstrap=args.bootstrap)
        own = [c for c in report.classes if c != OTHER]
        if len(own) < 2:  # one class or none: every gap compares (almost) nothing
            print(FAIRNESS_FEW_CLASSES.format(model=model.name, min_count=report.min_count, n_classes=len(own)),
                  file=sys.stderr)
        frame = report.by_class_group.reset_index()
        frame.insert(0, "model", model.name)
        frame["class_name"] = [model.entity_names[c] if c >= 0 else "OTHER" for c in frame["class"]]
        frames.append(frame)
        gaps = ", ".join(f"{k} {report.by_model[k]:.3f}" for k in ("DPG", "PPG", "EOG"))
        print(f"{model.name}: {report.n_facts} facts, {report.n_not_occupation} predictions not an occupation; {gaps}")
    write_csv(pd.concat(frames, ignore_index=True), args.out)


def register(commands: argparse._SubParsersAction) -> None:
    """Add audit, fairness to the command line."""
    audit = commands.add_parser("audit", help="Keidar et al.'s DPD/PPD/TLB per sensitive relation and model")
    audit.add_argument("--models", nargs="+", required=True, help="model directories")
    audit.add_argument("--k", type=integer(1), default=5, help="most common occupations classified (+ OTHER)")
    audit.add_argument("--classifier", choices=("random_forest", "mlp"), default="random_forest")
    audit.add_argument("--min-persons", type=integer(1), default=10, help="skip tail values with fewer persons")
    audit.add_argument("--out", required=True, type=csv_out)
    audit.set_defaults(handler=_audit)

    fairness = commands.add_parser("fairness", help="Schwertmann et al.'s DPG/PPG/EOG of occupation predictions")
    fairness.add_argument("--models", nargs="+", required=True, help="model directories")
    fairness.add_argument("--min-count", type=integer(1),
                          help="test facts for a class of its own (default: the paper's 100 on FB15k-237, "
                               "the same share of a smaller test set)")
    fairness.add_argument("--bootstrap", type=integer(0, MAX_BOOTSTRAP), default=1000)
    fairness.add_argument("--out", required=True, type=csv_out)
    fairness.set_defaults(handler=_fairness)
