"""What a retrain would cost on this machine, and the refusal of one that does not fit.

A what-if, a noise band, a calibration or an influence check retrains TransE from scratch, once or many
times. At 20M triples one retrain on a 2-core CPU takes most of an hour and a calibration half a day:
such work is refused before anything starts (no model loaded twice, no epoch run), with the estimate
and the limit, instead of being started and left to run for hours.
"""

from __future__ import annotations

import os

from kgbias_core.errors import RETRAIN_TOO_LARGE, TooLargeError

#: Seconds of one epoch per million training triples and per 100 dimensions, measured on this project's
#: 2-core CPU: FB15k-237 (272,115 triples, dim 200) trains at 0.749 s/epoch (bench/bench_training.py,
#: README "Training speed"), i.e. 0.749 / 0.272 / 2. Time grows linearly in triples and in dimension.
SECONDS_PER_EPOCH = 1.376
#: The longest retraining job started without asking (2 hours); ``$KGBIAS_MAX_RETRAIN_SECONDS`` overrides it.
MAX_RETRAIN_SECONDS = 7200.0
LIMIT_ENV = "KGBIAS_MAX_RETRAIN_SECONDS"


def retrain_seconds(*, n_triples: int, epochs: int, dim: int, retrains: int = 1) -> float:
    """Estimated wall time of ``retrains`` full retrains: SECONDS_PER_EPOCH x (triples / 1M) x (dim / 100) x epochs."""
    return SECONDS_PER_EPOCH * n_triples / 1e6 * dim / 100 * epochs * retrains


def retrain_limit() -> float:
    """The limit in seconds: ``$KGBIAS_MAX_RETRAIN_SECONDS`` where set, else :data:`MAX_RETRAIN_SECONDS`."""
    text = os.environ.get(LIMIT_ENV)
    return float(text) if text else MAX_RETRAIN_SECONDS


def check_retrain_fits(*, what: str, n_triples: int, epochs: int, dim: int, retrains: int = 1) -> float:
    """The estimate of :func:`retrain_seconds`, or :class:`TooLargeError` (:data:`RETRAIN_TOO_LARGE`) where it
    exceeds :func:`retrain_limit`. Called before any work, by every task that retrains."""
    seconds = retrain_seconds(n_triples=n_triples, epochs=epochs, dim=dim, retrains=retrains)
    limit = retrain_limit()
    if seconds > limit:
        raise TooLargeError(RETRAIN_TOO_LARGE.format(
            what=what, retrains=retrains, n_triples=n_triples, epochs=epochs, dim=dim, hours=seconds / 3600,
            rate=SECONDS_PER_EPOCH, limit_hours=limit / 3600, env=LIMIT_ENV))
    return seconds
