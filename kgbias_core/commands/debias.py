"""debias, debias-embedding, compare-debiasing: Du's what-ifs, embedding-level debiasing, and their comparison."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kgbias_core.commands.common import (
    MAX_C,
    SEED,
    PrintedProgress,
    integer,
    real,
    write_csv,
)
from kgbias_core.errors import DataError

DEBIAS_NEEDS_OUT = "debias needs --out, the what-if model's directory (or --predict-only: no retrain, nothing saved)"
#: After an imported model's refusal to retrain (its NO_NEGATIVES_IMPORTED line).
PREDICT_ONLY_HINT = "kgbias debias --predict-only gives this what-if's prediction without a retrain"
NOT_RETRAINED = "not retrained (--predict-only): the retrained change is not known"


def _read_indices(path: str) -> list[int]:
    """Training-triple indices from a file: integers separated by white space or commas, # comments."""
    from kgbias_core.data.text import text_lines
    from kgbias_core.errors import LAB_BAD_INDEX_FILE

    file = Path(path)
    indices = []
    for number, line in text_lines(file):
        for field in line.split("#")[0].replace(",", " ").split():
            if not field.isdigit():
                raise DataError(LAB_BAD_INDEX_FILE.format(path=file, line=number, found=field))
            indices.append(int(field))
    return indices


def _debias(args: argparse.Namespace) -> None:
    import torch

    from kgbias_core.analysis import ModelAnalysis
    from kgbias_core.embeddings.store import load_model
    from kgbias_core.errors import MeasureError
    from kgbias_core.readings import membership_sentence, model_unaudited_sentence, old_estimate_sentence
    from kgbias_core.tasks import check_retrains, saved_noise_band, whatif_task
    from kgbias_core.whatif.edits import make_edit, predict_edit
    from kgbias_core.whatif.runs import (
        AFTER_GROUPS_CHOICE,
        bias_change,
        judged_change,
        membership_of_record,
        noise_floor,
    )
    from kgbias_core.whatif.step_ratio import model_edit_calibration, model_step_ratio, use_for

    if not args.predict_only:
        if args.out is None:
            raise DataError(DEBIAS_NEEDS_OUT)
        check_retrains(args.model, what="debias (a full retrain)", retrains=1)  # before the model is even read
    analysis = ModelAnalysis(load_model(args.model, device=args.device))
    refusal = analysis.model.retrain_refusal()
    if refusal is not None and not args.predict_only and analysis.model.info.get("imported_from"):
        raise DataError(f"{refusal}; {PREDICT_ONLY_HINT}")  # before anything is computed or printed
    occupation = args.occupation
    strategy = "add" if args.add else args.strategy if args.remove_k is not None else "basket"
    indices = _read_indices(args.remove_indices) if strategy == "basket" else ()
    edit = make_edit(analysis, occupation, strategy=strategy, k=args.remove_k or 0, c=args.c, cap=args.cap,
                     seed=args.seed, indices=indices)
    occupation = edit.occupation  # the label: a readable name was resolved before anything is retrained
    if strategy == "if" and len(edit.removed) < args.remove_k:
        print(f"only {len(edit.removed)} triples move B_gr towards 0: IF-REMOVE removes those", file=sys.stderr)
    # Predicted before the retrain (seconds), with the noise band as its floor where the model has one.
    spread = noise_floor(saved_noise_band(args.model), analysis, occupation)  # an import's: the prior
    ratio = model_step_ratio(args.model, use=use_for(edit.kind))  # what the model's audit of this kind showed
    try:
        scale, temperature, prior = model_edit_calibration(args.model, edit.kind)
        prediction = predict_edit(analysis, edit, spread=spread, scale=scale, temperature=temperature, prior=prior)
    except MeasureError as exc:  # a distance the Newton step does not differentiate: the retrain still runs
        prediction, unpredicted = None, str(exc)
    old = None
    if edit.kind == "remove":
        old = analysis.predicted_removal(occupation, torch.tensor(edit.removed, dtype=torch.long))
    refined, unrefined = (_refined(analysis, args.model, edit, spread) if args.refined and edit.kind == "remove"
                          else (None, None))
    if args.predict_only:
        _predicted_only(analysis, edit, prediction=prediction, unpredicted=None if prediction else unpredicted,
                        refined=refined, unrefined=unrefined, old=old, audited=ratio is not None)
        return
    task = whatif_task(base=Path(args.model), edit=edit, out=Path(args.out), overwrite=args.force,
                       device=args.device)
    path = task.run(PrintedProgress())
    what_if = ModelAnalysis(load_model(path, device=args.device))
    change = bias_change(analysis, what_if).set_index("occupation").loc[occupation]
    print(f"saved {path} ({edit.strategy}, retrained from the base's seed)")
    print(f"B_gr before {change['group_bias_before']:+.4f}  after {change['group_bias_after']:+.4f}  "
          f"change {change['change']:+.4f}")
    print(f"B_gr after over the original persons {change['group_bias_after_original']:+.4f}  "
          f"change {change['change_original']:+.4f}")
    print(membership_sentence(membership_of_record(analysis, edit.describe()), name=str(change["name"])))
    print(AFTER_GROUPS_CHOICE)
    retrained = judged_change(change, edit.kind)  # over the persons the prediction holds (judged_change)
    if prediction is None:
        print(f"predicted change: none ({unpredicted})")
    else:
        _judged("predicted", prediction, retrained, kind=edit.kind)
        if ratio is None and edit.kind == "remove":
            print(model_unaudited_sentence(analysis.model))
    if refined is not None:
        _judged("refined", refined, retrained, kind=edit.kind)
    elif unrefined is not None:
        print(f"refined prediction: none ({unrefined})")
    if old is not None:
        print(old_estimate_sentence(old, digits=4))


