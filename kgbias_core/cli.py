"""Command line: ``kgbias <command> ...`` (or ``python -m kgbias_core``) for batch users and for checking.

Each command parses its flags and runs a task of :mod:`kgbias_core.tasks` or builds a table, so the
command line and the pages compute the same way. Every command writes a CSV (or a model
directory, a JSON file, an HTML report) and prints progress on stderr; a user error prints one line
naming the problem and exits with status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from kgbias_core.embeddings.config import DISTANCES, IMPORT_FORMATS, MODELS, RANDOM_FORMAT
from kgbias_core.errors import (
    BAD_NUMBER,
    CSV_OUT_IS_DIRECTORY,
    CSV_WRITE_FAILED,
    IMPORT_NEEDS_PATH,
    INTERRUPTED,
    OUT_NOT_A_FILE,
    PATH_REFUSED,
    UNEXPECTED_ERROR,
    DataError,
    KGBiasError,
)
from kgbias_core.jobs import Progress

#: Set to 1 to see the traceback of an unexpected error instead of its one line.
DEBUG_ENV = "KGBIAS_DEBUG"
#: Bounds of the numeric flags: beyond them a run is a typo or an out-of-memory error, not a request.
MAX_DIM, MAX_EPOCHS, MAX_BATCH, MAX_SEED, MAX_BOOTSTRAP = 4096, 100_000, 1 << 24, 2**32 - 1, 100_000
#: Adam's step above 10 or a margin/L2 above these diverge to inf (float32) long before a use; Add's c above
#: 100 asks for 100 dummies per missing person (Du uses 0.5), far past the cap.
MAX_LR, MAX_L2, MAX_MARGIN, MAX_DAMPING, MAX_C = 10.0, 1e6, 1e4, 1e12, 100.0


class _Parser(argparse.ArgumentParser):
    """argparse with the CLI's error format: one line naming the command and the flag, exit 2.

    No abbreviated flags: ``--mode warm`` (a retired option) must not silently mean ``--model warm``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {self.prog}: {message} (see {self.prog} --help)\n")


def _integer(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer in [low, high], else a message giving the range."""
    expected = f"an integer >= {low}" if high is None else f"an integer from {low} to {high}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(BAD_NUMBER.format(expected=expected, value=text))
        return value

    return parse


def _real(low: float, *, above: bool, high: float | None = None) -> Callable[[str], float]:
    """An argparse type: a finite number > low (``above``) or >= low, and at most ``high``, else a message
    giving the range. The bound keeps the training finite: ``--lr 1e308`` overflowed, ``--margin 1e308``
    wrote an infinite loss into config.json."""
    expected = f"a number {'>' if above else '>='} {low:g}" + (f" and <= {high:g}" if high is not None else "")

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < low or (above and value == low) or (high is not None and value > high):
            raise argparse.ArgumentTypeError(BAD_NUMBER.format(expected=expected, value=text))
        return value

    return parse


def _csv_out(text: str) -> str:
    """An argparse type for a CSV/HTML/JSON --out: refused at once when it names a directory, a device,
    a FIFO or a socket (:func:`_output_file`)."""
    try:
        _output_file(text)
    except DataError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _output_file(out: str) -> Path:
    """The regular file an output is written to: ``out``, or a symlink's target (written through, so the
    link stays a link). Anything else that exists there (a directory, a device such as /dev/full or
    /dev/null, a FIFO, a socket) is refused: the atomic rename would replace it by a regular file."""
    import stat

    path = Path(out)
    if path.is_symlink():
        path = Path(os.path.realpath(path))  # follows every link of a chain; a dangling one is created
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return path
    except OSError as exc:
        raise DataError(CSV_WRITE_FAILED.format(path=path, reason=exc.strerror or exc)) from None
    if stat.S_ISDIR(mode):
        raise DataError(CSV_OUT_IS_DIRECTORY.format(path=Path(out)))
    if not stat.S_ISREG(mode):
        kind = ("a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
        raise DataError(OUT_NOT_A_FILE.format(path=Path(out), kind=kind))
    return path


class _PrintedProgress(Progress):
    """A task's progress on stderr: every new message, an epoch with its loss and the time left."""

    def update(self, **fields: Any) -> None:
        super().update(**fields)
        if "message" not in fields:
            return
        now = self.snapshot()
        if "loss" in fields and now.loss is not None:
            print(f"{now.message}  loss {now.loss:.5f}  ~{now.seconds_left or 0:.0f}s left", file=sys.stderr)
        else:
            print(now.message, file=sys.stderr)


