"""measures, individuals, influence, fisher, intersect: the tables of one model, as CSV."""

from __future__ import annotations

import argparse
from pathlib import Path

from kgbias_core.commands.common import (
    csv_out,
    integer,
    load_analysis,
    negative_seed_flag,
    print_negatives,
    write_csv,
)


def _measures(args: argparse.Namespace) -> None:
    from kgbias_core.commands.link_prediction import NOT_CACHED, print_link_line
    from kgbias_core.evaluation.link_prediction import load_link_prediction
    from kgbias_core.families import family_seed_band
    from kgbias_core.tables import MEASURE_COLUMNS, measures_table

    frame = measures_table(load_analysis(args.model, device=args.device))
    frame = frame[[*MEASURE_COLUMNS, "n_other_gender", "n_unknown_gender", "note"]]
    # A member of a seed family: its seed band after the documented columns (measures of every member).
    band = family_seed_band(args.model, measures_of=lambda path: frame if Path(path) == Path(args.model) else
                            measures_table(load_analysis(str(path), device=args.device)))
    write_csv(frame if band is None else frame.merge(band, on="occupation", how="left"), args.out)
    # How well the model predicts links, beside its measures (issue 24), where it is cached: read, never computed.
    links = load_link_prediction(args.model)
    if links is None:
        print(NOT_CACHED.format(model=args.model))
    else:
        print_link_line(links)


def _individuals(args: argparse.Namespace) -> None:
    from kgbias_core.tables import persons_table

    write_csv(persons_table(load_analysis(args.model, device=args.device), args.occupation), args.out)


def _influence(args: argparse.Namespace) -> None:
    from kgbias_core.tables import influence_table

    analysis = load_analysis(args.model, args.negative_seed, device=args.device)
    frame = influence_table(analysis, args.occupation, top=args.top)
    write_csv(frame[["head", "relation", "tail", "head_name", "tail_name", "person", "person_name", "person_gender",
                  "person_degree", "influence", "negatives"]], args.out)
    print_negatives(analysis, args.occupation, negative_seed=args.negative_seed)


def _fisher(args: argparse.Namespace) -> None:
    from kgbias_core.tables import fisher_table

    frame = fisher_table(
        load_analysis(args.model, device=args.device), relation=args.relation, value_a=args.a, value_b=args.b,
        min_count=args.min_count,
    )
    write_csv(frame, args.out)


def _intersect(args: argparse.Namespace) -> None:
    from kgbias_core.subpopulations import intersection_table
    from kgbias_core.tables import MIN_GROUP_SIZE

    min_count = MIN_GROUP_SIZE if args.min_count is None else args.min_count
    found = intersection_table(load_analysis(args.model, device=args.device), args.occupation, args.attribute,
                               value_a=args.value_a, value_b=args.value_b, min_count=min_count)
    write_csv(found.table, args.out)
    test = found.comparison
    if test.note:
        print(f"{found.name}: no comparison of B_gr between {found.attribute} values: {test.note}")
    else:
        print(f"{found.name}: B_gr among {test.name_a} minus among {test.name_b} {test.difference:+.4f}, "
              f"permutation p {test.p_value:.3g} ({test.n_permutations} permutations within gender)")


def register(commands: argparse._SubParsersAction) -> None:
    """Add measures, individuals, influence, fisher, intersect to the command line."""
    measures = commands.add_parser("measures", help="every measure per occupation")
    measures.add_argument("--model", required=True)
    measures.add_argument("--out", required=True, type=csv_out)
    measures.set_defaults(handler=_measures)

    individuals = commands.add_parser("individuals", help="B_in and B'_in per person of an occupation")
    individuals.add_argument("--model", required=True)
    individuals.add_argument("--occupation", required=True, help="occupation label or readable name")
    individuals.add_argument("--out", required=True, type=csv_out)
    individuals.set_defaults(handler=_individuals)

    influence = commands.add_parser("influence", help="most influential training triples on B_gr")
    influence.add_argument("--model", required=True)
    influence.add_argument("--occupation", required=True, help="occupation label or readable name")
    influence.add_argument("--top", type=integer(1), default=20)
    influence.add_argument("--out", required=True, type=csv_out)
    negative_seed_flag(influence)
    influence.set_defaults(handler=_influence)

    fisher = commands.add_parser("fisher", help="Fisher et al.'s b_p per profession for an attribute")
    fisher.add_argument("--model", required=True)
    fisher.add_argument("--relation", required=True, help="attribute relation label or name (gender, ...)")
    fisher.add_argument("--a", required=True, help="value a (entity label)")
    fisher.add_argument("--b", help="value b (entity label); omitted: a vs the rest")
    fisher.add_argument("--min-count", type=integer(0), default=0)
    fisher.add_argument("--out", required=True, type=csv_out)
    fisher.set_defaults(handler=_fisher)

    intersect = commands.add_parser("intersect", help="B_gr, B_in and b_p of an occupation within the subpopulations "
                                                      "of an attribute (nationality, ...), with a permutation test")
    intersect.add_argument("--model", required=True)
    intersect.add_argument("--occupation", required=True, help="occupation label or readable name")
    intersect.add_argument("--attribute", required=True, help="the schema's attribute name (nationality, ...)")
    intersect.add_argument("--value-a", help="value compared (entity label); with --value-b. Default: the two "
                                             "largest subpopulations with enough persons")
    intersect.add_argument("--value-b", help="the other value compared (entity label)")
    intersect.add_argument("--min-count", type=integer(1),
                           help="men and women a subpopulation needs for figures (default 5 of each)")
    intersect.add_argument("--out", required=True, type=csv_out)
    intersect.set_defaults(handler=_intersect)