def _predicted_only(analysis, edit, *, prediction, unpredicted: str | None, refined, unrefined: str | None, old,
                    audited: bool) -> None:
    """``--predict-only``: B_gr before and each prediction of ``edit`` with its estimator and interval, the same lines
    as after a retrain without the retrained change (nothing is trained or saved)."""
    from kgbias_core.readings import model_unaudited_sentence, old_estimate_sentence

    index = analysis.groups.index(edit.occupation)
    print(f"B_gr before {float(analysis.group_bias(edit.occupation)):+.4f} ({analysis.groups.names[index]}, "
          f"{edit.strategy}); {NOT_RETRAINED}")
    if prediction is None:
        print(f"predicted change: none ({unpredicted})")
    else:
        _prediction_line("predicted", prediction)
        if not audited and edit.kind == "remove":
            print(model_unaudited_sentence(analysis.model))
    if refined is not None:
        _prediction_line("refined", refined)
    elif unrefined is not None:
        print(f"refined prediction: none ({unrefined})")
    if old is not None:
        print(old_estimate_sentence(old, digits=4))


def _prediction_line(what: str, prediction) -> None:
    """A prediction's line: point, interval, estimator, noise floor (an import's: the prior, named)."""
    floor = "; no noise band yet"
    if prediction.floor:
        prior = " (a prior: an import has no noise band)" if prediction.redrawn else ""
        floor = f"; noise floor ±{prediction.floor:.4f}{prior}"
    print(f"{what} change {prediction.point:+.4f} [{prediction.low:+.4f}, {prediction.high:+.4f}] "
          f"(estimator: {prediction.estimator}{floor})")


def _judged(what: str, prediction, retrained: float, *, kind: str) -> None:
    """A prediction's line (point, interval, estimator, noise floor) and the retrained change judged against it."""
    from kgbias_core.readings import verdict_sentence

    _prediction_line(what, prediction)
    print(verdict_sentence(prediction, retrained, kind=kind, what=what, digits=4))


def _refined(analysis, model: str, edit, spread: float | None):
    """(the refined prediction of the removal ``edit``, None) or (None, why there is none): as the lab decides
    (kgbias_core.tasks.refit_offer)."""
    import torch

    from kgbias_core.influence.refit_prediction import refit_removal_prediction
    from kgbias_core.tasks import refit_offer

    scale, why = refit_offer(model, analysis, edit.occupation)
    if why is not None:
        return None, why
    return refit_removal_prediction(analysis, edit.occupation, torch.tensor(edit.removed, dtype=torch.long),
                                    spread=spread, scale=scale), None