def _train(args: argparse.Namespace) -> None:
    from kgbias_core.embeddings.store import read_config
    from kgbias_core.tasks import train_task

    overrides = {
        k: v
        for k, v in {
            "model": args.model, "dim": args.dim, "epochs": args.epochs, "seed": args.seed,
            "batch_size": args.batch_size, "lr": args.lr, "l2": args.l2, "margin": args.margin,
            "damping": args.damping, "optimizer": args.optimizer,
        }.items()
        if v is not None
    }
    task = train_task(args.dataset, out=Path(args.out), data_dir=args.data_dir, schema=args.schema,
                      names=args.names, overrides=overrides, calibrate=args.calibrate, overwrite=args.force,
                      inverse_occupation=args.inverse_occupation, device=args.device)
    path = task.run(_PrintedProgress())
    print(f"saved {path} ({read_config(path)['train_seconds']:.1f}s)")


def _prepare(args: argparse.Namespace) -> None:
    from kgbias_core.data.datasets import has_dataset, resolve_data_dir
    from kgbias_core.embeddings.store import default_store
    from kgbias_core.errors import PREPARE_NO_DATA
    from kgbias_core.tasks import prepare_task, readiness_lines

    data_dir = resolve_data_dir(args.data_dir)
    for dataset in args.dataset:  # every graph checked before anything is trained
        if not has_dataset(dataset, data_dir):
            raise DataError(PREPARE_NO_DATA.format(dataset=dataset, data_dir=data_dir))
    store = Path(args.model_dir) if args.model_dir else default_store()
    overrides = {"epochs": args.epochs} if args.epochs is not None else None
    items = prepare_task(args.dataset, store=store, data_dir=data_dir, calibrate=args.calibrate,
                         overrides=overrides, device=args.device).run(_PrintedProgress())
    print("readiness:")
    for line in readiness_lines(items):
        print("  " + line)
    missing = [i for i in items if not i.ready and not i.optional]
    print("ready for a demo" if not missing else f"{len(missing)} item(s) missing")


def _import(args: argparse.Namespace) -> None:
    from kgbias_core.embeddings.store import read_config
    from kgbias_core.tasks import import_task

    if args.path is None and args.format != RANDOM_FORMAT:
        raise DataError(IMPORT_NEEDS_PATH.format(format=args.format))
    task = import_task(args.format, path=None if args.path is None else Path(args.path), graph=args.graph,
                       out=Path(args.out), data_dir=args.data_dir, schema=args.schema, names=args.names,
                       distance=args.distance, trust_pickle=args.trust_pickle, overwrite=args.force, dim=args.dim,
                       seed=args.seed)
    path = task.run(_PrintedProgress())
    if args.format == RANDOM_FORMAT:
        print(f"saved {path} (random, untrained {args.dim}-dimensional TransE vectors: "
              f"for scale tests only; no frozen negatives)")
        return
    kind = read_config(path).get("model", "transe")
    print(f"saved {path} (imported from {args.format} as {kind}; no frozen negatives: "
          + ("influence is approximate (negatives re-drawn), retrains are not available)" if kind == "transe" else
             "Du's B_gr, B_in, influence and retrains need TransE; Fisher, audit and fairness work on it)"))


def _negative_seed_flag(command: argparse.ArgumentParser) -> None:
    """``--negative-seed``: for a model without frozen negatives (imported), influence re-draws one per triple."""
    command.add_argument("--negative-seed", type=_integer(0), default=None, metavar="S",
                         help="a model without frozen negatives (imported): re-draw one negative per training "
                              "triple from seed S (default 0); influence is then approximate")


def _synthetic(args: argparse.Namespace) -> None:
    from kgbias_core.data.synthetic_scale import ScaleConfig, generate_scale_graph

    out = generate_scale_graph(ScaleConfig(n_persons=args.persons, n_triples=args.triples, seed=args.seed), args.out)
    print(f"wrote {args.triples:,} triples over {args.persons:,} persons to {out} "
          f"(train.txt, valid.txt, test.txt, entity_names.tsv, schema.toml); load it with --dataset {out}")


def _device_flag(command: argparse.ArgumentParser) -> None:
    """``--device``, on every command: where the model is moved on load and every measure runs (and where
    ``train`` trains). Resolved once in :func:`main` (:func:`kgbias_core.device.resolve_device`)."""
    from kgbias_core.device import DEVICE_CHOICES, DEVICE_ENV

    command.add_argument("--device", default=None, metavar="DEVICE",
                         help=f"{DEVICE_CHOICES} (default: ${DEVICE_ENV}, else auto: a GPU where PyTorch sees one); "
                              "retrains run on the kind of device their base model was trained on")


