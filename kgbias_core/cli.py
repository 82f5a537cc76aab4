"""Command line: ``kgbias <command> ...`` (or ``python -m kgbias_core``) for batch users and for checking.

Each command parses its flags and runs a task of :mod:`kgbias_core.tasks` or builds a table, so the
command line and the pages compute the same way. Every command writes a CSV (or a model
directory, a JSON file, an HTML report) and prints progress on stderr; a user error prints one line
naming the problem and exits with status 2, never a traceback. The commands live in
:mod:`kgbias_core.commands`, each parser next to its handler; this module builds the top parser and runs one.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from kgbias_core.commands import COMMANDS
from kgbias_core.commands.common import Parser, device_flag
from kgbias_core.commands.common import leaf_parsers as _leaf_parsers
from kgbias_core.errors import INTERRUPTED, PATH_REFUSED, UNEXPECTED_ERROR, KGBiasError

#: Set to 1 to see the traceback of an unexpected error instead of its one line.
DEBUG_ENV = "KGBIAS_DEBUG"


def build_parser() -> argparse.ArgumentParser:
    """The top parser: every command's subparsers (:data:`kgbias_core.commands.COMMANDS`), each with ``--device``."""
    parser = Parser(prog="kgbias", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(commands)
    for leaf in _leaf_parsers(parser):
        device_flag(leaf)
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
