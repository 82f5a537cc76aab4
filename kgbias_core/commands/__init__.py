"""The commands of ``kgbias``: one module per command (or per few close ones), each with its parser next to its
handler (``register(commands)`` adds its subparsers; ``handler`` runs one). :mod:`kgbias_core.cli` builds the
top parser from :data:`COMMANDS` and runs the chosen handler."""

from kgbias_core.commands import (
    audit,
    calibrate,
    data,
    debias,
    findings,
    imports,
    link_prediction,
    measures,
    plan,
    prepare,
    report,
    train,
    validate,
)

#: In the order ``kgbias --help`` lists them.
COMMANDS = (train, imports, measures, link_prediction, report, audit, data, prepare, debias, plan, calibrate,
            findings, validate)