def _leaf_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """The parsers that run a command (``validate influence``, not ``validate``), for flags every command has."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                found.extend(_leaf_parsers(sub))
    return found or [parser]


def _graph_flags(command: argparse.ArgumentParser, flag: str, meaning: str) -> None:
    """The graph flags of ``train`` and ``import``: a data set name or a user graph with its schema."""
    command.add_argument(flag, required=True, help=f"{meaning}: fb15k237 | fb13 | synthetic | PATH (TSV or directory)")
    command.add_argument("--data-dir", help="data directory (default: $KGBIAS_DATA_DIR or ./data)")
    command.add_argument("--schema", help="schema TOML/JSON for a user graph")
    command.add_argument("--names", help="id<TAB>name file for a user graph")


def _analysis(path: str, negative_seed: int | None = None, *, device: Any):
    """The model's analysis, its tensors moved once to ``device`` (``args.device``, resolved in :func:`main`);
    ``negative_seed``: the re-draw seed of a model without frozen negatives (default 0)."""
    from kgbias_core.analysis import ModelAnalysis
    from kgbias_core.embeddings.store import load_model
    from kgbias_core.influence.negatives import DEFAULT_NEGATIVE_SEED

    seed = DEFAULT_NEGATIVE_SEED if negative_seed is None else negative_seed
    return ModelAnalysis(load_model(path, device=device), negative_seed=seed)


def _print_negatives(analysis, occupation: str | None, *, negative_seed: int | None, exact_too: bool = True) -> None:
    """Say which negatives influence used (``exact_too``: also when they are the frozen ones); for re-drawn
    ones, the occupation's stability over 3 seeds (METHODS §4)."""
    if analysis.model.config.model != "transe":
        return  # no influence at all: nothing to label
    negatives = analysis.negatives
    if exact_too or not negatives.exact:
        print(f"influence: {negatives.label}")
    if negatives.exact:
        if negative_seed is not None:
            print("--negative-seed not used: the model has the frozen negatives it was trained with")
    elif occupation is not None:
        print(f"stability: {analysis.redraw_stability(occupation).summary()}")


def _write(frame, out: str) -> None:
    """Write ``frame`` as the CSV ``out`` (atomically, :func:`_write_text`)."""
    _write_text(frame.to_csv(index=False), out)
    print(f"wrote {len(frame)} rows to {out}")


def _write_text(text: str, out: str) -> None:
    """Write ``text`` to ``out`` through a temporary sibling, so a failed write (full disk) leaves a
    previous file of that name as it was."""
    path = _output_file(out)  # checked again: the flag's check ran before the (long) computation
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise DataError(CSV_WRITE_FAILED.format(path=path, reason=exc.strerror or exc)) from None


def _measures(args: argparse.Namespace) -> None:
    from kgbias_core.tables import MEASURE_COLUMNS, measures_table

    frame = measures_table(_analysis(args.model, device=args.device))
    _write(frame[[*MEASURE_COLUMNS, "n_other_gender", "n_unknown_gender", "note"]], args.out)


def _individuals(args: argparse.Namespace) -> None:
    from kgbias_core.tables import persons_table

    _write(persons_table(_analysis(args.model, device=args.device), args.occupation), args.out)


def _influence(args: argparse.Namespace) -> None:
    from kgbias_core.tables import influence_table

    analysis = _analysis(args.model, args.negative_seed, device=args.device)
    frame = influence_table(analysis, args.occupation, top=args.top)
    _write(frame[["head", "relation", "tail", "head_name", "tail_name", "person", "person_name", "person_gender",
                  "person_degree", "influence", "negatives"]], args.out)
    _print_negatives(analysis, args.occupation, negative_seed=args.negative_seed)


def _fisher(args: argparse.Namespace) -> None:
    from kgbias_core.tables import fisher_table

    frame = fisher_table(
        _analysis(args.model, device=args.device), relation=args.relation, value_a=args.a, value_b=args.b,
        min_count=args.min_count,
    )
    _write(frame, args.out)


def _intersect(args: argparse.Namespace) -> None:
    from kgbias_core.tables import MIN_GROUP_SIZE, intersection_table

    min_count = MIN_GROUP_SIZE if args.min_count is None else args.min_count
    found = intersection_table(_analysis(args.model, device=args.device), args.occupation, args.attribute,
                               value_a=args.value_a, value_b=args.value_b, min_count=min_count)
    _write(found.table, args.out)
    test = found.comparison
    if test.note:
        print(f"{found.name}: no comparison of B_gr between {found.attribute} values: {test.note}")
    else:
        print(f"{found.name}: B_gr among {test.name_a} minus among {test.name_b} {test.difference:+.4f}, "
              f"permutation p {test.p_value:.3g} ({test.n_permutations} permutations within gender)")


def _audit(args: argparse.Namespace) -> None:
    from kgbias_core.embeddings.store import load_model
    from kgbias_core.measures.relation_audit import audit_table

    models = [load_model(path, device=args.device) for path in args.models]
    table = audit_table(models, k=args.k, kind=args.classifier, min_persons=args.min_persons)
    _write(table, args.out)


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
    _write(pd.concat(frames, ignore_index=True), args.out)


