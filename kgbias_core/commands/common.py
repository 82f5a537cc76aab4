"""What every command shares: the parser's error format, argparse types with ranges, the --out checks and
atomic writes, printed progress, and the model's analysis on the chosen device."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from kgbias_core.errors import (
    BAD_NUMBER,
    CSV_OUT_IS_DIRECTORY,
    CSV_WRITE_FAILED,
    OUT_NOT_A_FILE,
    DataError,
)
from kgbias_core.jobs import Progress

#: Bounds of the numeric flags: beyond them a run is a typo or an out-of-memory error, not a request.
MAX_DIM, MAX_EPOCHS, MAX_BATCH, MAX_SEED, MAX_BOOTSTRAP = 4096, 100_000, 1 << 24, 2**32 - 1, 100_000
#: Adam's step above 10 or a margin/L2 above these diverge to inf (float32) long before a use; Add's c above
#: 100 asks for 100 dummies per missing person (Du uses 0.5), far past the cap.
MAX_LR, MAX_L2, MAX_MARGIN, MAX_DAMPING, MAX_C = 10.0, 1e6, 1e4, 1e12, 100.0
#: Frozen negatives per training triple: each one adds a [n, 3] table and a distance per triple and step;
#: 256 is far past any published TransE setting (1-10 in sLCWA training) and still fits FB15k-237 in memory.
MAX_NEGATIVES = 256


class Parser(argparse.ArgumentParser):
    """argparse with the CLI's error format: one line naming the command and the flag, exit 2.

    No abbreviated flags: ``--mode warm`` (a retired option) must not silently mean ``--model warm``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {self.prog}: {message} (see {self.prog} --help)\n")


def integer(low: int, high: int | None = None) -> Callable[[str], int]:
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


def real(low: float, *, above: bool, high: float | None = None) -> Callable[[str], float]:
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


def shard(text: str) -> tuple[int, int]:
    """An argparse type: ``I/N`` -> (I, N) with 0 <= I < N, the I-th of N processes that split a list between them
    (the benches' ``--shard``: every N-th item from the I-th)."""
    try:
        i, n = (int(part) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected I/N, e.g. 0/8") from None
    if not 0 <= i < n:
        raise argparse.ArgumentTypeError(f"{text!r}: I must be 0 to N - 1")
    return i, n


def csv_out(text: str) -> str:
    """An argparse type for a CSV/HTML/JSON --out: refused at once when it names a directory, a device,
    a FIFO or a socket (:func:`_output_file`)."""
    try:
        output_file(text)
    except DataError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def output_file(out: str) -> Path:
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


class PrintedProgress(Progress):
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


def negative_seed_flag(command: argparse.ArgumentParser) -> None:
    """``--negative-seed``: for a model without frozen negatives (imported), influence re-draws one per triple."""
    command.add_argument("--negative-seed", type=integer(0), default=None, metavar="S",
                         help="a model without frozen negatives (imported): re-draw one negative per training "
                              "triple from seed S (default 0); influence is then approximate")


def device_flag(command: argparse.ArgumentParser) -> None:
    """``--device``, on every command: where the model is moved on load and every measure runs (and where
    ``train`` trains). Resolved once in :func:`main` (:func:`kgbias_core.device.resolve_device`)."""
    from kgbias_core.device import DEVICE_CHOICES, DEVICE_ENV

    command.add_argument("--device", default=None, metavar="DEVICE",
                         help=f"{DEVICE_CHOICES} (default: ${DEVICE_ENV}, else auto: a GPU where PyTorch sees one); "
                              "retrains run on the kind of device their base model was trained on")


def leaf_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """The parsers that run a command (``validate influence``, not ``validate``), for flags every command has."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                found.extend(leaf_parsers(sub))
    return found or [parser]


def graph_flags(command: argparse.ArgumentParser, flag: str, meaning: str) -> None:
    """The graph flags of ``train`` and ``import``: a data set name or a user graph with its schema."""
    command.add_argument(flag, required=True, help=f"{meaning}: fb15k237 | fb13 | synthetic | PATH (TSV or directory)")
    command.add_argument("--data-dir", help="data directory (default: $KGBIAS_DATA_DIR or ./data)")
    command.add_argument("--schema", help="schema TOML/JSON for a user graph")
    command.add_argument("--names", help="id<TAB>name file for a user graph")


def load_analysis(path: str, negative_seed: int | None = None, *, device: Any):
    """The model's analysis, its tensors moved once to ``device`` (``args.device``, resolved in :func:`main`);
    ``negative_seed``: the re-draw seed of a model without frozen negatives (default 0)."""
    from kgbias_core.analysis import ModelAnalysis
    from kgbias_core.embeddings.store import load_model
    from kgbias_core.influence.negatives import DEFAULT_NEGATIVE_SEED

    seed = DEFAULT_NEGATIVE_SEED if negative_seed is None else negative_seed
    return ModelAnalysis(load_model(path, device=device), negative_seed=seed)


def print_negatives(analysis, occupation: str | None, *, negative_seed: int | None, exact_too: bool = True) -> None:
    """Say which negatives influence used (``exact_too``: also when they are the frozen ones); for re-drawn
    ones, the occupation's stability over 3 seeds (METHODS §4)."""
    if analysis.model.config.model != "transe":
        return  # no influence at all: nothing to label
    negatives = analysis.negatives
    if exact_too or not negatives.exact:
        print(f"influence: {negatives.label}")
    if analysis.model.config.distance != "squared_l2":
        from kgbias_core.influence.closed_form import APPROXIMATE_FOR_DISTANCE

        print(APPROXIMATE_FOR_DISTANCE.format(distance=analysis.model.config.distance))
    if negatives.exact:
        if negative_seed is not None:
            print("--negative-seed not used: the model has the frozen negatives it was trained with")
    elif occupation is not None:
        print(f"stability: {analysis.redraw_stability(occupation).summary()}")


def write_csv(frame, out: str) -> None:
    """Write ``frame`` as the CSV ``out`` (atomically, :func:`_write_text`)."""
    write_text(frame.to_csv(index=False), out)
    print(f"wrote {len(frame)} rows to {out}")


def write_text(text: str, out: str) -> None:
    """Write ``text`` to ``out`` through a temporary sibling, so a failed write (full disk) leaves a
    previous file of that name as it was."""
    path = output_file(out)  # checked again: the flag's check ran before the (long) computation
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise DataError(CSV_WRITE_FAILED.format(path=path, reason=exc.strerror or exc)) from None


def append_row(row: dict, out: str | Path) -> None:
    """Append one record to a resumable CSV of results (an experiment's runs, one row per finished measurement),
    under the file's own header: its columns in the header's order, one the record lacks left empty. A plain
    append writes the record's own order and shifted every later value of a run file whose header had meanwhile
    gained a ``name`` column (``whatif_accuracy.py --summarize-only`` beside a running bench, 2026-11-29); a record
    with a column the header lacks is refused for the same reason. A new file gets the record's header."""
    import pandas as pd

    path = Path(out)
    frame = pd.DataFrame([row])
    if not path.exists() or path.stat().st_size == 0:
        path.parent.mkdir(parents=True, exist_ok=True)
        frame.to_csv(path, index=False)
        return
    header = pd.read_csv(path, nrows=0).columns.tolist()
    extra = [column for column in frame.columns if column not in header]
    if extra:
        raise ValueError(f"{path}: the row has columns its header lacks ({', '.join(extra)}): start a new file")
    frame.reindex(columns=header).to_csv(path, mode="a", header=False, index=False)


#: A seed flag's type: an integer from 0 to 2^32 - 1.
SEED = integer(0, MAX_SEED)
