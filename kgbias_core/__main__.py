"""``python -m kgbias_core``: see :mod:`kgbias_core.cli`."""

import sys

from kgbias_core.cli import main

sys.exit(main())
