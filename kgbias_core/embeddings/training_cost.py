"""What a retrain would cost on this machine, and the refusal of one that does not fit.

A what-if, a noise band, a calibration or an influence check retrains TransE from scratch, once or many
times. At 20M triples (5.7M entities, dim 64) one epoch on a 2-core CPU takes hours, a retrain weeks:
such work is refused before anything starts (no model loaded twice, no epoch run), with the estimate
and the limit, instead of being started and left to run for hours.
"""

from __future__ import annotations

import os

from kgbias_core.errors import RETRAIN_TOO_LARGE, TooLargeError

#: Seconds per parameter update of one optimiser step. An epoch makes n_triples / batch_size Adam steps,
#: each over every embedding row ((E + R) x d, dense), which dominates at scale: measured 66.9 s for one
#: epoch of 990,880 triples, 283k entities, dim 64, batch 4096 on 1 loaded core of this machine (1.5e-8),
#: and FB15k-237 (272k triples, 14.5k entities, dim 200, batch 8000) trains at 0.749 s/epoch on 2 cores
#: (README "Training speed": 0.75e-8). The faster figure is used: nothing feasible is refused.
SECONDS_PER_UPDATE = 0.75e-8
#: The longest retraining job started without asking (2 hours); ``$KGBIAS_MAX_RETRAIN_SECONDS`` overrides it.
MAX_RETRAIN_SECONDS = 7200.0
LIMIT_ENV = "KGBIAS_MAX_RETRAIN_SECONDS"


def retrain_seconds(*, n_triples: int, n_parameters: int, batch_size: int, epochs: int, retrains: int = 1,
                    optimizer: str = "adam", dim: int | None = None) -> float:
    """Estimated wall time of ``retrains`` full retrains: SECONDS_PER_UPDATE x steps per epoch
    (ceil(triples / batch)) x parameters updated per step x epochs x retrains.

    Dense Adam updates every parameter ((E + R) x d) each step. Row-wise Adam (``optimizer="sparse_adam"``)
    updates only the rows the batch touches: at most 6 per triple (head, relation, tail of it and of its
    negative), so at most 6 x batch x ``dim`` parameters (an upper bound; the same per-parameter rate,
    not yet measured for the sparse kernels).
    """
    steps = -(-n_triples // batch_size)
    per_step = n_parameters
    if optimizer == "sparse_adam" and dim is not None:
        per_step = min(n_parameters, 6 * batch_size * dim)
    return SECONDS_PER_UPDATE * steps * per_step * epochs * retrains


def retrain_limit() -> float:
    """The limit in seconds: ``$KGBIAS_MAX_RETRAIN_SECONDS`` where set, else :data:`MAX_RETRAIN_SECONDS`."""
    text = os.environ.get(LIMIT_ENV)
    return float(text) if text else MAX_RETRAIN_SECONDS


def check_retrain_fits(*, what: str, n_triples: int, n_entities: int, n_relations: int, dim: int, batch_size: int,
                       epochs: int, retrains: int = 1, optimizer: str = "adam") -> float:
    """The estimate of :func:`retrain_seconds`, or :class:`TooLargeError` (:data:`RETRAIN_TOO_LARGE`) where it
    exceeds :func:`retrain_limit`. Called before any work, by every task that retrains."""
    seconds = retrain_seconds(n_triples=n_triples, n_parameters=(n_entities + n_relations) * dim,
                              batch_size=batch_size, epochs=epochs, retrains=retrains, optimizer=optimizer, dim=dim)
    limit = retrain_limit()
    if seconds > limit:
        raise TooLargeError(RETRAIN_TOO_LARGE.format(
            what=what, retrains=retrains, n_triples=n_triples, n_entities=n_entities, epochs=epochs, dim=dim,
            hours=seconds / 3600, rate=SECONDS_PER_UPDATE, limit_hours=limit / 3600, env=LIMIT_ENV))
    return seconds
