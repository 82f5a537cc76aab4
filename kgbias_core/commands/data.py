"""synthetic, download: graphs written or fetched into a folder."""

from __future__ import annotations

import argparse

from kgbias_core.commands.common import (
    SEED,
    integer,
)


def _synthetic(args: argparse.Namespace) -> None:
    from kgbias_core.data.synthetic_scale import ScaleConfig, generate_scale_graph

    out = generate_scale_graph(ScaleConfig(n_persons=args.persons, n_triples=args.triples, seed=args.seed), args.out)
    print(f"wrote {args.triples:,} triples over {args.persons:,} persons to {out} "
          f"(train.txt, valid.txt, test.txt, entity_names.tsv, schema.toml); load it with --dataset {out}")


def _download(args: argparse.Namespace) -> None:
    from kgbias_core.data.datasets import resolve_data_dir
    from kgbias_core.data.download import download_fb13, download_fb15k237

    fetch = download_fb13 if args.dataset == "fb13" else download_fb15k237
    for path in fetch(resolve_data_dir(args.data_dir)):
        print(f"downloaded {path}")


def register(commands: argparse._SubParsersAction) -> None:
    """Add synthetic, download to the command line."""
    synthetic = commands.add_parser(
        "synthetic", help="write a seeded synthetic people graph of any size to a folder (--dataset/--graph DIR)",
        description="Heavy-tailed degrees, skewed occupation sizes and gender shares; numpy-vectorised, "
                    "2M persons / 20M triples in about a minute. Writes train.txt, valid.txt, test.txt, "
                    "entity_names.tsv and schema.toml.")
    synthetic.add_argument("--persons", type=integer(100, 100_000_000), required=True, help="number of persons")
    synthetic.add_argument("--triples", type=integer(1000, 2_000_000_000), required=True,
                           help="number of triples over train + valid + test (about 10 per person is realistic)")
    synthetic.add_argument("--seed", type=SEED, default=0)
    synthetic.add_argument("--out", required=True, help="folder to write (created)")
    synthetic.set_defaults(handler=_synthetic)

    download = commands.add_parser("download", help="fetch FB15k-237 (and the census) or FB13 (needs a network)")
    download.add_argument("--dataset", choices=("fb15k237", "fb13"), default="fb15k237")
    download.add_argument("--data-dir")
    download.set_defaults(handler=_download)
