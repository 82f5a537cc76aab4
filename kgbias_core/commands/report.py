"""report: one occupation, several, or a what-if run as an offline HTML report."""

from __future__ import annotations

import argparse

from kgbias_core.commands.common import (
    PrintedProgress,
    csv_out,
    load_analysis,
    negative_seed_flag,
    print_negatives,
    write_text,
)


def _report(args: argparse.Namespace) -> None:
    from kgbias_core.embeddings.store import read_config
    from kgbias_core.errors import REPORT_NOT_A_RUN, REPORT_RUN_NOT_OF_MODEL, ModelStoreError
    from kgbias_core.evaluation.link_prediction import load_link_prediction
    from kgbias_core.report import occupation_report, whatif_run
    from kgbias_core.tasks import refit_offer, saved_noise_band
    from kgbias_core.whatif.runs import made_from
    from kgbias_core.whatif.step_ratio import model_edit_calibration

    analysis = load_analysis(args.model, args.negative_seed, device=args.device)
    links = load_link_prediction(args.model)  # quoted where computed; a report never waits for it
    measures = _measures_with_band(args.model, analysis, device=args.device)
    if args.occupations is not None:
        from kgbias_core.report import occupations_report

        write_text(occupations_report(analysis, args.occupations, measures=measures, link_prediction=links),
                   args.out)
        print_negatives(analysis, None, negative_seed=args.negative_seed, exact_too=False)
        print(f"wrote the report of {len(args.occupations)} occupation(s) to {args.out}")
        return
    run, occupation = None, args.occupation
    if args.run is not None:
        run_config = read_config(args.run)
        if not run_config.get("edit"):
            raise ModelStoreError(REPORT_NOT_A_RUN.format(path=args.run))
        if not made_from(run_config, read_config(args.model)):
            raise ModelStoreError(REPORT_RUN_NOT_OF_MODEL.format(run=args.run, model=args.model))
        refit = (refit_offer(args.model, analysis, run_config["edit"]["occupation"])
                 if run_config["edit"].get("kind", "remove") == "remove" else None)
        scale, temperature, prior = model_edit_calibration(args.model, run_config["edit"].get("kind", "remove"))
        run = whatif_run(analysis, load_analysis(args.run, device=args.device), noise=saved_noise_band(args.model),
                         scale=scale, temperature=temperature, prior=prior, refit=refit)
        occupation = run.edit["occupation"]
    comparison = None
    if args.compare:  # the original first, then the other models, all of one graph
        from kgbias_core.tasks import compare_debiasing_task

        label = analysis.groups.labels[analysis.groups.index(occupation)]
        comparison = compare_debiasing_task([args.model, *args.compare], occupations=[label],
                                            device=args.device).run(PrintedProgress())
    write_text(occupation_report(analysis, occupation, measures=measures, run=run, comparison=comparison,
                                 link_prediction=links), args.out)
    print_negatives(analysis, None, negative_seed=args.negative_seed, exact_too=False)
    print(f"wrote the report to {args.out}")


def _measures_with_band(model: str, analysis, *, device):
    """The model's measures; for a member of a seed family with each measure's seed band (the report's "seed
    band" column, and a lean only where it excludes 0 too); None for any other model (the report computes them)."""
    from pathlib import Path

    from kgbias_core.families import family_members, family_seed_band, with_seed_band
    from kgbias_core.tables import measures_table

    if family_members(model) is None:
        return None
    own = measures_table(analysis)
    band = family_seed_band(model, measures_of=lambda path: own if Path(path).name == Path(model).name else
                            measures_table(load_analysis(str(path), device=device)))
    return with_seed_band(own, band)


def register(commands: argparse._SubParsersAction) -> None:
    """Add report to the command line."""
    report = commands.add_parser("report", help="one occupation (or one what-if run) as a self-contained HTML "
                                                "report: measures with intervals, sentences, charts, versions")
    report.add_argument("--model", required=True, help="model directory (the base model of --run)")
    about = report.add_mutually_exclusive_group(required=True)
    about.add_argument("--occupation", help="occupation label or readable name")
    about.add_argument("--occupations", nargs="+", metavar="OCCUPATION",
                       help="several occupations (labels or names): one report, a summary table first, a section each")
    about.add_argument("--run", help="what-if run directory: the report of its edited occupation, with the edit, "
                                     "the predicted and the retrained change, and the noise band")
    report.add_argument("--out", required=True, type=csv_out, help="HTML file to write")
    report.add_argument("--compare", nargs="+", help="what-if runs and debiased models of --model: adds a section "
                                                     "comparing their B_gr, b_p, TLB, DPG/PPG/EOG, MRR and cost")
    negative_seed_flag(report)
    report.set_defaults(handler=_report)
