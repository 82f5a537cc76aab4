"""``python -m kgbias_core``: the same CLI as the ``kgbias`` console script (:mod:`kgbias_core.cli`)."""

from kgbias_core.cli import entry_point

entry_point()
