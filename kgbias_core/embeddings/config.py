"""Training configuration and the influence calibration, saved as JSON beside every model's weights."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

#: Models trained by name through PyKEEN's pipeline (TransE has its own deterministic loop).
PYKEEN_MODELS = ("distmult", "complex", "rotate")
MODELS = ("transe", *PYKEEN_MODELS)
#: Kinds only an import makes, never trained here: ``pbg`` scores with PyTorch-BigGraph's own formula
#: (:mod:`kgbias_core.embeddings.pbg_score`) where no PyKEEN model scores as PBG does.
IMPORTED_MODELS = ("pbg",)
#: TransE distances psi(h, r, t) = d(h + r - t): kgbias trains with squared L2 (the objective influence
#: differentiates, METHODS §2); embeddings imported from other engines keep their own (L1, L2).
DISTANCES = ("squared_l2", "l2", "l1", "pseudo_huber")
#: The distances an import may name: those of other engines (pseudo_huber is kgbias's own, trained here only).
IMPORT_DISTANCES = ("squared_l2", "l2", "l1")
#: delta of the pseudo_huber distance sum_i (sqrt(v_i^2 + delta^2) - delta) (kgbias_core.embeddings.objective):
#: the residual coordinate below which it is quadratic, above which it is L1. Fixed, not a setting, so that every
#: model named pseudo_huber has one psi; chosen on FB15k-237 (docs/results/default_models.md).
PSEUDO_HUBER_DELTA = 0.05
#: TrainConfig.corruption: which side of a training triple its frozen negatives replace. uniform: half the head, half
#: the tail (every model before 2026-12-06); bernoulli: the head with probability tph / (tph + hpt) of the triple's
#: relation (Wang et al. 2014, "bern"; kgbias_core.embeddings.training.bernoulli_head_probability).
CORRUPTIONS = ("uniform", "bernoulli")
#: TrainConfig.negative_entities: which entity a frozen negative puts on the corrupted side. uniform: any entity of the
#: graph, equally likely (every model before 2026-12-07); degree: an entity with probability proportional to its count
#: in the training triples to the power DEGREE_EXPONENT (word2vec's unigram^0.75, Mikolov et al. 2013), so that the
#: hubs a uniform draw almost never names (a gender, a country) become negatives of the queries they do not answer.
#: On FB13 (l2 80, eight negatives) uniform negatives are mostly persons, whose rows sit near the origin, and every
#: query of a relation got one hub as its top answer (docs/results/default_models.md).
NEGATIVE_ENTITIES = ("uniform", "degree")
#: The power of an entity's training degree in the ``degree`` draw (word2vec's; not fitted on these graphs).
DEGREE_EXPONENT = 0.75
#: Formats of embeddings trained elsewhere that :mod:`kgbias_core.embeddings.importers` reads.
IMPORT_FORMATS = ("npy", "pykeen", "dglke", "pbg")
#: ``import --format random``: no files read, random untrained vectors (graphs too large to train here).
RANDOM_FORMAT = "random"
#: Seeds of a graph's default model that ``kgbias prepare`` trains as one family (issue 24: at least 3 for a
#: seed band; :mod:`kgbias_core.families`).
DEFAULT_FAMILY_SEEDS = 3


@dataclass(frozen=True)
class TrainConfig:
    """How an embedding is trained. Defaults reach a stable optimum on FB15k-237 (METHODS §2)."""

    model: str = "transe"  # transe | distmult | complex | rotate; an import may also make pbg
    dim: int = 100  # embedding dimension
    epochs: int = 80  # passes over the training triples (80: random-removal noise <= 0.01 on FB15k-237)
    batch_size: int = 4096  # triples per optimiser step
    lr: float = 5e-3  # Adam learning rate at the start of the cosine schedule
    lr_min: float = 5e-5  # learning rate at the end (annealing to convergence)
    margin: float = 2.0  # gamma of the margin loss [gamma + psi(z) - psi(z')]_+
    l2: float = 20.0  # L2 coefficient in summed-loss units; Adam weight_decay = l2 / |G|
    damping: float | None = None  # lambda of METHODS §3; None means 2|G|/|E|
    seed: int = 0  # initialisation, frozen negatives and the batch permutation stream
    # TransE's psi of h + r - t (DISTANCES). L1 / L2: imported models, and the retrains that check predictions on
    # them (training honours it); every model kgbias trains by default uses squared L2.
    distance: str = "squared_l2"
    # Weight w of the fairness term (w/2) sum_o B_gr(o)^2 added to the objective (summed-loss units, as l2);
    # 0 = plain TransE. Only kgbias_core.whatif.regularised trains with it (it supplies the groups).
    fairness_weight: float = 0.0
    # adam: dense Adam over every row each step (the default; every stored model). sparse_adam: row-wise
    # updates of the rows a batch touches, the same objective (kgbias_core.embeddings.training.train_transe).
    optimizer: str = "adam"
    # K frozen negatives per training triple (half corrupt the head, half the tail), drawn once from ``seed``;
    # the margin part is the mean of the K hinges (kgbias_core.embeddings.objective). 1 here keeps the fingerprint
    # of every model stored before K existed; FB15k-237's and FB13's defaults set 8 (DEFAULT_TRAIN_CONFIGS).
    negatives_per_triple: int = 1
    # Which side the frozen negatives corrupt (CORRUPTIONS). uniform keeps the fingerprint of every model stored
    # before the field existed; bernoulli draws fewer false negatives on one-to-many relations. Influence is exact
    # either way: it reads the stored negatives, however they were drawn.
    corruption: str = "uniform"
    # Which entity replaces the corrupted side (NEGATIVE_ENTITIES): uniform keeps the fingerprint of every model stored
    # before the field existed; degree draws by training degree^0.75. Influence is exact either way, as above.
    negative_entities: str = "uniform"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        # Uniform is every model's draw before these fields existed: their config.json, result files and keys stay.
        for key in ("corruption", "negative_entities"):
            if data[key] == "uniform":
                del data[key]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


#: Defaults per built-in data set: the real graphs as METHODS §2; the synthetic graph trains in seconds.
DEFAULT_TRAIN_CONFIGS: dict[str, TrainConfig] = {
    # Eight frozen negatives per triple (issue 24's trade-off curve, docs/results/default_models.md): pooled MRR
    # 0.124 -> 0.194, influence r >= 0.998 against masked retraining (0.992 with one), the closed form 0.62-0.82 of
    # the retrained change (0.22-0.45), random-removal noise unchanged; a training costs about 4x one negative's.
    "fb15k237": TrainConfig(negatives_per_triple=8),
    # Star-shaped FB13 leaves 0.8% of margins active under FB15k-237's settings and influence misses
    # retraining; l2 80 keeps 10.6% active and 160 epochs converge (docs/results). Eight frozen negatives since
    # 2026-12-06: the what-if lab's refined prediction held 28 of 29 held-out sets at half-width 0.25 (one negative:
    # not offered, the step's interval 1.22), r >= 0.992 against masked retraining (one: 0.999), link prediction in
    # the one-negative family's seed range, a median B_gr seed band of 0.29 (one: 0.44); a training costs about
    # 1.3x one negative's on one CPU thread.
    "fb13": TrainConfig(epochs=160, l2=80.0, negatives_per_triple=8),
    "synthetic": TrainConfig(dim=64, epochs=60, batch_size=1024, lr=1e-2, l2=30.0),
}


def default_train_config(dataset: str) -> TrainConfig:
    """The default for a data set name; user graphs get the synthetic graph's small-graph default."""
    return DEFAULT_TRAIN_CONFIGS.get(dataset, DEFAULT_TRAIN_CONFIGS["synthetic"])


