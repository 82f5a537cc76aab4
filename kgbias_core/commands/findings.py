"""findings: Du et al.'s claims next to what a model shows, as JSON."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from kgbias_core.commands.common import (
    PrintedProgress,
    csv_out,
    integer,
    negative_seed_flag,
    write_text,
)


def _findings(args: argparse.Namespace) -> None:
    import json

    from kgbias_core.data.census import census_file
    from kgbias_core.data.datasets import resolve_data_dir
    from kgbias_core.embeddings.store import model_fingerprint, read_config
    from kgbias_core.influence.negatives import DEFAULT_NEGATIVE_SEED, negatives_label
    from kgbias_core.tasks import findings_task

    if args.retrain:  # the retrains save what-ifs beside the model: refused before the first
        from kgbias_core.embeddings.store import check_writable

        check_writable(Path(args.model).parent, what="findings --retrain (saves what-ifs there)")
    census = census_file(resolve_data_dir(args.data_dir))
    frame = findings_task(Path(args.model), census=census, year=args.year, retrain=args.retrain or (),
                          k=args.k, negative_seed=args.negative_seed, device=args.device).run(PrintedProgress())
    if not census.is_file():  # after the run: a refused model is one line, not a census note and the error
        print(f"no census file at {census}: claim 6 is not measured", file=sys.stderr)
    config = read_config(args.model)
    document = {"model": config.get("name"), "dataset": config.get("dataset"), **model_fingerprint(args.model),
                "findings": json.loads(frame.to_json(orient="records"))}
    write_text(json.dumps(document, indent=2), args.out)
    family = config.get("family") if "seed_min" in frame.columns else None
    if family:  # a member of a seed family: each finding read off the model also over its siblings
        print(f"{config.get('name')} is one of {len(family['members'])} seeds of family {family['name']}: "
              "a direction is stated only where the interval and the seed band both exclude no effect")
    for row in frame.itertuples():
        interval = f" [{row.low:+.3f}, {row.high:+.3f}]" if row.low == row.low else ""
        p_value = f" p {row.p_value:.2g}" if row.p_value == row.p_value else ""
        seed_min, seed_max = getattr(row, "seed_min", math.nan), getattr(row, "seed_max", math.nan)
        seeds = f" seeds [{seed_min:+.3f}, {seed_max:+.3f}]" if math.isfinite(seed_min) else ""
        print(f"{row.claim:3s} {row.key:30s} paper {row.paper:>16s}  {row.value:+.3f}{interval}{p_value}{seeds}  "
              f"{row.verdict}  ({row.scope})")
    if config.get("negatives") == "none":  # imported: claim 3's influence re-drew the negatives
        print(f"influence: {negatives_label(seed=args.negative_seed or DEFAULT_NEGATIVE_SEED)}")
    print(f"wrote {len(frame)} findings to {args.out}")


def register(commands: argparse._SubParsersAction) -> None:
    """Add findings to the command line."""
    findings = commands.add_parser("findings", help="Du et al.'s claims next to what this model shows (JSON)")
    findings.add_argument("--model", required=True)
    negative_seed_flag(findings)
    findings.add_argument("--retrain", nargs="+", metavar="OCCUPATION",
                          help="first run the retrains behind claims 4-5 for these occupations, where missing "
                               "(noise band, IF-/Random-REMOVE of k, Add c=0.5)")
    findings.add_argument("--k", type=integer(1), help="triples removed per set for --retrain "
                                                        "(default: as many as predicted to bring B_gr to 0)")
    findings.add_argument("--year", type=integer(1000, 9999), help="census year (default: the latest in the file)")
    findings.add_argument("--data-dir", help="data directory with census/ (default: $KGBIAS_DATA_DIR or ./data)")
    findings.add_argument("--out", required=True, type=csv_out, help="JSON file of the findings")
    findings.set_defaults(handler=_findings)