def _download(args: argparse.Namespace) -> None:
    from kgbias_core.data.datasets import resolve_data_dir
    from kgbias_core.data.download import download_fb13, download_fb15k237

    fetch = download_fb13 if args.dataset == "fb13" else download_fb15k237
    for path in fetch(resolve_data_dir(args.data_dir)):
        print(f"downloaded {path}")


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
    from kgbias_core.readings import membership_sentence
    from kgbias_core.tasks import check_retrains, whatif_task
    from kgbias_core.whatif.edits import make_edit
    from kgbias_core.whatif.runs import AFTER_GROUPS_CHOICE, bias_change, membership_of_record

    check_retrains(args.model, what="debias (a full retrain)", retrains=1)  # before the model is even read
    analysis = ModelAnalysis(load_model(args.model, device=args.device))
    occupation = args.occupation
    strategy = "add" if args.add else args.strategy if args.remove_k is not None else "basket"
    indices = _read_indices(args.remove_indices) if strategy == "basket" else ()
    edit = make_edit(analysis, occupation, strategy=strategy, k=args.remove_k or 0, c=args.c, cap=args.cap,
                     seed=args.seed, indices=indices)
    occupation = edit.occupation  # the label: a readable name was resolved before anything is retrained
    if strategy == "if" and len(edit.removed) < args.remove_k:
        print(f"only {len(edit.removed)} triples move B_gr towards 0: IF-REMOVE removes those", file=sys.stderr)
    predicted = None
    if edit.kind == "remove":
        predicted = analysis.predicted_removal(occupation, torch.tensor(edit.removed, dtype=torch.long))
    task = whatif_task(base=Path(args.model), edit=edit, out=Path(args.out), overwrite=args.force,
                       device=args.device)
    path = task.run(_PrintedProgress())
    what_if = ModelAnalysis(load_model(path, device=args.device))
    change = bias_change(analysis, what_if).set_index("occupation").loc[occupation]
    print(f"saved {path} ({edit.strategy}, retrained from the base's seed)")
    print(f"B_gr before {change['group_bias_before']:+.4f}  after {change['group_bias_after']:+.4f}  "
          f"change {change['change']:+.4f}")
    print(f"B_gr after over the original persons {change['group_bias_after_original']:+.4f}  "
          f"change {change['change_original']:+.4f}")
    print(membership_sentence(membership_of_record(analysis, edit.describe()), name=str(change["name"])))
    print(AFTER_GROUPS_CHOICE)
    if predicted is None:
        print("predicted change: none (influence predicts removals only)")
    else:
        print(f"predicted change {predicted.summary()}")


def _debias_embedding(args: argparse.Namespace) -> None:
    from kgbias_core.tasks import debias_embedding_task

    task = debias_embedding_task(base=Path(args.model), method=args.method, out=Path(args.out),
                                 occupations=args.occupations or None, weight=args.weight, persons=args.persons,
                                 direction=args.direction, overwrite=args.force, device=args.device)
    path = task.run(_PrintedProgress())
    print(f"saved {path} ({args.method}; influence and what-ifs refuse it, every measure reads it)")


def _compare_debiasing(args: argparse.Namespace) -> None:
    from kgbias_core.tasks import compare_debiasing_task

    table = compare_debiasing_task(args.models, occupations=args.occupations or (),
                                   device=args.device).run(_PrintedProgress())
    _write(table, args.out)


def _calibrate(args: argparse.Namespace) -> None:
    from kgbias_core.embeddings.store import check_writable, load_model
    from kgbias_core.errors import LAB_K_TOO_LARGE, MeasureError
    from kgbias_core.influence.calibration import leave_one_out
    from kgbias_core.tasks import calibrate, store_calibration

    model = load_model(args.model, device=args.device)  # measured there; retrained on its own kind of device
    n = int(model.triples.shape[0])
    if args.k is not None and args.k > n:  # before the first of 1 + 2n retrains
        raise MeasureError(LAB_K_TOO_LARGE.format(k=args.k, n=n, model=model.name))
    check_writable(Path(args.model).parent, what="calibrate (stores the calibrated model there)")

    def on_run(done: int, total: int) -> None:
        print(f"calibration: masked retrain {done}/{total}", file=sys.stderr, flush=True)

    calibration, runs = calibrate(model, n_occupations=args.occupations, k=args.k, on_run=on_run)
    held_out = leave_one_out(runs)
    if args.out is not None:
        _write(held_out, args.out)
    store_calibration(args.model, calibration, runs)
    for label, scale in zip(calibration.occupations, calibration.per_occupation, strict=True):
        name = runs.loc[runs["occupation"] == label, "name"].iloc[0]
        print(f"{name} ({label}): scale {scale:.3f}")
    print(f"scale actual/predicted {calibration.scale:.3f}, range {calibration.low:.3f}-{calibration.high:.3f} "
          f"over {len(calibration.occupations)} occupations; stored in {args.model}")
    print(f"leave-one-occupation-out: {int(held_out['inside'].sum())} of {len(held_out)} retrained changes "
          f"inside the interval ({held_out['inside'].mean():.0%})")