@dataclass(frozen=True)
class Calibration:
    """The scale actual/predicted with its spread over the occupations it was fitted on (METHODS §4).

    Fitted by :func:`kgbias_core.tasks.calibration.calibrate`, used by :func:`kgbias_core.influence.scale.predict`;
    it lives here, beside :class:`TrainConfig`, because the store saves it in config.json.
    """

    scale: float  # least squares through the origin over all runs
    low: float  # smallest per-occupation scale
    high: float  # largest per-occupation scale
    occupations: tuple[str, ...]  # labels of the occupations fitted on
    per_occupation: tuple[float, ...]  # their scales, in the order of ``occupations``

    def to_dict(self) -> dict[str, Any]:
        return {"scale": self.scale, "low": self.low, "high": self.high, "occupations": list(self.occupations),
                "per_occupation": list(self.per_occupation)}

    @classmethod
    def from_dict(cls, data: Any) -> Calibration:
        """A calibration read from a config file; anything malformed is a ValueError saying what."""

        def number(value: Any) -> bool:
            return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)

        problem = None
        if not isinstance(data, Mapping):
            problem = f"must be a JSON object, found {type(data).__name__}"
        elif not all(number(data.get(key)) for key in ("scale", "low", "high")):
            problem = "'scale', 'low' and 'high' must be finite numbers"
        elif not data["low"] <= data["scale"] <= data["high"]:
            problem = "needs 'low' <= 'scale' <= 'high'"
        elif not isinstance(data.get("occupations"), list) or not all(isinstance(o, str) for o in data["occupations"]):
            problem = "'occupations' must be a list of labels"
        elif (not isinstance(scales := data.get("per_occupation"), list) or len(scales) != len(data["occupations"])
              or not all(number(v) for v in scales)):
            problem = "'per_occupation' must hold one finite number per occupation"
        if problem is not None:
            raise ValueError(problem)
        return cls(scale=float(data["scale"]), low=float(data["low"]), high=float(data["high"]),
                   occupations=tuple(data["occupations"]),
                   per_occupation=tuple(float(v) for v in data["per_occupation"]))