def _debias_embedding(args: argparse.Namespace) -> None:
    from kgbias_core.tasks import debias_embedding_task

    task = debias_embedding_task(base=Path(args.model), method=args.method, out=Path(args.out),
                                 occupations=args.occupations or None, weight=args.weight, persons=args.persons,
                                 direction=args.direction, overwrite=args.force, device=args.device)
    path = task.run(PrintedProgress())
    print(f"saved {path} ({args.method}; influence and what-ifs refuse it, every measure reads it)")


def _compare_debiasing(args: argparse.Namespace) -> None:
    from kgbias_core.tasks import compare_debiasing_task

    table = compare_debiasing_task(args.models, occupations=args.occupations or (),
                                   device=args.device).run(PrintedProgress())
    write_csv(table, args.out)


def register(commands: argparse._SubParsersAction) -> None:
    """Add debias, debias-embedding, compare-debiasing to the command line."""
    debias = commands.add_parser("debias", help="Du's Add / IF-REMOVE / Random-REMOVE what-if, retrained and saved "
                                 "(--predict-only: predicted alone)")
    debias.add_argument("--model", required=True, help="base model directory (only read)")
    debias.add_argument("--occupation", required=True, help="occupation label or readable name")
    edit = debias.add_mutually_exclusive_group(required=True)
    edit.add_argument("--add", action="store_true", help="add c·(|M|−|F|) dummies of the rarer gender")
    edit.add_argument("--remove-k", type=integer(1), help="remove k triples (see --strategy)")
    edit.add_argument("--remove-indices", help="file of training-triple indices to remove")
    debias.add_argument("--c", type=real(0, above=True, high=MAX_C), default=0.5,
                        help="Add: dummies per missing person")
    debias.add_argument("--cap", type=integer(1), default=10_000, help="Add: at most this many dummies")
    debias.add_argument("--strategy", choices=("if", "random"), default="if",
                        help="remove-k: IF-REMOVE (towards 0 by influence) or Random-REMOVE")
    debias.add_argument("--seed", type=SEED, default=0, help="Random-REMOVE: seed of the random set")
    debias.add_argument("--refined", action="store_true",
                        help="removals: also the refined prediction (the rows B_gr reads refitted after the step; "
                             "models of eight negatives, after their prediction audit), judged against the retrain")
    debias.add_argument("--predict-only", action="store_true",
                        help="print the predictions (step, --refined, the closed form) and retrain nothing: seconds, "
                             "and the what-if of a model imported from another engine, which is not retrained here")
    debias.add_argument("--out", help="model directory of the what-if (never the --model); needed unless "
                                      "--predict-only")
    debias.add_argument("--force", action="store_true", help="replace a what-if already at --out")
    debias.set_defaults(handler=_debias)

    embedding = commands.add_parser(
        "debias-embedding", help="debias the embedding itself: project the gender direction out, or retrain with a "
        "fairness term; saved as a model")
    embedding.add_argument("--model", required=True, help="base model directory (only read)")
    embedding.add_argument("--method", required=True, choices=("project", "regularise"),
                           help="project: remove the gender direction (Bourli & Pitoura); regularise: retrain with "
                                "(w/2) sum B_gr^2 in the objective")
    embedding.add_argument("--occupations", nargs="+", help="occupation labels or names (default: all)")
    embedding.add_argument("--weight", type=real(0, above=True), default=10.0,
                           help="regularise: weight w of the fairness term (summed-loss units, as l2)")
    embedding.add_argument("--direction", choices=("values", "persons"), default="values",
                           help="project: gender direction m - f (values) or mean man - mean woman (persons)")
    embedding.add_argument("--persons", action="store_true", help="project: project the persons too")
    embedding.add_argument("--out", required=True, help="model directory of the debiased model (never the --model)")
    embedding.add_argument("--force", action="store_true", help="replace a model already at --out")
    embedding.set_defaults(handler=_debias_embedding)

    compare = commands.add_parser(
        "compare-debiasing", help="B_gr, b_p, TLB, DPG/PPG/EOG, MRR/Hits@10 and cost of several models (CSV)")
    compare.add_argument("--models", nargs="+", required=True, help="model directories: the original first, then "
                         "what-ifs and debiased models of the same graph")
    compare.add_argument("--occupations", nargs="+", help="target occupations (labels or names) for per-target columns")
    compare.add_argument("--out", required=True, help="CSV file to write")
    compare.set_defaults(handler=_compare_debiasing)
