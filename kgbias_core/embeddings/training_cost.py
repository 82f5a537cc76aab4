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
#: (docs/results/speed.md: 0.75e-8). The faster figure is used. On FB13 it still overstates a retrain about twofold
#: (13 retrains of the default estimated at 2.5 h, run in 1 h 40 min beside other work on 2026-12-05), so a refusal
#: takes the lower of this and the shown estimate (:func:`check_retrain_fits`).
SECONDS_PER_UPDATE = 0.75e-8
#: The longest retraining job started without asking (2 hours); ``$KGBIAS_MAX_RETRAIN_SECONDS`` overrides it.
MAX_RETRAIN_SECONDS = 7200.0
LIMIT_ENV = "KGBIAS_MAX_RETRAIN_SECONDS"


def retrain_seconds(*, n_triples: int, n_parameters: int, batch_size: int, epochs: int, retrains: int = 1,
                    optimizer: str = "adam", dim: int | None = None, negatives: int = 1) -> float:
    """Estimated wall time of ``retrains`` full retrains: SECONDS_PER_UPDATE x steps per epoch
    (ceil(triples / batch)) x parameters updated per step x epochs x retrains.

    Dense Adam updates every parameter ((E + R) x d) each step. Row-wise Adam (``optimizer="sparse_adam"``)
    updates only the rows the batch touches: at most 3 + 3K per triple (head, relation, tail of it and of its
    K = ``negatives`` negatives), so at most (3 + 3K) x batch x ``dim`` parameters (an upper bound; the same
    per-parameter rate, not yet measured for the sparse kernels).
    """
    steps = -(-n_triples // batch_size)
    per_step = n_parameters
    if optimizer == "sparse_adam" and dim is not None:
        per_step = min(n_parameters, (3 + 3 * negatives) * batch_size * dim)
    return SECONDS_PER_UPDATE * steps * per_step * epochs * retrains


def retrain_limit() -> float:
    """The limit in seconds: ``$KGBIAS_MAX_RETRAIN_SECONDS`` where set, else :data:`MAX_RETRAIN_SECONDS`."""
    text = os.environ.get(LIMIT_ENV)
    return float(text) if text else MAX_RETRAIN_SECONDS


def check_retrain_fits(*, what: str, n_triples: int, n_entities: int, n_relations: int, dim: int, batch_size: int,
                       epochs: int, retrains: int = 1, optimizer: str = "adam", negatives: int = 1,
                       distance: str = "squared_l2") -> float:
    """The lower of :func:`retrain_seconds` and :func:`estimated_seconds`, or :class:`TooLargeError`
    (:data:`RETRAIN_TOO_LARGE`) where it exceeds :func:`retrain_limit`. Called before any work, by every task that
    retrains. The lower one, because a job offered with the shown estimate under the limit (the lab's calibration
    of FB13: 1.4 h) must not then refuse itself by the other (2.5 h); and a job that fitted before still fits."""
    seconds = min(
        retrain_seconds(n_triples=n_triples, n_parameters=(n_entities + n_relations) * dim, batch_size=batch_size,
                        epochs=epochs, retrains=retrains, optimizer=optimizer, dim=dim, negatives=negatives),
        estimated_seconds(n_triples=n_triples, n_entities=n_entities, n_relations=n_relations, dim=dim,
                          batch_size=batch_size, epochs=epochs, retrains=retrains, negatives=negatives,
                          distance=distance))
    limit = retrain_limit()
    if seconds > limit:
        raise TooLargeError(RETRAIN_TOO_LARGE.format(
            what=what, retrains=retrains, n_triples=n_triples, n_entities=n_entities, epochs=epochs, dim=dim,
            hours=seconds / 3600, limit_hours=limit / 3600, env=LIMIT_ENV))
    return seconds


#: The two constants of the estimate shown before work starts (:func:`estimated_seconds`), fitted on three
#: trainings of the defaults on 2 cores: FB15k-237 60 s (80 epochs x 67 steps, 1.47M parameters; README
#: "Training speed"), FB13 377 s (160 x 78 steps, 7.5M parameters; README, 2 threads) and the synthetic graph
#: 1.39 s for 10 of its 60 epochs (20 steps, 0.40M parameters; 8.4 s in all, predicted 9.3 s). Per parameter
#: update this is half :data:`SECONDS_PER_UPDATE`, which stays the refusal's (generous) rate.
SHOWN_SECONDS_PER_UPDATE = 3.2e-9
#: Fixed seconds per optimiser step besides the parameter update (batch scoring, Python, the optimiser's
#: bookkeeping), which dominates on small graphs.
SECONDS_PER_STEP = 6.5e-3
#: Seconds per extra frozen negative scored, per triple of the batch and per dimension: K negatives score K - 1
#: more (h + r - t) rows per triple than the one the constants above were fitted on. Fitted on FB15k-237's default
#: with eight negatives: 191 s on 2 cores against 60 s with one (5,360 steps of 4,096 triples, dimension 100; a
#: short test run beside it), 131 s / (5,360 x 7 x 4,096 x 100) = 8.5e-9.
SECONDS_PER_NEGATIVE_SCORE = 8.5e-9


#: A whole training's time with each distance against squared L2's, which the constants above were fitted on.
#: bench/bench_training_distances.py (FB15k-237's default, eight negatives, one thread, the distances alternated):
#: pseudo-Huber 5.23 s an epoch against 3.92 (1.33; its square root per coordinate, forward and back), L2 3.92 and
#: L1 3.72 (1.00 and 0.95, taken as 1); two full FB15k-237 trainings of the same session gave pseudo-Huber 1.34
#: (706 s against 527 s, each beside other work).
DISTANCE_FACTORS = {"squared_l2": 1.0, "l2": 1.0, "l1": 1.0, "pseudo_huber": 1.33}


def estimated_seconds(*, n_triples: int, n_entities: int, n_relations: int, dim: int, batch_size: int, epochs: int,
                      retrains: float = 1, negatives: int = 1, distance: str = "squared_l2") -> float:
    """Wall time to show before work is started: per step, :data:`SECONDS_PER_STEP` plus
    :data:`SHOWN_SECONDS_PER_UPDATE` per parameter ((E + R) x d) plus :data:`SECONDS_PER_NEGATIVE_SCORE` per extra
    negative scored ((K - 1) x batch x d, K = ``negatives``), times steps (ceil(triples / batch) x epochs x
    retrains), times the ``distance``'s :data:`DISTANCE_FACTORS` (1 for a name it does not hold). Shown (and
    used to decide whether follow-up work may start unasked); a refusal (:func:`check_retrain_fits`) takes the lower
    of this and :func:`retrain_seconds`."""
    steps = -(-n_triples // batch_size) * epochs * retrains
    extra = max(negatives - 1, 0) * min(batch_size, n_triples) * dim
    return DISTANCE_FACTORS.get(distance, 1.0) * steps * (
        SECONDS_PER_STEP + SHOWN_SECONDS_PER_UPDATE * (n_entities + n_relations) * dim
        + SECONDS_PER_NEGATIVE_SCORE * extra)