def _validate_influence(args: argparse.Namespace) -> None:
    from kgbias_core.influence.retraining_check import summarize_accuracy
    from kgbias_core.tasks import influence_accuracy_task

    task = influence_accuracy_task(Path(args.model), occupation=args.occupation, ks=args.ks, kinds=args.kinds,
                                   keep=False, device=args.device)
    runs = task.run(_PrintedProgress())
    summary = summarize_accuracy(runs)
    _write(runs, args.out)
    print(f"Pearson r {summary.r:.3f} (p {summary.p_value:.2g}), random-removal noise {summary.noise:.4f}, "
          f"scale actual/predicted {summary.scale:.3f}, sign agreement {summary.sign_agreement:.0%}")


def _validate_census(args: argparse.Namespace) -> None:
    from kgbias_core.data.census import census_file, census_validation
    from kgbias_core.data.datasets import resolve_data_dir
    from kgbias_core.errors import CENSUS_FILE_MISSING, CENSUS_NOT_PAIRED, DataError, MeasureError
    from kgbias_core.tables import measures_table

    data_dir = resolve_data_dir(args.data_dir)
    census = census_file(data_dir)
    if not census.is_file():
        raise DataError(CENSUS_FILE_MISSING.format(path=census, data_dir=data_dir))
    analysis = _analysis(args.model, device=args.device)
    correlations, joined = census_validation(measures_table(analysis), census_path=census, year=args.year,
                                             min_per_gender=args.min_per_gender, dataset=analysis.model.dataset)
    if joined.empty:
        raise MeasureError(CENSUS_NOT_PAIRED.format(model=analysis.model.name, dataset=analysis.model.dataset))
    _write(correlations, args.out)
    for row in correlations.itertuples():
        print(f"{row.measure}: r {row.r:+.3f} (p {row.p_value:.2g}, n {row.n})")


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
                          k=args.k, negative_seed=args.negative_seed, device=args.device).run(_PrintedProgress())
    if not census.is_file():  # after the run: a refused model is one line, not a census note and the error
        print(f"no census file at {census}: claim 6 is not measured", file=sys.stderr)
    config = read_config(args.model)
    document = {"model": config.get("name"), "dataset": config.get("dataset"), **model_fingerprint(args.model),
                "findings": json.loads(frame.to_json(orient="records"))}
    _write_text(json.dumps(document, indent=2), args.out)
    for row in frame.itertuples():
        interval = f" [{row.low:+.3f}, {row.high:+.3f}]" if row.low == row.low else ""
        p_value = f" p {row.p_value:.2g}" if row.p_value == row.p_value else ""
        print(f"{row.claim:3s} {row.key:30s} paper {row.paper:>16s}  {row.value:+.3f}{interval}{p_value}  "
              f"{row.verdict}  ({row.scope})")
    if config.get("negatives") == "none":  # imported: claim 3's influence re-drew the negatives
        print(f"influence: {negatives_label(seed=args.negative_seed or DEFAULT_NEGATIVE_SEED)}")
    print(f"wrote {len(frame)} findings to {args.out}")


