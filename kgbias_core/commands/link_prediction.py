"""link-prediction: filtered MRR and Hits@1/3/10 of a model on its test split, head, tail and both sides."""

from __future__ import annotations

import argparse

from kgbias_core.commands.common import csv_out, write_csv


def _link_prediction(args: argparse.Namespace) -> None:
    from kgbias_core.embeddings.store import load_model
    from kgbias_core.evaluation.link_prediction import cached_link_prediction, headline

    load_model(args.model)  # a missing or broken model: its one-line error before any work
    frame = cached_link_prediction(args.model, device=args.device)
    write_csv(frame, args.out)
    line = headline(frame)
    if line is not None:
        print("filtered, both sides, test split: MRR {mrr:.3f}, Hits@1 {hits@1:.3f}, Hits@3 {hits@3:.3f}, "
              "Hits@10 {hits@10:.3f} ({n:.0f} ranks)".format(**line))


def register(commands: argparse._SubParsersAction) -> None:
    """Add link-prediction to the command line."""
    links = commands.add_parser(
        "link-prediction", help="filtered MRR and Hits@1/3/10 on the test split, head, tail and both sides "
                                "(realistic ranks; cached beside the model)")
    links.add_argument("--model", required=True)
    links.add_argument("--out", required=True, type=csv_out)
    links.set_defaults(handler=_link_prediction)
