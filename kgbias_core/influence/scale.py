"""The calibrated scale of the closed-form influence and the interval it gives a prediction (METHODS §4).

The closed form predicts the change of B_gr up to a factor: actual ≈ s · sum_{z in S} delta_z. A
:class:`~kgbias_core.embeddings.config.Calibration` (fitted by :mod:`kgbias_core.influence.calibration`)
holds the pooled s and the range of s over the occupations it was fitted on; :func:`predict` turns a raw
influence sum into what a model can honestly say: the raw sum only (uncalibrated: sign and ranking),
a point (a single stored scale), or a point with the interval sorted(raw · low, raw · high).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# The record lives beside TrainConfig (it is stored in config.json); re-exported here for its readers.
from kgbias_core.embeddings.config import Calibration

__all__ = ["Calibration", "PredictedChange", "predict", "through_origin"]


@dataclass(frozen=True)
class PredictedChange:
    """A predicted change of B_gr: the raw influence sum, and its calibrated point and interval if any."""

    raw: float  # sum_{z in S} delta_z (Du Eq. 3): the sign and the ranking hold without calibration
    point: float | None = None  # scale · raw; None for an uncalibrated model
    low: float | None = None  # the interval from the spread of the per-occupation scales
    high: float | None = None  # (None for a single-scale calibration: it has no spread)

    @property
    def calibrated(self) -> bool:
        return self.point is not None

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None

    def summary(self, digits: int = 4) -> str:
        """One plain sentence: the point with its interval, or why there is none (CLI, lab, reports)."""
        raw = f"Σ δ_z = {self.raw:+.{digits}f}"
        if self.point is None:
            return f"uncalibrated: {raw} gives the sign and the ranking only, not the size"
        if not self.has_interval:
            return (f"{self.point:+.{digits}f} (one stored scale, no interval: calibrate on several occupations "
                    f"for a range; {raw})")
        return (f"{self.point:+.{digits}f}, range {self.low:+.{digits}f} to {self.high:+.{digits}f} "
                f"(the scale's spread over the calibration occupations; {raw})")


def predict(raw: float, *, scale: float | None, calibration: Calibration | None = None) -> PredictedChange:
    """The change ``raw`` (sum of delta_z) as a model with ``scale`` and ``calibration`` predicts it.

    interval = [min(raw·low, raw·high), max(raw·low, raw·high)]: the scales' range, whatever raw's sign.
    """
    if calibration is not None:
        ends = sorted((raw * calibration.low, raw * calibration.high))
        return PredictedChange(raw=raw, point=raw * calibration.scale, low=ends[0], high=ends[1])
    if scale is not None:
        return PredictedChange(raw=raw, point=raw * scale)
    return PredictedChange(raw=raw)


def through_origin(predicted: np.ndarray, actual: np.ndarray) -> float:
    """Least-squares slope of actual on predicted through the origin (NaN when predicted is all 0)."""
    denominator = float(predicted @ predicted)
    return float(predicted @ actual) / denominator if denominator > 0 else float("nan")