def _report(args: argparse.Namespace) -> None:
    from kgbias_core.embeddings.store import read_config
    from kgbias_core.errors import REPORT_NOT_A_RUN, REPORT_RUN_NOT_OF_MODEL, ModelStoreError
    from kgbias_core.report import occupation_report, whatif_run
    from kgbias_core.tasks import saved_noise_band
    from kgbias_core.whatif.runs import made_from

    analysis = _analysis(args.model, args.negative_seed, device=args.device)
    if args.occupations is not None:
        from kgbias_core.report import occupations_report

        _write_text(occupations_report(analysis, args.occupations), args.out)
        _print_negatives(analysis, None, negative_seed=args.negative_seed, exact_too=False)
        print(f"wrote the report of {len(args.occupations)} occupation(s) to {args.out}")
        return
    run, occupation = None, args.occupation
    if args.run is not None:
        run_config = read_config(args.run)
        if not run_config.get("edit"):
            raise ModelStoreError(REPORT_NOT_A_RUN.format(path=args.run))
        if not made_from(run_config, read_config(args.model)):
            raise ModelStoreError(REPORT_RUN_NOT_OF_MODEL.format(run=args.run, model=args.model))
        run = whatif_run(analysis, _analysis(args.run, device=args.device), noise=saved_noise_band(args.model))
        occupation = run.edit["occupation"]
    comparison = None
    if args.compare:  # the original first, then the other models, all of one graph
        from kgbias_core.tasks import compare_debiasing_task

        label = analysis.groups.labels[analysis.groups.index(occupation)]
        comparison = compare_debiasing_task([args.model, *args.compare], occupations=[label],
                                            device=args.device).run(_PrintedProgress())
    _write_text(occupation_report(analysis, occupation, run=run, comparison=comparison), args.out)
    _print_negatives(analysis, None, negative_seed=args.negative_seed, exact_too=False)
    print(f"wrote the report to {args.out}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kgbias", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    seed = _integer(0, MAX_SEED)

    train = commands.add_parser("train", help="train an embedding and save it as a model directory")
    _graph_flags(train, "--dataset", "the graph trained on")
    train.add_argument("--model", choices=MODELS)
    for flag, kind, meaning in (
        ("--dim", _integer(1, MAX_DIM), "embedding dimension"),
        ("--epochs", _integer(1, MAX_EPOCHS), "passes over the training triples"),
        ("--seed", seed, "initialisation, negatives and batch order"),
        ("--batch-size", _integer(1, MAX_BATCH), "triples per optimiser step"),
        ("--lr", _real(0, above=True, high=MAX_LR), "Adam learning rate at the start"),
        ("--l2", _real(0, above=False, high=MAX_L2), "L2 coefficient (summed-loss units)"),
        ("--margin", _real(0, above=True, high=MAX_MARGIN), "margin of the TransE loss"),
        ("--damping", _real(0, above=True, high=MAX_DAMPING), "lambda of the influence Hessian (default 2|G|/|E|)"),
    ):
        train.add_argument(flag, type=kind, help=meaning)
    train.add_argument("--optimizer", choices=("adam", "sparse_adam"),
                       help="adam: dense Adam over every row per step (default); sparse_adam: row-wise updates of "
                            "the rows a batch touches, the same objective (for graphs of millions of entities)")
    train.add_argument("--inverse-occupation", action="store_true",
                       help="add (o, r_p (inverse), s) for every occupation fact (Du's FB5M has this inverse)")
    train.add_argument("--calibrate", action="store_true",
                       help="TransE: calibrate the influence scale on 6 occupations, 13 masked retrains (METHODS §4)")
    train.add_argument("--out", required=True, help="model directory, e.g. cached_models/fb15k237-transe")
    train.add_argument("--force", action="store_true", help="replace the model already at --out")
    train.set_defaults(handler=_train)

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
    imports.add_argument("--dim", type=_integer(1, MAX_DIM), default=64, help="random: embedding dimension")
    imports.add_argument("--seed", type=seed, default=0, help="random: seed of the vectors")
    _graph_flags(imports, "--graph", "the triples the embeddings were trained on")
    imports.add_argument("--distance", choices=DISTANCES,
                         help="TransE's distance where the files do not record it (npy without config.json, "
                              "a PyKEEN state dict; PyKEEN's default TransE is l1)")
    imports.add_argument("--trust-pickle", action="store_true",
                         help="read a pickled PyKEEN model (trained_model.pkl): unpickling runs any code it holds")
    imports.add_argument("--out", required=True, help="model directory, e.g. cached_models/fb15k237-pykeen")
    imports.add_argument("--force", action="store_true", help="replace the model already at --out")
    imports.set_defaults(handler=_import)

    measures = commands.add_parser("measures", help="every measure per occupation")
    measures.add_argument("--model", required=True)
    measures.add_argument("--out", required=True, type=_csv_out)
    measures.set_defaults(handler=_measures)

    individuals = commands.add_parser("individuals", help="B_in and B'_in per person of an occupation")
    individuals.add_argument("--model", required=True)
    individuals.add_argument("--occupation", required=True, help="occupation label or readable name")
    individuals.add_argument("--out", required=True, type=_csv_out)
    individuals.set_defaults(handler=_individuals)

    influence = commands.add_parser("influence", help="most influential training triples on B_gr")
    influence.add_argument("--model", required=True)
    influence.add_argument("--occupation", required=True, help="occupation label or readable name")
    influence.add_argument("--top", type=_integer(1), default=20)
    influence.add_argument("--out", required=True, type=_csv_out)
    _negative_seed_flag(influence)
    influence.set_defaults(handler=_influence)

    fisher = commands.add_parser("fisher", help="Fisher et al.'s b_p per profession for an attribute")
    fisher.add_argument("--model", required=True)
    fisher.add_argument("--relation", required=True, help="attribute relation label or name (gender, ...)")
    fisher.add_argument("--a", required=True, help="value a (entity label)")
    fisher.add_argument("--b", help="value b (entity label); omitted: a vs the rest")
    fisher.add_argument("--min-count", type=_integer(0), default=0)
    fisher.add_argument("--out", required=True, type=_csv_out)
    fisher.set_defaults(handler=_fisher)

    intersect = commands.add_parser("intersect", help="B_gr, B_in and b_p of an occupation within the subpopulations "
                                                      "of an attribute (nationality, ...), with a permutation test")
    intersect.add_argument("--model", required=True)
    intersect.add_argument("--occupation", required=True, help="occupation label or readable name")
    intersect.add_argument("--attribute", required=True, help="the schema's attribute name (nationality, ...)")
    intersect.add_argument("--value-a", help="value compared (entity label); with --value-b. Default: the two "
                                             "largest subpopulations with enough persons")
    intersect.add_argument("--value-b", help="the other value compared (entity label)")
    intersect.add_argument("--min-count", type=_integer(1),
                           help="men and women a subpopulation needs for figures (default 5 of each)")
    intersect.add_argument("--out", required=True, type=_csv_out)
    intersect.set_defaults(handler=_intersect)

    report = commands.add_parser("report", help="one occupation (or one what-if run) as a self-contained HTML "
                                                "report: measures with intervals, sentences, charts, versions")
    report.add_argument("--model", required=True, help="model directory (the base model of --run)")
    about = report.add_mutually_exclusive_group(required=True)
    about.add_argument("--occupation", help="occupation label or readable name")
    about.add_argument("--occupations", nargs="+", metavar="OCCUPATION",
                       help="several occupations (labels or names): one report, a summary table first, a section each")
    about.add_argument("--run", help="what-if run directory: the report of its edited occupation, with the edit, "
                                     "the predicted and the retrained change, and the noise band")
    report.add_argument("--out", required=True, type=_csv_out, help="HTML file to write")
    report.add_argument("--compare", nargs="+", help="what-if runs and debiased models of --model: adds a section "
                                                     "comparing their B_gr, b_p, TLB, DPG/PPG/EOG, MRR and cost")
    _negative_seed_flag(report)
    report.set_defaults(handler=_report)

    audit = commands.add_parser("audit", help="Keidar et al.'s DPD/PPD/TLB per sensitive relation and model")
    audit.add_argument("--models", nargs="+", required=True, help="model directories")
    audit.add_argument("--k", type=_integer(1), default=5, help="most common occupations classified (+ OTHER)")
    audit.add_argument("--classifier", choices=("random_forest", "mlp"), default="random_forest")
    audit.add_argument("--min-persons", type=_integer(1), default=10, help="skip tail values with fewer persons")
    audit.add_argument("--out", required=True, type=_csv_out)
    audit.set_defaults(handler=_audit)

    fairness = commands.add_parser("fairness", help="Schwertmann et al.'s DPG/PPG/EOG of occupation predictions")
    fairness.add_argument("--models", nargs="+", required=True, help="model directories")
    fairness.add_argument("--min-count", type=_integer(1),
                          help="test facts for a class of its own (default: the paper's 100 on FB15k-237, "
                               "the same share of a smaller test set)")
    fairness.add_argument("--bootstrap", type=_integer(0, MAX_BOOTSTRAP), default=1000)
    fairness.add_argument("--out", required=True, type=_csv_out)
    fairness.set_defaults(handler=_fairness)

    synthetic = commands.add_parser(
        "synthetic", help="write a seeded synthetic people graph of any size to a folder (--dataset/--graph DIR)",
        description="Heavy-tailed degrees, skewed occupation sizes and gender shares; numpy-vectorised, "
                    "2M persons / 20M triples in about a minute. Writes train.txt, valid.txt, test.txt, "
                    "entity_names.tsv and schema.toml.")
    synthetic.add_argument("--persons", type=_integer(100, 100_000_000), required=True, help="number of persons")
    synthetic.add_argument("--triples", type=_integer(1000, 2_000_000_000), required=True,
                           help="number of triples over train + valid + test (about 10 per person is realistic)")
    synthetic.add_argument("--seed", type=seed, default=0)
    synthetic.add_argument("--out", required=True, help="folder to write (created)")
    synthetic.set_defaults(handler=_synthetic)

    prepare = commands.add_parser(
        "prepare", help="train the named graphs' default models where missing, then everything a demo shows "
                        "(noise band, link prediction, audit, findings); resumable; ends with a readiness check")
    prepare.add_argument("--dataset", nargs="+", required=True, choices=("synthetic", "fb15k237", "fb13"))
    prepare.add_argument("--data-dir", help="data directory (default: $KGBIAS_DATA_DIR or ./data)")
    prepare.add_argument("--model-dir", help="model store (default: $KGBIAS_MODEL_DIR or ./cached_models)")
    prepare.add_argument("--calibrate", action="store_true",
                         help="also calibrate each model (13 masked retrains: long on the real graphs)")
    prepare.add_argument("--epochs", type=_integer(1, MAX_EPOCHS),
                         help="train with this many epochs instead of the default (a quick try)")
    prepare.set_defaults(handler=_prepare)

    download = commands.add_parser("download", help="fetch FB15k-237 (and the census) or FB13 (needs a network)")
    download.add_argument("--dataset", choices=("fb15k237", "fb13"), default="fb15k237")
    download.add_argument("--data-dir")
    download.set_defaults(handler=_download)

    debias = commands.add_parser("debias", help="Du's Add / IF-REMOVE / Random-REMOVE what-if, retrained and saved")
    debias.add_argument("--model", required=True, help="base model directory (only read)")
    debias.add_argument("--occupation", required=True, help="occupation label or readable name")
    edit = debias.add_mutually_exclusive_group(required=True)
    edit.add_argument("--add", action="store_true", help="add c·(|M|−|F|) dummies of the rarer gender")
    edit.add_argument("--remove-k", type=_integer(1), help="remove k triples (see --strategy)")
    edit.add_argument("--remove-indices", help="file of training-triple indices to remove")
    debias.add_argument("--c", type=_real(0, above=True, high=MAX_C), default=0.5,
                        help="Add: dummies per missing person")
    debias.add_argument("--cap", type=_integer(1), default=10_000, help="Add: at most this many dummies")
    debias.add_argument("--strategy", choices=("if", "random"), default="if",
                        help="remove-k: IF-REMOVE (towards 0 by influence) or Random-REMOVE")
    debias.add_argument("--seed", type=seed, default=0, help="Random-REMOVE: seed of the random set")
    debias.add_argument("--out", required=True, help="model directory of the what-if (never the --model)")
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
    embedding.add_argument("--weight", type=_real(0, above=True), default=10.0,
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

    calibration = commands.add_parser(
        "calibrate", help="fit the influence scale and its range over occupations by masked retraining; store it")
    calibration.add_argument("--model", required=True, help="TransE model directory (its calibration is replaced)")
    calibration.add_argument("--occupations", type=_integer(3, 100), default=6,
                             help="occupations fitted on, spread over B_gr and group size (1 + 2n retrains)")
    calibration.add_argument("--k", type=_integer(1),
                             help="triples removed per set (default: 1%% of those moving B_gr)")
    calibration.add_argument("--out", type=_csv_out, help="CSV of the runs with their leave-one-out intervals")
    calibration.set_defaults(handler=_calibrate)

    findings = commands.add_parser("findings", help="Du et al.'s claims next to what this model shows (JSON)")
    findings.add_argument("--model", required=True)
    _negative_seed_flag(findings)
    findings.add_argument("--retrain", nargs="+", metavar="OCCUPATION",
                          help="first run the retrains behind claims 4-5 for these occupations, where missing "
                               "(noise band, IF-/Random-REMOVE of k, Add c=0.5)")
    findings.add_argument("--k", type=_integer(1), help="triples removed per set for --retrain "
                                                        "(default: as many as predicted to bring B_gr to 0)")
    findings.add_argument("--year", type=_integer(1000, 9999), help="census year (default: the latest in the file)")
    findings.add_argument("--data-dir", help="data directory with census/ (default: $KGBIAS_DATA_DIR or ./data)")
    findings.add_argument("--out", required=True, type=_csv_out, help="JSON file of the findings")
    findings.set_defaults(handler=_findings)

    validate = commands.add_parser("validate", help="influence against retraining (Du §4.2) or the census (§4.1)")
    checks = validate.add_subparsers(dest="check", required=True)
    accuracy = checks.add_parser("influence", help="predicted vs actual change of B_gr after top/bottom/random-k")
    accuracy.add_argument("--model", required=True)
    accuracy.add_argument("--occupation", required=True)
    accuracy.add_argument("--ks", type=_integer(1), nargs="+", required=True, help="numbers of triples to remove")
    accuracy.add_argument("--kinds", nargs="+", choices=("top", "bottom", "random"),
                          default=["top", "bottom", "random"])
    accuracy.add_argument("--out", required=True, type=_csv_out, help="CSV of the runs: kind, k, predicted, actual")
    accuracy.set_defaults(handler=_validate_influence)
    census = checks.add_parser("census", help="Pearson r of each measure against census log(p/(1-p))")
    census.add_argument("--model", required=True)
    census.add_argument("--year", type=_integer(1000, 9999), help="census year (default: the latest in the file)")
    census.add_argument("--data-dir", help="data directory with census/ (default: $KGBIAS_DATA_DIR or ./data)")
    census.add_argument("--min-per-gender", type=_integer(1), default=1)
    census.add_argument("--out", required=True, type=_csv_out, help="CSV: measure, r, p_value, n")
    census.set_defaults(handler=_validate_census)
    for command in _leaf_parsers(parser):
        _device_flag(command)
    return parser


def _say(text: str) -> None:
    """One line on stderr, whatever line breaks the message holds."""
    print(" ".join(str(text).split("\n")), file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; 0 on success, 2 on a user error, 1 on an unexpected error (one line each)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit:  # --help (0) or a usage error, already printed as one line (2)
        return exit.code if isinstance(exit.code, int) else 2
    try:
        from kgbias_core.device import resolve_device

        # The one place the command line resolves its device: every handler passes args.device down.
        args.device = resolve_device(args.device)
        args.handler(args)
    except KGBiasError as error:
        _say(f"error: {error}")
        return 2
    except KeyboardInterrupt:
        _say(f"error: {INTERRUPTED}")
        return 130
    except OSError as error:  # the file system refused a path given (too long, no permission, read-only)
        name = str(error.filename or "")
        shown = name if len(name) <= 120 else f"{name[:60]}…{name[-40:]} ({len(name):,} characters)"
        _say("error: " + PATH_REFUSED.format(path=shown, reason=error.strerror or error))
        return 2
    except Exception as error:
        if os.environ.get(DEBUG_ENV) == "1":
            raise
        _say("error: " + UNEXPECTED_ERROR.format(exc_type=type(error).__name__, message=error))
        return 1
    return 0


def entry_point() -> None:
    """The ``kgbias`` console script: the same CLI as ``python -m kgbias_core``."""
    sys.exit(main())
