"""link-prediction: filtered MRR and Hits@1/3/10 of a model on its test split, head, tail and both sides, beside
the popularity baseline (:mod:`kgbias_core.evaluation.baseline`)."""

from __future__ import annotations

import argparse

from kgbias_core.commands.common import csv_out, write_csv

#: What ``measures`` prints where a model's link prediction is not cached (it never computes it: minutes on FB13).
NOT_CACHED = "link prediction: not computed yet (kgbias link-prediction --model {model} --out FILE)"


def print_link_line(frame) -> None:
    """The headline of a cached link-prediction table (MRR and Hits@k, both sides pooled) and the popularity
    baseline's sentence under it; nothing where the table has no headline."""
    from kgbias_core.evaluation.link_prediction import headline
    from kgbias_core.readings import link_baseline_sentence

    line = headline(frame)
    if line is not None:
        print("link prediction, filtered, both sides, test split: MRR {mrr:.3f}, Hits@1 {hits@1:.3f}, "
              "Hits@3 {hits@3:.3f}, Hits@10 {hits@10:.3f} ({n:.0f} ranks)".format(**line))
        if baseline := link_baseline_sentence(line):
            print(baseline)


def _link_prediction(args: argparse.Namespace) -> None:
    from kgbias_core.embeddings.store import load_model
    from kgbias_core.evaluation.link_prediction import cached_link_prediction

    load_model(args.model)  # a missing or broken model: its one-line error before any work
    frame = cached_link_prediction(args.model, device=args.device)
    write_csv(frame, args.out)
    print_link_line(frame)


def register(commands: argparse._SubParsersAction) -> None:
    """Add link-prediction to the command line."""
    links = commands.add_parser(
        "link-prediction", help="filtered MRR and Hits@1/3/10 on the test split, head, tail and both sides "
                                "(realistic ranks; cached beside the model)")
    links.add_argument("--model", required=True)
    links.add_argument("--out", required=True, type=csv_out)
    links.set_defaults(handler=_link_prediction)
